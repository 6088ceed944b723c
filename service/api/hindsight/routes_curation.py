"""Hindsight's curation routes (hindsight-client's `update_memory` and `get_observation_history`):

    PATCH .../memories/{memory_id}           edit, invalidate or restore one memory
    GET   .../memories/{memory_id}/history   its revisions, its supersession chain, an observation's sources

The mapping onto the one store and the history's entries: service/api/hindsight/curation.py. The
PATCH goes through the MemoryWriter (validation, re-embedding, the guarded read-modify-write).
"""

from __future__ import annotations

from fastapi import APIRouter

from service.api.deps import SettingsDep, StoreDep, WriterDep
from service.api.hindsight import curation as CU
from service.api.hindsight import views
from service.api.hindsight.deps import ReadBank, WriteBank
from service.api.hindsight.errors import HINDSIGHT_ERRORS, HindsightRoute
from service.clock.instants import utcnow
from service.errors import NotFound
from service.memory.limits import check_text
from service.memory.models import valid_id
from service.recall.queries import observation_sources
from service.storage.memories import MemoryStore
from service.stream.emit import EmitDep

router = APIRouter(route_class=HindsightRoute, tags=["hindsight: memories"], responses=HINDSIGHT_ERRORS)
BANK = "/v1/default/banks/{bank_id}"
# Memories a history reads around the one asked for (each hop of the chain is one request).
MAX_CHAIN = 100


def _unit(store: MemoryStore, bank: str, memory_id: str) -> dict:
    source = store.get(bank, memory_id) if valid_id(memory_id) else None
    if source is None:
        raise NotFound(f"Memory unit '{memory_id}' not found")
    return source


@router.patch(f"{BANK}/memories/{{memory_id}}", summary="Curate memory unit", operation_id="update_memory")
def update_memory(memory_id: str, body: CU.UpdateMemoryBody, scope: WriteBank, writer: WriterDep, settings: SettingsDep, emit: EmitDep) -> dict:
    """Edit a memory's text, context, date, fact type or entities, and/or invalidate (`state:
    invalidated`: left out of recall, kept for audit) or restore it (`valid`). Answers the memory unit
    as GET .../memories/{memory_id} shows it, and `warnings` for what could not be kept."""
    now = utcnow()
    if body.text is not None:
        check_text(body.text, "text", max_chars=settings.limits.content_chars)  # named as Hindsight names it
    plan, warnings = CU.plan_of(body, now)
    if not valid_id(memory_id):
        raise NotFound(f"Memory unit '{memory_id}' not found")
    req = CU.CurationUpdate.of(plan, memory_id)
    try:
        updated = writer.update(scope.bank, memory_id, req)
    except NotFound:
        raise NotFound(f"Memory unit '{memory_id}' not found") from None
    emit.updated(memory_id, updated, req)
    out = views.list_item(memory_id, updated, now)
    return {**out, "warnings": warnings} if warnings else out


@router.get(f"{BANK}/memories/{{memory_id}}/history", summary="Get memory history", operation_id="get_observation_history")
def memory_history(memory_id: str, scope: ReadBank, store: StoreDep) -> list[dict]:
    """The memory's changes, newest first: each curation PATCH (what changed, from what to what, why),
    each supersession of the chain it is part of (with both texts), and for an observation its
    creation with the source facts it was made from."""
    source = _unit(store, scope.bank, memory_id)
    chain = _chain(store, scope.bank, memory_id, source)
    sources = observation_sources(dict(source)) if CU.is_observation(source) else []
    facts = store.get_many(scope.bank, sources[:MAX_CHAIN]) if sources else {}
    return CU.history(memory_id, source, chain, facts, utcnow())


def _chain(store: MemoryStore, bank: str, memory_id: str, source: dict) -> dict[str, dict]:
    """The memory and those its supersession chain reaches, forward (what replaced it) and backward
    (what it replaced), CU.MAX_HOPS each way and MAX_CHAIN in all."""
    docs = {memory_id: source}
    frontier = [memory_id]
    for _ in range(CU.MAX_HOPS):  # forward: by id
        wanted = list(dict.fromkeys(link["by"] for mid in frontier for link in CU.supersession_links(docs[mid]) if link["by"] not in docs))
        found = store.get_many(bank, wanted[: MAX_CHAIN - len(docs)]) if wanted and len(docs) < MAX_CHAIN else {}
        docs.update(found)
        frontier = list(found)
        if not frontier:
            break
    frontier = [memory_id]
    for _ in range(CU.MAX_HOPS):  # backward: the memories whose supersessions name the frontier
        if len(docs) >= MAX_CHAIN:
            break
        hits = store.search(CU.predecessors_body(bank, frontier, MAX_CHAIN - len(docs)))["hits"]["hits"]
        found = {h["_id"]: h["_source"] for h in hits if h["_id"] not in docs}
        docs.update(found)
        frontier = list(found)
        if not frontier:
            break
    return docs
