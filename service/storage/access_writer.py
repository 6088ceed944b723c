"""Access tracking off the request path: a recall hands the accesses it records to one thread of the
process, which writes them (MemoryStore.touch) while the recall answers.

Run as a background task of the response instead, each recording recall cost the service a second
thread-pool round trip and the event loop's work around it, and the next request on the same
connection waited for the write (on fresh stores, where every page is due, queueing took ~0.7 ms of
CPU and ~1 ms of p50 off a recall: docs/perf). Here a recall only queues; what queued while a write was under way goes out in the next
one bulk request (many recalls at once: one write for several of them). `touch` keeps its rule
(stale as stored, not recorded by this process within the resolution): the writes of one thread
are in order, so a memory queued twice is written once. Best effort, as access tracking always was:
when the engine falls behind, recalls beyond QUEUE_SIZE waiting ones are not queued (counted in
`dropped`; the memories' next recall records them).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Mapping
from datetime import datetime
from typing import NamedTuple

from service.storage.memories import MemoryStore, Version

log = logging.getLogger("engram.access")

# Recalls whose accesses may wait (each holds its page's vectors: ~10 x 384 floats); and how many of
# them one write takes at most.
QUEUE_SIZE = 1024
BATCH_SIZE = 64


class Access(NamedTuple):
    bank: str
    seen: Mapping[str, str | None]  # {id: stored last_accessed}
    now: datetime
    versions: Mapping[str, Version]  # vectors and versions the recall's page read brought


class AccessWriter:
    """One writer thread per store, started with it; `close` writes what is queued and stops it."""

    def __init__(self, store: MemoryStore, queue_size: int = QUEUE_SIZE):
        self.store = store
        self.queue_size = queue_size
        self.dropped = 0  # recalls whose accesses found the queue full
        self._queue: queue.SimpleQueue[Access | None] = queue.SimpleQueue()
        self._pending = 0  # recalls' accesses submitted and not yet written
        self._settled = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="engram-access-writer", daemon=True)
        self._thread.start()

    def submit(self, bank: str, seen: Mapping[str, str | None], now: datetime, versions: Mapping[str, Version]) -> None:
        """Queue a recall's accesses (what MemoryStore.touch takes); returns at once."""
        with self._settled:
            if self._pending >= self.queue_size:
                self.dropped += 1
                return
            self._pending += 1
        self._queue.put(Access(bank, seen, now, versions))

    @property
    def pending(self) -> int:
        return self._pending

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until everything submitted so far is written (or has failed, logged); False on timeout."""
        with self._settled:
            return self._settled.wait_for(lambda: self._pending == 0, timeout)

    def close(self, timeout: float = 30.0) -> None:
        self.flush(timeout)
        self._queue.put(None)
        self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch, stop = [first], False
            while not stop and len(batch) < BATCH_SIZE:  # what queued meanwhile goes in the same write
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stop = True
                else:
                    batch.append(more)
            try:
                self._write(batch)
            except Exception:  # noqa: BLE001 - access tracking never stops: the next recall's write may succeed
                log.warning("recording %d recalls' accesses failed", len(batch), exc_info=True)
            finally:
                with self._settled:
                    self._pending -= len(batch)
                    self._settled.notify_all()
            if stop:
                return

    def _write(self, batch: list[Access]) -> None:
        """One touch per bank: the union of the accesses, at the latest recall's time, with the versions
        read last (a later page read is as new or newer)."""
        banks: dict[str, tuple[dict, dict]] = {}
        latest: dict[str, datetime] = {}
        for a in batch:
            seen, versions = banks.setdefault(a.bank, ({}, {}))
            seen.update(a.seen)
            versions.update(a.versions)
            latest[a.bank] = max(latest.get(a.bank, a.now), a.now)
        for bank, (seen, versions) in banks.items():
            self.store.touch(bank, seen, latest[bank], versions)
