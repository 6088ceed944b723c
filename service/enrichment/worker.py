"""The background enrichment worker: ENRICHMENT_WORKERS threads over a bounded in-process queue
(service/enrichment/jobs.py).

Each thread takes up to ENRICHMENT_BATCH_SIZE memories and, per batch: one search reads them
(with versions and vectors), the extractor finds entities, one _msearch finds kNN neighbours
(SIMILAR_TO), one _msearch finds each memory's neighbours in its sequence (PRECEDED_BY), one bulk
writes the memories — each guarded by the version read (if_seq_no / if_primary_term), carrying
its vector back — and one bulk writes the edges. A memory whose content changed meanwhile is not
written (its stale result is dropped) and is enriched again from the new content.

State lives on the memory (`enrichment.*`), so a restart resumes: at start-up, and whenever the
queue runs dry after an overflow, one search fetches the pending memories, oldest first. An idle
worker also looks, so that memories written by other processes are found (`_take`).

The worker serves every bank: the queue and the scans hold memories of any bank, and a batch is
enriched bank by bank — neighbours, sequences and edges only ever within the memory's own bank.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timezone
from typing import Any

from service.config import Settings
from service.enrichment import plan
from service.enrichment.edges import plan_edges, write_edges
from service.enrichment.extractor import extract_entities
from service.enrichment.gazetteer import Gazetteer, load_gazetteer
from service.enrichment.jobs import Job, JobQueue, ScanSchedule
from service.errors import EngineUnavailable
from service.observability.outage import Outage
from service.enrichment.stats import Tally, local_pipeline_status
from service.enrichment.pacing import pause_after
from service.storage.bootstrap import add_field_mapping
from service.storage.edges import EdgeStore
from service.storage.memories import MemoryStore
from service.filters.scripts import VECTOR_SCRIPT
from service.clock.instants import iso

log = logging.getLogger("engram.enrichment")

EventCallback = Callable[[str, dict], None]
# A version conflict on commit (another write landed since the read) is re-planned this often.
COMMIT_ROUNDS = 3
# A start-up / backlog scan fetches at most this many pending ids (the engine's result window).
SCAN_MAX = 10_000


def _now() -> str:
    return iso(datetime.now(timezone.utc))


def _no_event(event_type: str, data: dict) -> None:
    return None


def by_bank(subjects: Sequence[plan.Subject]) -> dict[str, list[plan.Subject]]:
    """A batch split by bank, in batch order."""
    out: dict[str, list[plan.Subject]] = {}
    for s in subjects:
        out.setdefault(s.source.get("bank") or "default", []).append(s)
    return out


class EnrichmentWorker:
    def __init__(self, settings: Settings, memories: MemoryStore, edges: EdgeStore, *,
                 gazetteer: Gazetteer | None = None, on_event: EventCallback | None = None,
                 serving: Callable[[], bool] = lambda: False):
        self.settings = settings
        self.serving = serving  # whether the API is serving clients now (service/enrichment/pacing.py)
        # Own store handles: the worker never waits for a refresh (it refreshes when it must).
        self.memories = MemoryStore(memories.client, memories.alias, refresh="false")
        self.edges = EdgeStore(edges.client, edges.alias, refresh="false")
        self.gazetteer = gazetteer
        self.on_event: EventCallback = on_event or _no_event
        self.tally = Tally()  # the stats, shared by the worker threads
        self.stats = self.tally.stats
        self.jobs = JobQueue(settings.enrichment_queue_size, on_drop=self._dropped)
        self._sequence_lock = threading.Lock()  # PRECEDED_BY planning + commit, one batch at a time
        self._dirty = False  # enrichment writes not yet visible to searches
        self.looks = ScanSchedule()  # when an idle worker scans the engine for pending memories
        self._stop = threading.Event()
        self.outage = Outage(log, what="enrichment", waiting="memories stay pending")  # the engine away: one line out, one back, back-off between
        self._mapping_pending = False  # the enrichment mapping is still to be put (the engine was away at start)
        self._threads: list[threading.Thread] = []

    # --- lifecycle ------------------------------------------------------------------------------
    def start(self) -> None:
        if self.gazetteer is None:
            self.gazetteer = load_gazetteer()
        try:
            self._ensure_mapping()
            self._mapping_pending = False
        except EngineUnavailable as exc:
            self._mapping_pending = True  # put by the first batch once the engine answers
            self.outage.failed(exc.message)
        self._stop.clear()
        self.jobs.backlog = True  # memories written while no worker ran are pending: scan for them first
        for n in range(self.settings.enrichment_workers):
            thread = threading.Thread(target=self._run, name=f"enrichment-{n}", daemon=True)
            thread.start()
            self._threads.append(thread)
        log.info("enrichment worker started: %d threads, queue %d, batch %d",
                 len(self._threads), self.settings.enrichment_queue_size, self.settings.enrichment_batch_size)

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        self.jobs.cancel_timers()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._threads = []
        log.info("enrichment worker stopped (%d queued memories stay pending in the engine)", self.jobs.size())

    @property
    def running(self) -> bool:
        return any(t.is_alive() for t in self._threads)

    def _ensure_mapping(self) -> None:
        """Indices created before enrichment existed get its fields (an additive mapping change)."""
        add_field_mapping(self.memories.client, self.memories.alias, "memories", "enrichment")

    # --- queue ----------------------------------------------------------------------------------
    def enqueue(self, ids: Iterable[str], *, forced: bool = False, attempt: int = 0, requeue: bool = False) -> int:
        """Queue memories (JobQueue.put); returns how many were queued."""
        return self.jobs.put(ids, forced=forced, attempt=attempt, requeue=requeue)

    def _dropped(self) -> None:
        self.tally.add(dropped=1)

    def scan(self, *, quick: bool = False) -> int:
        """Queue pending memories from the engine, oldest first, as many as the queue has room for
        (`quick`: plan.pending_query, else plan.start_query; see jobs.ScanSchedule)."""
        room = min(SCAN_MAX, self.jobs.room())
        if room <= 0:
            self.looks.ran(time.monotonic(), quick=True, short=False)
            return 0
        query = plan.pending_query(None) if quick else plan.start_query(None)
        body = {"size": room, "_source": False, "query": query, "sort": [{"timestamp": "asc"}, {"id": "asc"}]}
        hits = self.memories.search(body)["hits"]["hits"]
        self.jobs.backlog = len(hits) >= room
        self.looks.ran(time.monotonic(), quick=quick, short=not self.jobs.backlog)
        return self.enqueue(self.jobs.unknown(h["_id"] for h in hits))

    def _take(self) -> list[Job]:
        """The next batch; when none comes, a scan for pending memories when one is due
        (ScanSchedule: a backlog, or a few seconds have passed), and []."""
        jobs = self.jobs.take(self.settings.enrichment_batch_size, self.settings.enrichment_idle_sleep_seconds)
        due = None if jobs or self._stop.is_set() else self.looks.due(time.monotonic(), backlog=self.jobs.backlog)
        if due is not None:
            try:
                with self.outage.quiet():
                    self.scan(quick=due == "quick")
                self.outage.recovered()
            except EngineUnavailable as exc:
                self._stop.wait(self.outage.failed(exc.message))
            except Exception:  # noqa: BLE001 - try again when idle next
                log.warning("scan for pending memories failed", exc_info=True)
        return jobs

    def _run(self) -> None:
        while not self._stop.is_set():
            jobs = self._take()
            if not jobs:
                continue
            started = time.perf_counter()
            away = None
            try:
                with self.outage.quiet():
                    if self._mapping_pending:
                        self._ensure_mapping()
                        self._mapping_pending = False
                    self.process(jobs)
                self.outage.recovered()
            except EngineUnavailable as exc:
                away = exc  # not the memories' fault: they wait, their attempts unspent
            except Exception as exc:  # noqa: BLE001 - a failed batch must not end the thread
                log.exception("enrichment batch of %d failed", len(jobs))
                self._failed(jobs, exc)
            finally:
                took = time.perf_counter() - started
                self.tally.add(busy_seconds=took)
                self.jobs.done(jobs)
            if away is not None:
                for job in jobs:
                    self.jobs.put([job.memory_id], attempt=job.attempt, forced=job.forced, requeue=True)
                self._stop.wait(self.outage.failed(away.message))
                continue
            if self.serving():
                rest = pause_after(took, self.settings.enrichment_duty_while_serving)
                if rest > 0:
                    self._stop.wait(rest)
                    self.tally.add(paced_seconds=rest)

    # --- one batch ------------------------------------------------------------------------------
    def process(self, jobs: Sequence[Job]) -> None:
        for job in jobs:
            job.started = time.perf_counter()
            self.on_event("enrichment.start", {"memory_id": job.memory_id, "attempt": job.attempt + 1})
        by_id = {j.memory_id: j for j in jobs}
        subjects = self.read(list(by_id))
        todo = []
        for job in jobs:
            subject = subjects.get(job.memory_id)
            if subject is None or (not job.forced and subject.up_to_date()):
                if subject is not None and subject.source.get("updated_at") != subject.enrichment.get("source_updated_at"):
                    self._note_seen(subject)
                self._complete(job, skipped=True)
                continue
            todo.append(subject)
        if not todo:
            return
        entities = {s.id: extract_entities(s.source.get("content") or "", self.gazetteer) for s in todo}
        for bank, group in by_bank(todo).items():
            try:
                similar = self._similar(bank, group)
                with self._sequence_lock:
                    self._commit(group, by_id, entities, similar, bank)
            except Exception as exc:  # noqa: BLE001 - one bank's failure is that bank's: the others go on
                log.exception("enrichment of %d memories of a bank failed", len(group))
                self._failed([by_id[s.id] for s in group if s.id in by_id], exc)

    def read(self, ids: Sequence[str]) -> dict[str, plan.Subject]:
        found = self._read(ids)
        if len(found) < len(ids):  # written since the last refresh, or deleted
            self.memories.refresh_now()
            found.update(self._read([i for i in ids if i not in found]))
        return found

    def _read(self, ids: Sequence[str]) -> dict[str, plan.Subject]:
        if not ids:
            return {}
        hits = self.memories.search(plan.read_body(None, ids, VECTOR_SCRIPT))["hits"]["hits"]
        out = {}
        for h in hits:
            values = h.get("fields", {}).get("embedding") or [None]
            vector = values[0] if isinstance(values[0], list) else (values if values[0] is not None else None)
            out[h["_id"]] = plan.Subject(h["_id"], h["_source"], vector, h["_seq_no"], h["_primary_term"])
        return out

    def _similar(self, bank: str, subjects: Sequence[plan.Subject]) -> dict[str, list[dict]]:
        """kNN neighbours of each memory among its own bank's."""
        limit = self.settings.enrichment_similarity_limit
        with_vectors = [s for s in subjects if s.vector]
        if not limit or not with_vectors:
            return {}
        bodies = [plan.knn_body(bank, s.id, s.vector, limit + 1, self.settings.excluded_types) for s in with_vectors]
        responses = self.memories.msearch(bodies)
        threshold = self.settings.enrichment_similarity_threshold
        return {s.id: plan.similar_edges(s.id, r["hits"]["hits"], threshold, limit) for s, r in zip(with_vectors, responses)}

    def _neighbours(self, subjects: Sequence[plan.Subject], exclude: Sequence[str], bank: str) -> tuple[dict, dict]:
        placed = [s for s in subjects if s.timestamp]
        bodies = []
        for s in placed:
            bodies.append(plan.neighbour_body(bank, s.scope, s.timestamp, s.id, exclude, before=True))
            bodies.append(plan.neighbour_body(bank, s.scope, s.timestamp, s.id, exclude, before=False))
        responses = self.memories.msearch(bodies) if bodies else []
        before: dict[str, plan.Member | None] = {}
        after: dict[str, plan.Member | None] = {}
        for n, s in enumerate(placed):
            for side, resp in ((before, responses[2 * n]), (after, responses[2 * n + 1])):
                hits = resp["hits"]["hits"]
                side[s.id] = plan.Member(hits[0]["_id"], s.scope, hits[0]["_source"].get("timestamp")) if hits else None
        return before, after

    def _commit(self, subjects: list[plan.Subject], jobs: dict[str, Job], entities: dict, similar: dict, bank: str) -> None:
        if self._dirty:
            self.memories.refresh_now()  # the previous batch's scopes must be visible to this one
            self._dirty = False
        ids = [s.id for s in subjects]
        before, after = self._neighbours(subjects, ids, bank)
        members = [plan.Member(s.id, s.scope, s.timestamp) for s in subjects if s.timestamp]
        links, repoint = plan.plan_sequences(members, before, after)
        preceded = dict(links)
        committed: dict[str, plan.Subject] = {}
        pending = list(subjects)
        now = _now()
        for _ in range(COMMIT_ROUNDS):
            if not pending:
                break
            actions = []
            for s in pending:
                doc = plan.enriched_document(s, entities[s.id], now=now, attempts=jobs[s.id].attempt + 1, forced=jobs[s.id].forced,
                                             similar=len(similar.get(s.id, ())) // 2, preceded_by=preceded.get(s.id))
                if s.vector is not None:
                    doc["embedding"] = s.vector
                actions.append({"_op_type": "index", "_index": self.memories.alias, "_id": s.id, "_source": doc,
                                "if_seq_no": s.seq_no, "if_primary_term": s.primary_term})
            errors = self.memories.bulk(bank, actions, "store enrichment", refresh="false")
            self._dirty = True
            conflicted = []
            for s, error in zip(pending, errors):
                if error is None:
                    committed[s.id] = s
                elif error.conflict:
                    conflicted.append(s)
                else:
                    raise RuntimeError(f"storing enrichment of {s.id} failed: {error}")
            pending = self._replan(conflicted, jobs) if conflicted else []
        for s in pending:  # still conflicting after every round: try again later
            self._retry(jobs[s.id], "the memory kept changing while it was enriched")
        self._write_edges(bank, subjects, committed, similar, links, repoint)
        for s in committed.values():
            self.tally.add(entities=sum(len(v) for v in entities[s.id].values()), similar_edges=len(similar.get(s.id, ())),
                           preceded_edges=int(s.id in preceded))
            self._complete(jobs[s.id], skipped=False, bank=bank)

    def _replan(self, conflicted: list[plan.Subject], jobs: dict[str, Job]) -> list[plan.Subject]:
        """Another write landed since the read: same inputs -> plan again on the new version;
        changed content (or tags, scope, timestamp) -> drop the stale result and enrich again."""
        fresh = self.read([s.id for s in conflicted])
        again = []
        for s in conflicted:
            new = fresh.get(s.id)
            if new is not None and not jobs[s.id].forced and new.up_to_date():
                # The other write was this memory's enrichment, committed by another worker: done.
                self._complete(jobs.pop(s.id), skipped=True)
                continue
            if new is not None and new.fingerprint == s.fingerprint:
                self.tally.add(conflicts_replanned=1)
                again.append(plan.Subject(s.id, new.source, new.vector, new.seq_no, new.primary_term))
                continue
            self.tally.add(cancelled=1)
            job = jobs.pop(s.id)
            elapsed = int((time.perf_counter() - job.started) * 1000)
            self.on_event("enrichment.complete", {"memory_id": s.id, "success": False, "elapsed_ms": elapsed, "skipped": True, "cancelled": True})
            if new is not None:
                self._requeue(Job(s.id, 0, job.forced))
        return again

    def _write_edges(self, bank: str, subjects, committed, similar, links, repoint) -> None:
        if not committed:
            return
        taken_back = write_edges(self.memories, self.edges, bank, plan_edges(subjects, committed, similar, links, repoint), _now())
        if taken_back:
            self.tally.add(edges_taken_back=taken_back)

    def _note_seen(self, subject: plan.Subject) -> None:
        """An unchanged memory was edited since its run (an edit of other fields, importance, ..., in a
        store written before such an edit moved the run's record along: codec.enrichment_after_edit):
        remember its updated_at, or every restart would pick it up again."""
        self.memories.bulk(self._bank_of(subject.source), [{"_op_type": "update", "_index": self.memories.alias, "_id": subject.id,
                           "doc": {"enrichment": {"source_updated_at": subject.source.get("updated_at")}}}],
                           "record enrichment", refresh="false")

    def _bank_of(self, source: dict) -> str:
        """The memory's own bank: its updates carry the vector of that bank's memory."""
        return source.get("bank") or self.settings.default_bank

    def _banks_of(self, ids: Sequence[str]) -> dict[str, str]:
        """id -> bank of the stored memories among `ids`."""
        body = {"size": len(ids), "_source": ["bank"], "query": {"ids": {"values": list(ids)}}}
        hits = self.memories.search(body)["hits"]["hits"] if ids else []
        return {h["_id"]: self._bank_of(h["_source"]) for h in hits}

    # --- outcomes -------------------------------------------------------------------------------
    def _complete(self, job: Job, *, skipped: bool, bank: str | None = None) -> None:
        elapsed = int((time.perf_counter() - job.started) * 1000)
        if skipped:
            self.tally.add(processed_total=1, skipped=1)
        else:
            self.tally.add(bank, {"last_success_id": job.memory_id, "last_success_at": _now()}, processed_total=1, successes=1)
        self.on_event("enrichment.complete", {"memory_id": job.memory_id, "success": True, "elapsed_ms": elapsed, "skipped": skipped})

    def _failed(self, jobs: Sequence[Job], exc: Exception) -> None:
        for job in jobs:
            if job.started == 0.0:
                job.started = time.perf_counter()
            self._retry(job, str(exc) or type(exc).__name__)

    def _retry(self, job: Job, error: str) -> None:
        attempts = job.attempt + 1
        will_retry = attempts < self.settings.enrichment_max_attempts
        now = _now()
        self.tally.add(processed_total=1, failures=1)
        elapsed = int((time.perf_counter() - job.started) * 1000)
        self.on_event("enrichment.failed", {"memory_id": job.memory_id, "error": error[:100], "attempt": attempts,
                                            "elapsed_ms": elapsed, "will_retry": will_retry})
        try:  # the state is recorded on the memory, so a restart knows too
            found = self._read([job.memory_id]).get(job.memory_id)
            current = found.source if found is not None else None
            if current is not None:
                # The error is of this memory's bank (a batch fails bank by bank).
                self.tally.add(self._bank_of(current), {"last_error": error[:500], "last_error_at": now})
                state = plan.failure_state(current.get("enrichment"), attempts=attempts, error=error, now=now, final=not will_retry)
                self.memories.bulk(self._bank_of(current), [{"_op_type": "update", "_index": self.memories.alias, "_id": job.memory_id, "doc": {"enrichment": state}}],
                                   "record enrichment failure", refresh="false")
        except EngineUnavailable:
            pass  # the engine is what failed: the memory stays pending (the outage is logged once, in _run)
        except Exception:  # noqa: BLE001 - the memory stays pending
            log.warning("could not record the enrichment failure of %s", job.memory_id, exc_info=True)
        if will_retry:
            self._requeue(Job(job.memory_id, attempts, job.forced), delay=self.settings.enrichment_failure_backoff_seconds)
        else:
            log.error("giving up on enrichment of %s after %d attempts: %s", job.memory_id, attempts, error)

    def _requeue(self, job: Job, delay: float = 0.0) -> None:
        self.jobs.put_later(job, delay)

    # --- reporting ------------------------------------------------------------------------------
    def mark_pending(self, ids: Sequence[str]) -> None:
        """POST /enrichment/reprocess: record the request on the memories (a restart keeps it)."""
        banks = self._banks_of(ids)
        errors = []
        for bank in sorted(set(banks.values())):
            actions = [{"_op_type": "update", "_index": self.memories.alias, "_id": mid, "doc": plan.reprocess_mark()}
                       for mid in ids if banks.get(mid) == bank]
            errors += self.memories.bulk(bank, actions, "mark for enrichment", refresh="false")
        failed = [e for e in errors if e]
        if failed:
            raise RuntimeError(f"marking {len(failed)} memories for enrichment failed: {failed[0]}")

    def idle(self) -> bool:
        return self.jobs.idle()

    def queue_counts(self) -> dict[str, int]:
        """The queue and the worker's totals without an engine call (read by GET /metrics at each scrape)."""
        _, inflight = self.jobs.counts()
        totals = self.tally.totals("successes", "failures", "skipped", "cancelled", "dropped")
        return {"queue_size": self.jobs.size(), "queue_capacity": self.jobs.capacity, "inflight": inflight, **totals}

    def health(self) -> dict[str, Any]:
        """AutoMem's `enrichment` block of /health, without an engine call."""
        pending, inflight = self.jobs.counts()
        totals = self.tally.totals("successes", "failures")
        return {"status": "running" if self.running else "stopped", "queue_depth": self.jobs.size(), "pending": pending,
                "inflight": inflight, "processed": totals["successes"], "failed": totals["failures"]}

    def status(self, bank: str) -> dict[str, Any]:
        """The worker's state: its queue and totals (it serves every bank), the last success and error
        of `bank` only, `stored`: the enrichment states of `bank`'s memories, and `older_rules`: how many
        of them an older edition of the extractor's rules enriched (`engram reenrich` redoes them)."""
        pending, inflight = self.jobs.counts()
        stats = self.tally.report(bank)
        counts = plan.status_counts(self.memories.search(plan.status_counts_body(bank)))
        return {
            "status": "running" if self.running else "stopped",
            "queue_size": self.jobs.size(),
            "queue_capacity": self.jobs.capacity,
            "pending": pending,
            "inflight": inflight,
            "workers": self.settings.enrichment_workers,
            "max_attempts": self.settings.enrichment_max_attempts,
            **counts,
            "stats": stats,
            **local_pipeline_status(),
        }
