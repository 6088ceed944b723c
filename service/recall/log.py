"""The recall log (RECALL_LOG_ENABLED, off by default): one document per recall in
`{prefix}-recall-log` — timings per stage, counts and filters, for latency dashboards and for
seeing what agents ask of the store. The query text only with RECALL_LOG_INCLUDE_QUERY.

Off the request path: `submit` builds the document and offers it to a bounded queue (full: the
document is dropped and counted, never waited for); one thread writes what has queued in one bulk
request, and prunes documents older than RECALL_LOG_RETENTION_DAYS once an hour
(delete_by_query, in the engine's background). A failed write is logged and counted; a recall
never waits for it nor fails because of it.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from service.errors import EngramError
from service.recall.request import RecallRequest
from service.storage.recall_log import RecallLogStore
from service.clock.instants import iso

log = logging.getLogger("engram.recall_log")

BATCH_MAX = 500  # documents per bulk request
PRUNE_EVERY_SECONDS = 3600.0


def _count(block: Any, key: str) -> int:
    value = block.get(key) if isinstance(block, Mapping) else None
    return int(value) if isinstance(value, (int, float)) else 0


def recall_document(req: RecallRequest, body: Mapping[str, Any], *, at: datetime, request_id: str | None,
                    include_query: bool = False) -> dict[str, Any]:
    """The log document of one recall: what was asked (filters), what it cost (timings) and what came
    back (counts). Pure. Without `include_query`, only whether there was a query and its length."""
    texts = [q for q in (req.queries or ([req.query] if req.query else [])) if q and q != "*"]
    window = req.window
    timings = body.get("timings") if isinstance(body.get("timings"), Mapping) else {}
    vector = body.get("vector_search") if isinstance(body.get("vector_search"), Mapping) else {}
    query: dict[str, Any] = {
        "present": bool(texts), "chars": sum(len(t) for t in texts), "count": len(texts),
        "embedding_given": req.embedding is not None, "vector_matched": bool(vector.get("matched")),
    }
    if include_query and texts:
        query["text"] = texts
    return {
        "timestamp": iso(at),
        "bank": req.bank,
        "request_id": request_id,
        "query_time_ms": body.get("query_time_ms"),
        "timings": {k: float(v) for k, v in timings.items() if isinstance(v, (int, float))},
        "query": query,
        "counts": {
            "results": _count(body, "count"),
            "limit": req.limit,
            "dedup_removed": _count(body, "dedup_removed"),
            "score_filtered": _count(body.get("score_filter"), "filtered_count"),
            "state_suppressed": _count(body.get("state_filter"), "suppressed_count"),
            "state_replaced": _count(body.get("state_filter"), "replacement_count"),
            "relation_expanded": _count(body.get("expansion"), "expanded_count"),
            "entity_expanded": _count(body.get("entity_expansion"), "expanded_count"),
        },
        "filters": {
            "tags": list(req.tags), "exclude_tags": list(req.exclude_tags), "tag_mode": req.tag_mode, "tag_match": req.tag_match,
            "time_start": iso(window.start) if window and window.start else None,
            "time_end": iso(window.end) if window and window.end else None,
            "as_of": iso(req.as_of) if req.as_of else None,
            "sort": req.sort, "state_mode": req.state_mode, "recency_bias": req.recency_bias, "scoring_profile": req.scoring_profile,
            "min_score": req.min_score, "expand_relations": req.expand_relations, "expand_entities": req.expand_entities,
            "context_types": list(req.context_types), "context_tags": list(req.context_tags), "language": req.language,
        },
    }


class RecallLog:
    def __init__(self, store: RecallLogStore, *, queue_size: int = 1_000, include_query: bool = False, retention_days: int = 30):
        self.store = store
        self.include_query = include_query
        self.retention_days = retention_days
        self._queue: queue.Queue[dict] = queue.Queue(maxsize=queue_size)
        self._lock = threading.Lock()
        self._counts = {"written": 0, "dropped": 0, "failed": 0}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_prune = 0.0

    # --- the request side ----------------------------------------------------------------------
    def submit(self, req: RecallRequest, body: Mapping[str, Any], request_id: str | None = None) -> None:
        """Never blocks, never raises into the recall."""
        try:
            doc = recall_document(req, body, at=datetime.now(timezone.utc), request_id=request_id, include_query=self.include_query)
            self._queue.put_nowait(doc)
        except queue.Full:
            self._add("dropped")
        except Exception:  # noqa: BLE001 - a log document is never worth failing a recall
            self._add("dropped")
            log.warning("recall log document could not be built; dropped", exc_info=True)

    @property
    def queue_size(self) -> int:
        return self._queue.qsize()

    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def _add(self, outcome: str, n: int = 1) -> None:
        with self._lock:
            self._counts[outcome] += n

    # --- the writer ------------------------------------------------------------------------------
    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="recall-log", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Write what has queued (within `timeout`), then end the thread."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until every submitted document was written or given up on (tests, shutdown)."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.01)
        return not self._queue.unfinished_tasks

    def _run(self) -> None:
        while not (self._stop.is_set() and self._queue.empty()):
            try:
                first = self._queue.get(timeout=0.5)
            except queue.Empty:
                self._maybe_prune()
                continue
            batch = [first]
            while len(batch) < BATCH_MAX:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            try:
                self.write(batch)
            finally:
                for _ in batch:
                    self._queue.task_done()
            self._maybe_prune()

    def write(self, docs: list[dict]) -> None:
        try:
            outcomes = self.store.write(docs)
        except EngramError as exc:
            self._add("failed", len(docs))
            log.warning("recall log: %d documents not written: %s", len(docs), exc.message)
            return
        failed = [o for o in outcomes if o is not None]
        self._add("written", len(docs) - len(failed))
        if failed:
            self._add("failed", len(failed))
            log.warning("recall log: %d documents not written: %s", len(failed), failed[0])

    def _maybe_prune(self) -> None:
        now = time.monotonic()
        if not self.retention_days or now - self._last_prune < PRUNE_EVERY_SECONDS:
            return
        self._last_prune = now
        try:
            self.prune()
        except EngramError as exc:
            log.warning("recall log: pruning documents older than %d days failed: %s", self.retention_days, exc.message)

    def prune(self) -> None:
        """Delete documents older than the retention, as an engine task (nothing waits for it)."""
        self.store.prune(self.retention_days)
