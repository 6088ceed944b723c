"""What follows a successful operation: one stream event, one operational log line, and for writes
the enrichment queue.

Routes take an `EmitDep` (made per request, so it knows when the request started) and call one
method after the operation succeeded; a request that fails validation or the write never reaches
it, so failures emit nothing (spec 003: "Failed validation (4xx) does not emit").
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from fastapi import Depends, Request

from service.memory.codec import ENRICHMENT_INPUTS
from service.stream import payloads as P
from service.stream.bus import EventBus

log = logging.getLogger("engram.api")


class Emitter:
    def __init__(self, bus: EventBus | None, enrichment: Any = None, observability: Any = None, request: Request | None = None):
        self.bus = bus
        self.request = request  # its state.bank (set when the route resolved its bank) scopes the events
        self.enrichment = enrichment
        self.observability = observability  # recall metrics and the recall log (service/observability)
        self.started = time.perf_counter()

    def enrich(self, ids: Sequence[str | None]) -> None:
        """Queue written memories for enrichment (a no-op when the worker is off: they stay pending in
        the engine and the next worker picks them up)."""
        if self.enrichment is not None and self.enrichment.running:
            self.enrichment.enqueue([i for i in ids if i])

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def publish(self, event_type: str, data: dict[str, Any]) -> None:
        if self.bus is not None:
            bank = getattr(self.request.state, "bank", None) if self.request is not None else None
            self.bus.publish(event_type, data, bank=bank)

    # --- memory writes ------------------------------------------------------------------------
    def stored(self, prepared: Any, req: Any) -> None:
        """POST /memory: `prepared` is the writer's Prepared (memory_id, doc), `req` the MemoryCreate."""
        elapsed = self.elapsed()
        status = "provided" if getattr(req, "embedding", None) is not None else "generated"
        log.info("memory_stored", extra=P.store_log(prepared.doc, prepared.memory_id, elapsed, status))
        self.publish("memory.store", P.store_event(prepared.doc, prepared.memory_id, elapsed))
        self.enrich([prepared.memory_id])

    def stored_batch(self, prepared: Sequence[Any], errors: Sequence[str | None]) -> None:
        elapsed = self.elapsed()
        stored = [(p.memory_id, p.doc) for p, err in zip(prepared, errors) if not err]
        log.info("batch_stored", extra=P.batch_log(len(prepared), len(stored), elapsed))
        if stored:
            self.publish("memory.store", P.batch_event(stored, elapsed))
            self.enrich([mid for mid, _ in stored])

    def updated(self, memory_id: str, memory: Mapping[str, Any], req: Any) -> None:
        fields = sorted(req.model_dump(exclude_unset=True)) if hasattr(req, "model_dump") else []
        log.info("memory_updated", extra={"memory_id": memory_id, "fields": fields, "latency_ms": P.ms(self.elapsed()), "storage_status": "updated"})
        self.publish("memory.update", P.update_event(memory_id, memory, fields))
        if not ENRICHMENT_INPUTS.isdisjoint(fields):  # the write marked it too (codec.enrichment_after_edit): this is the fast path
            self.enrich([memory_id])

    def deleted(self, memory_id: str) -> None:
        log.info("memory_deleted", extra={"memory_id": memory_id, "latency_ms": P.ms(self.elapsed()), "storage_status": "deleted"})
        self.publish("memory.delete", P.delete_event(memory_id))

    def deleted_by_tag(self, tags: Sequence[str], count: int, edges: int = 0) -> None:
        log.info("memories_deleted_by_tag", extra={"count": count, "tags_count": len(tags), "edges_deleted": edges, "latency_ms": P.ms(self.elapsed())})
        self.publish("memory.delete", P.delete_by_tag_event(tags, count))

    # --- graph ----------------------------------------------------------------------------------
    def associated(self, body: Mapping[str, Any]) -> None:
        log.info("association_created", extra={"relation_type": body.get("relation_type"), "strength": body.get("strength"), "latency_ms": P.ms(self.elapsed())})
        self.publish("memory.associate", P.associate_event(body))

    def associated_batch(self, body: Mapping[str, Any]) -> None:
        data = P.associate_batch_event(body)
        log.info("associations_stored", extra={"count": data["count"], "failed_count": data["failed_count"], "latency_ms": P.ms(self.elapsed())})
        if data["count"]:
            self.publish("memory.associate", data)

    # --- recall -------------------------------------------------------------------------------
    def recalled(self, params: Any, body: Mapping[str, Any]) -> None:
        query, limit, tags = getattr(params, "query", None), getattr(params, "limit", 0), getattr(params, "tags", [])
        log.info("recall_complete", extra=P.recall_log(query, limit, body, tags))
        self.publish("memory.recall", P.recall_event(query, limit, body, tags))
        if self.observability is not None:
            self.observability.observe_recall(params, body)


async def _emitter(request: Request) -> Emitter:
    state = request.app.state
    return Emitter(getattr(state, "events", None), getattr(state, "enrichment", None), getattr(state, "observability", None), request)


EmitDep = Annotated[Emitter, Depends(_emitter)]
