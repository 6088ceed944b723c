"""AutoMem's background sync worker (SYNC_AUTO_REPAIR, SYNC_CHECK_INTERVAL_SECONDS): drift repair.

AutoMem keeps its vectors in Qdrant beside the graph; its sync worker re-embeds, once an interval,
every memory that has no vector there. Here a memory's vector is a field of its document, and the
one way to lose it is an update made in the engine directly (OpenSearch Dashboards, `_update` by
hand): the index keeps vectors out of `_source`, so the re-indexed memory is stored without one and
recall's vector arm no longer finds it. /health reports such drift (`sync_status`).

At start-up (when the start-up check counted any) and then every SYNC_CHECK_INTERVAL_SECONDS, a
daemon thread counts the memories without a vector per bank (one aggregation) and re-embeds them
(`reembed` with `only_missing`): at most PAGE a bank at a time; while more remain the next check follows after a rest as long as the last
took, so a large repair uses at most about half of a core and leaves the rest to requests.
RECALL_EXCLUDED_TYPES are left out, as AutoMem's repair leaves them (spec 000 "Internal Artifact
Type Exclusion"). Vectors of another model are not drift: that re-embedding is the operator's choice
(POST /admin/reembed). A concurrent edit wins, as in any re-embedding; a failure is logged and the
next check tries again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from service.admin.reembed import reembed
from service.errors import EngramError
from service.filters import clauses as C
from service.storage.memories import MemoryStore

log = logging.getLogger("engram.sync")

PAGE = 1000  # memories re-embedded per bank and check
PAUSE_S = 1.0  # between checks while a repair is unfinished (or as long as the last check took)
MAX_BANKS = 1000  # banks repaired per check (the others at the next)


def drift_body(excluded_types: Sequence[str] = ()) -> dict:
    """Memories without a vector, not of `excluded_types`, counted per bank."""
    return {"size": 0, "track_total_hits": False, "query": {"bool": {"must_not": C.without_vector(excluded_types)}},
            "aggs": {"banks": {"terms": {"field": "bank", "size": MAX_BANKS}}}}


def drift(store: MemoryStore, excluded_types: Sequence[str] = ()) -> dict[str, int]:
    """{bank: memories without a vector}."""
    buckets = store.search(drift_body(excluded_types))["aggregations"]["banks"]["buckets"]
    return {b["key"]: int(b["doc_count"]) for b in buckets}


@dataclass
class RepairRun:
    """One check: what it found per bank, and what it re-embedded."""

    found: dict[str, int] = field(default_factory=dict)
    processed: int = 0

    @property
    def unfinished(self) -> bool:
        """A bank had more than a page and this check made progress: the next follows after PAUSE_S, not
        the interval (memories that cannot be re-embedded wait for the interval)."""
        return self.processed > 0 and any(n > PAGE for n in self.found.values())


def repair(store: MemoryStore, embedder, excluded_types: Sequence[str] = (), stop: threading.Event | None = None) -> RepairRun:
    """Re-embed up to PAGE memories without a vector in each bank that has some."""
    run = RepairRun(found=drift(store, excluded_types))
    for bank, n in sorted(run.found.items()):
        if stop is not None and stop.is_set():
            break
        log.warning("sync drift: %d memories of bank %s have no vector (updated in the engine directly?); re-embedding %d",
                    n, bank, min(n, PAGE))
        result = reembed(store, bank, embedder, limit=PAGE, only_missing=True, excluded_types=excluded_types)
        run.processed += result.processed
    return run


class VectorRepair:
    """The daemon thread: a check at once when start-up saw memories without a vector (`at_once`: the
    start-up check's count, service/admin/reembed.py warn_stale_vectors), else after the first
    interval, so a store without drift sees no background request before it; then a check every
    `interval_s` (after a rest while a repair is unfinished)."""

    def __init__(self, store: MemoryStore, embedder, *, interval_s: float, excluded_types: Sequence[str] = ()):
        self.store, self.embedder, self.interval_s, self.excluded_types = store, embedder, interval_s, tuple(excluded_types)
        self.stop_event = threading.Event()
        self.thread: threading.Thread | None = None

    def start(self, *, at_once: bool) -> None:
        self.thread = threading.Thread(target=self._run, args=(0.0 if at_once else self.interval_s,), name="engram-sync", daemon=True)
        self.thread.start()
        log.info("sync worker started (interval %ds)", self.interval_s)

    def _run(self, first_wait: float) -> None:
        wait = first_wait
        while not self.stop_event.wait(wait):
            wait, started = self.interval_s, time.monotonic()
            try:
                if repair(self.store, self.embedder, self.excluded_types, self.stop_event).unfinished:  # rest as long as the page took (at least PAUSE_S): half the time at most
                    wait = max(PAUSE_S, time.monotonic() - started)
            except EngramError as exc:
                log.warning("sync check failed: %s; the next check tries again", exc.message)
            except Exception:  # noqa: BLE001 - the worker outlives any one check
                log.exception("sync check failed; the next check tries again")

    def stop(self, timeout: float = 10.0) -> None:
        self.stop_event.set()
        if self.thread is not None:
            self.thread.join(timeout)
