"""Hindsight's async retain as durable operations: submitted (stored in the engine) before the 200,
run by one background thread, resumed at start-up, their status served by routes_operations.py.

An operation stores what it replays (the retain body with its operation id, the chunk size and the
append offsets it was planned with), so a run resumed after a crash plans exactly the memories the
first run planned; their ids derive from (bank, operation id or document id, index), so an item the
first run stored is overwritten in place, never stored twice. An engine outage during a run puts the
operation back to pending and tries again after a pause (RETRY_PAUSES); an error of the request's
own (one the writer refuses) fails it with that message.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from service.api.hindsight import retain as R
from service.api.hindsight.models import RetainBody
from service.clock.instants import iso, utcnow
from service.errors import EngineUnavailable, EngramError, NotFound
from service.storage.memories import MemoryStore
from service.storage.operations import COMPLETED, FAILED, PENDING, PROCESSING, OperationStore
from service.stream.emit import Emitter
from service.writes.writer import MemoryWriter

log = logging.getLogger("engram.hindsight")
RETAIN = "retain"
# Pauses (seconds) before each further try of a run the engine interrupted; then it waits for a restart.
RETRY_PAUSES = (1.0, 5.0, 30.0, 120.0)


def store_retained(writer: MemoryWriter, store: MemoryStore, bank: str, body: RetainBody, plan: R.Plan, emit: Emitter) -> list[str]:
    """Write the planned memories in one batch, then delete the chunks replaced documents no longer
    have (through the writer, one by one: a replaced document rarely loses many). Returns the stored ids."""
    prepared, errors = writer.create_batch(bank, plan.memories)
    emit.stored_batch(prepared, errors)
    failed = [(i, e) for i, e in enumerate(errors) if e]
    if failed:
        i, reason = failed[0]
        raise EngineUnavailable(f"{len(failed)} of {len(prepared)} memories were not stored (first: memory {i}: {reason}); retrying the same request is safe")
    for doc, ids in R.replaced_documents(plan, body).items():
        for stale in store.ids_matching(R.stale_chunks_query(bank, doc, ids)):
            try:
                writer.delete(bank, stale)  # with its edges and the supersessions it caused
            except NotFound:
                continue  # deleted meanwhile
            emit.deleted(stale)
    return [p.memory_id for p in prepared]


def retain_request(body: RetainBody, chunk_chars: int, next_index: dict[str, int]) -> dict[str, Any]:
    """What an operation replays (JSON: the body as validated, so a replay validates the same)."""
    return {"body": body.model_dump(mode="json", by_alias=True, exclude_none=True), "chunk_chars": chunk_chars, "next_index": next_index}


class RetainOperations:
    """Submit, run and resume async retains; one worker thread per app."""

    def __init__(self, operations: OperationStore, writer: MemoryWriter, store: MemoryStore, emitter: Callable[[str], Emitter]):
        self.operations = operations
        self.writer = writer
        self.store = store
        self.emitter = emitter  # bank -> an Emitter whose events are of that bank
        self._queue: queue.Queue[tuple[str, str, int] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    # --- lifecycle --------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the worker; it first queues every operation a stop or a crash left unfinished."""
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="hindsight-operations", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """After the operation in hand (an unfinished one stays pending in the engine for the next start)."""
        self._stop.set()
        self._queue.put(None)
        if self._thread is not None:
            self._thread.join(timeout)
        self._thread = None

    def idle(self) -> bool:
        return self._queue.unfinished_tasks == 0

    # --- operations -------------------------------------------------------------------------------
    def submit(self, bank: str, operation_id: str, body: RetainBody, chunk_chars: int, next_index: dict[str, int], memories: int) -> None:
        """Store the operation durably (the caller answers 200 after this returns), then queue it."""
        now = iso(utcnow())
        self.operations.put({
            "bank": bank, "operation_id": operation_id, "task_type": RETAIN, "status": PENDING, "items_count": len(body.items),
            "memories_count": memories, "retry_count": 0, "error_message": None, "created_at": now, "updated_at": now,
            "completed_at": None, "request": retain_request(body, chunk_chars, next_index),
        })
        self._queue.put((bank, operation_id, 0))

    def resume(self) -> int:
        """Queue the operations left pending or processing (of every bank); returns how many."""
        n = 0
        for doc in self.operations.unfinished():
            self._queue.put((doc["bank"], doc["operation_id"], int(doc.get("retry_count") or 0)))
            n += 1
        if n:
            log.info("resuming %d unfinished Hindsight operations", n)
        return n

    def _run(self) -> None:
        try:
            self.resume()
        except EngineUnavailable as exc:  # the engine away at start: they stay pending for the next start
            log.warning("could not resume unfinished operations: %s", exc.message)
        while not self._stop.is_set():
            item = self._queue.get()
            try:
                if item is not None and not self._stop.is_set():
                    self.run(*item)
            finally:
                self._queue.task_done()

    def run(self, bank: str, operation_id: str, attempt: int = 0) -> None:
        """Run one operation to its end (or back to pending, after an engine outage)."""
        try:
            doc = self.operations.get(bank, operation_id)
            if doc is None or doc.get("status") not in (PENDING, PROCESSING):
                return  # done meanwhile (another replica), or its bank was deleted
            self.operations.update(bank, operation_id, {"status": PROCESSING, "updated_at": iso(utcnow()), "retry_count": attempt})
            stored = self._retain(bank, doc["request"])
        except EngineUnavailable as exc:
            self._interrupted(bank, operation_id, attempt, exc.message)
            return
        except EngramError as exc:
            self._record(bank, operation_id, {"status": FAILED, "error_message": exc.message})
            return
        except Exception as exc:  # noqa: BLE001 - recorded on the operation, and logged
            log.exception("async retain %s into bank %s failed", operation_id, bank)
            self._record(bank, operation_id, {"status": FAILED, "error_message": f"internal error: {type(exc).__name__}"})
            return
        self._record(bank, operation_id, {"status": COMPLETED, "memories_count": len(stored), "error_message": None})

    def _retain(self, bank: str, request: dict[str, Any]) -> list[str]:
        body = RetainBody.model_validate(request["body"])
        plan = R.plan_retain(body, bank, int(request["chunk_chars"]), request.get("next_index") or {})
        return store_retained(self.writer, self.store, bank, body, plan, self.emitter(bank)) if plan.memories else []

    def _interrupted(self, bank: str, operation_id: str, attempt: int, message: str) -> None:
        log.warning("async retain %s into bank %s interrupted (try %d): %s", operation_id, bank, attempt + 1, message)
        try:
            self.operations.update(bank, operation_id, {"status": PENDING, "error_message": message, "updated_at": iso(utcnow())})
        except EngineUnavailable:
            pass  # still "processing" in the engine: the next start resumes it
        if attempt < len(RETRY_PAUSES):
            timer = threading.Timer(RETRY_PAUSES[attempt], lambda: self._queue.put((bank, operation_id, attempt + 1)))
            timer.daemon = True
            timer.start()

    def _record(self, bank: str, operation_id: str, fields: dict[str, Any]) -> None:
        now = iso(utcnow())
        try:
            self.operations.update(bank, operation_id, {**fields, "updated_at": now, "completed_at": now})
        except EngineUnavailable as exc:  # the memories are stored (or refused); a resumed run ends the same way
            log.warning("could not record the end of operation %s: %s", operation_id, exc.message)


def bank_emitter(events: Any, enrichment: Any, observability: Any) -> Callable[[str], Emitter]:
    """Emitters for runs outside a request: their events carry the operation's bank."""
    return lambda bank: Emitter(events, enrichment, observability, request=SimpleNamespace(state=SimpleNamespace(bank=bank)))  # type: ignore[arg-type]
