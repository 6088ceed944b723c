"""The enrichment worker's bounded in-process queue: which memories wait, which a worker thread holds,
which were forced (POST /enrichment/reprocess), and the retries waiting for their backoff.

Pure bookkeeping, no engine I/O: a full queue refuses the rest, which stay pending in the engine
until the worker's next scan (service/enrichment/worker.py) finds them; ScanSchedule says when
that is.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field


@dataclass
class Job:
    memory_id: str
    attempt: int = 0
    forced: bool = False
    started: float = field(default=0.0)


class JobQueue:
    def __init__(self, capacity: int, *, on_drop: Callable[[], None] = lambda: None):
        self._queue: queue.Queue[Job] = queue.Queue(maxsize=capacity)
        self._lock = threading.Lock()
        self._pending: set[str] = set()  # in the queue
        self._inflight: set[str] = set()  # taken by a worker thread
        self._forced: set[str] = set()
        self._timers: dict[threading.Timer, str] = {}  # a retry waiting out its backoff -> its memory
        self.on_drop = on_drop
        # Pending memories may exist in the engine beyond the queue (an overflow, or a start-up).
        self.backlog = True

    @property
    def capacity(self) -> int:
        return self._queue.maxsize

    def size(self) -> int:
        return self._queue.qsize()

    def room(self) -> int:
        return self._queue.maxsize - self._queue.qsize()

    def put(self, ids: Iterable[str], *, forced: bool = False, attempt: int = 0, requeue: bool = False) -> int:
        """Queue memories (already-queued ones once, and not while a worker holds them: a change
        during their run fails its guarded commit and re-queues them, `requeue`); a full queue leaves
        the rest pending in the engine. Returns how many were queued."""
        queued = 0
        for memory_id in ids:
            with self._lock:
                if forced:
                    self._forced.add(memory_id)
                if memory_id in self._pending or (memory_id in self._inflight and not requeue and not forced):
                    continue
                try:
                    self._queue.put_nowait(Job(memory_id, attempt, forced))
                except queue.Full:
                    self.backlog = True
                    self.on_drop()
                    continue
                self._pending.add(memory_id)
                queued += 1
        return queued

    def put_later(self, job: Job, delay: float) -> None:
        """Queue `job` again after `delay` seconds (a retry's backoff); at once when delay <= 0."""
        if delay <= 0:
            self.put([job.memory_id], forced=job.forced, attempt=job.attempt, requeue=True)
            return

        def fire() -> None:
            # Queued before it stops waiting, so that `idle` never sees neither.
            self.put([job.memory_id], forced=job.forced, attempt=job.attempt, requeue=True)
            with self._lock:
                self._timers.pop(timer, None)

        timer = threading.Timer(delay, fire)
        timer.daemon = True
        with self._lock:
            self._timers[timer] = job.memory_id
        timer.start()

    def cancel_timers(self) -> None:
        with self._lock:
            timers, self._timers = list(self._timers), {}
        for timer in timers:
            timer.cancel()

    def unknown(self, ids: Iterable[str]) -> list[str]:
        """The ids neither queued, nor held by a worker thread, nor waiting out a retry's backoff (a
        scan finds those pending too; queued early, they would skip the backoff)."""
        with self._lock:
            waiting = set(self._timers.values())
            return [i for i in ids if i not in self._pending and i not in self._inflight and i not in waiting]

    def take(self, batch_size: int, timeout: float) -> list[Job]:
        """Up to `batch_size` jobs, waiting up to `timeout` seconds for the first ([] if none came);
        they count as in flight until `done`."""
        try:
            first = self._queue.get(timeout=timeout)
        except queue.Empty:
            return []
        jobs = [first]
        while len(jobs) < batch_size:
            try:
                jobs.append(self._queue.get_nowait())
            except queue.Empty:
                break
        with self._lock:
            for job in jobs:
                self._pending.discard(job.memory_id)
                self._inflight.add(job.memory_id)
                job.forced = job.forced or job.memory_id in self._forced
                self._forced.discard(job.memory_id)
        return jobs

    def done(self, jobs: Iterable[Job]) -> None:
        with self._lock:
            for job in jobs:
                self._inflight.discard(job.memory_id)

    def idle(self) -> bool:
        """Nothing queued, in flight, or waiting out a retry's backoff (a failed batch's memories)."""
        with self._lock:
            return not self._pending and not self._inflight and not self._timers and self._queue.empty()

    def counts(self) -> tuple[int, int]:
        """(queued, in flight)."""
        with self._lock:
            return len(self._pending), len(self._inflight)


@dataclass
class ScanSchedule:
    """When an idle worker looks in the engine for pending memories: every few seconds, and at once
    while a backlog may exist (the bulk importer, `engram reenrich`, other service replicas write
    memories this process was never told about). A process's first scans are full
    (plan.start_query: a script over every enriched memory finds edits no mark records), until one
    comes back short of what it asked for; every later scan is quick (plan.pending_query: term
    lookups only), as every edit of an enrichment input now marks its memory pending in the same write."""
    every: float = 5.0
    last: float = float("-inf")
    caught_up: bool = False

    def due(self, now: float, *, backlog: bool) -> str | None:
        """"full", "quick" or None, for an idle worker at monotonic time `now`."""
        if not backlog and now - self.last < self.every:
            return None
        return "quick" if self.caught_up else "full"

    def ran(self, now: float, *, quick: bool, short: bool) -> None:
        """A scan ran at `now`; `short`: it found fewer memories than it had room for."""
        self.last = now
        if not quick and short:
            self.caught_up = True
