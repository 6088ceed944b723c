"""Hindsight's memory routes: retain, list, get, delete, tags; reflect answers 501 (it needs a
language model). Writes go through the MemoryWriter (validation, ids, the EmitDep hooks)."""

from __future__ import annotations

import uuid
from typing import Literal

from fastapi import APIRouter, Query

from service.api.hindsight import queries as HQ
from service.api.hindsight import retain as R
from service.api.hindsight import views
from service.api.deps import SettingsDep, StoreDep, WriterDep
from service.api.hindsight.deps import OperationsDep, ReadBank, RegistryDep, WriteBank
from service.api.hindsight.operations import store_retained
from service.api.hindsight.errors import HINDSIGHT_ERRORS, HindsightError, HindsightRoute
from service.api.hindsight.models import HindsightDeleteResponse, RetainBody, RetainResponse, TagsMatch
from service.storage.bank_queries import bank_tags_page
from service.errors import BadRequest, NotFound
from service.memory.models import valid_id
from service.stream.emit import EmitDep
from service.clock.instants import instant_param, utcnow
from service.memory.limits import check_text

router = APIRouter(route_class=HindsightRoute, tags=["hindsight: memories"], responses=HINDSIGHT_ERRORS)
BANK = "/v1/default/banks/{bank_id}"
# GET .../memories/list pages through the engine's result window (index.max_result_window).
MAX_WINDOW = 10_000
# GET .../tags aggregates at most this many distinct tags of a bank.
MAX_TAGS = 10_000
# Memories one retain request may make (items x chunks): each is embedded before the answer.
MAX_RETAINED = 2_000


def _check_item_strings(body: RetainBody) -> None:
    for i, item in enumerate(body.items):
        where = f"items[{i}]."
        for name in ("context", "document_id", "strategy"):
            value = getattr(item, name)
            if value is not None:
                check_text(value, where + name)
        for j, entity in enumerate(item.entities or ()):
            check_text(entity.text, f"{where}entities[{j}].text")
            if entity.type is not None:
                check_text(entity.type, f"{where}entities[{j}].type")


@router.post(f"{BANK}/memories", response_model=RetainResponse, response_model_exclude_none=True, summary="Retain memories", operation_id="retain_memories")
def retain(body: RetainBody, scope: WriteBank, registry: RegistryDep, writer: WriterDep, store: StoreDep, settings: SettingsDep,
           emit: EmitDep, operations: OperationsDep) -> dict:
    """Each item is stored as given (long ones in chunks), classified world / experience by rules;
    with `async: true` the request is kept as an operation (GET .../operations/{operation_id}), the
    answer comes once it is stored, and the memories are stored right after."""
    _check_item_strings(body)
    profile = registry.profile(scope.bank)
    chunk_chars = (profile.setting("retain_chunk_size") if profile else None) or settings.hindsight_retain_chunk_chars
    appended = R.append_documents(body)
    next_index = R.parse_max_chunk(store.search(R.max_chunk_body(scope.bank, appended))) if appended else {}
    operation_id = body.operation_id or str(uuid.uuid4())
    plan_body = body.model_copy(update={"operation_id": operation_id})
    plan = R.plan_retain(plan_body, scope.bank, chunk_chars, next_index)
    if len(plan.memories) > MAX_RETAINED:
        raise BadRequest(f"this request makes {len(plan.memories)} memories ({chunk_chars}-character chunks); at most {MAX_RETAINED} per request: split it")
    for i, memory in enumerate(plan.memories):  # every item checked before anything is written
        writer.validate(memory, f"items[{i}].", content=memory.content)
    if plan.memories and profile is None:
        registry.ensure(scope.bank, utcnow())  # the first write registers the bank
    if body.async_:
        # Stored in the engine before the answer: a crash after it loses nothing (resumed at start-up).
        operations.submit(scope.bank, operation_id, plan_body, chunk_chars, next_index, len(plan.memories))
        return {"success": True, "bank_id": scope.bank, "items_count": len(body.items), "async": True, "operation_id": operation_id}
    ids = store_retained(writer, store, scope.bank, body, plan, emit) if plan.memories else []
    return {"success": True, "bank_id": scope.bank, "items_count": len(body.items), "async": False, "memory_ids": ids}


@router.get(f"{BANK}/memories/list", summary="List memory units", operation_id="list_memories")
def list_memories(
    scope: ReadBank, store: StoreDep,
    type: Literal["world", "experience", "observation"] | None = Query(None, description="Fact type"),
    q: str | None = Query(None, max_length=500, description="Words of the text or context (case-insensitive, the last one as a prefix)"),
    consolidation_state: str | None = Query(None, max_length=50, description="Accepted; consolidation here keeps no per-memory state"),
    state: Literal["valid", "invalidated"] | None = Query(None, description="invalidated: archived or superseded"),
    document_id: str | None = Query(None, max_length=512),
    entity_id: str | None = Query(None, max_length=300),
    tags: list[str] | None = Query(None, max_length=200),
    tags_match: TagsMatch = Query("any"),
    time_field: Literal["created_at", "updated_at", "mentioned_at", "occurred_start", "occurred_end"] | None = Query(None),
    start_date: str | None = Query(None, max_length=64, description="ISO 8601, inclusive"),
    end_date: str | None = Query(None, max_length=64, description="ISO 8601, exclusive"),
    limit: int = Query(100, ge=0, le=1000),
    offset: int = Query(0, ge=0),
) -> dict:
    """Most recent first; `total` counts every match."""
    if offset + limit > MAX_WINDOW:
        raise BadRequest(f"offset + limit is at most {MAX_WINDOW}; narrow the listing (type, tags, a time window)")
    for name, value in (("q", q), ("document_id", document_id), ("entity_id", entity_id), *(("tags[]", t) for t in tags or ())):
        if value is not None:
            check_text(value, name)
    query, sort = HQ.list_query(
        scope.bank, fact_type=type, q=q, document_id=document_id, tags=tags or (), tags_match=tags_match,
        time_field=time_field, start=instant_param("start_date", start_date), end=instant_param("end_date", end_date), state=state, entity_id=entity_id,
    )
    rows, total = store.page(query, sort, size=limit, offset=offset) if limit else ([], store.count(query))
    return {"items": [views.list_item(mid, source) for mid, source in rows], "total": total, "limit": limit, "offset": offset}


@router.get(f"{BANK}/memories/{{memory_id}}", summary="Get memory unit", operation_id="get_memory")
def get_memory(memory_id: str, scope: ReadBank, store: StoreDep) -> dict:
    source = store.get(scope.bank, memory_id) if valid_id(memory_id) else None
    if source is None:
        raise NotFound(f"Memory unit '{memory_id}' not found")
    return views.list_item(memory_id, source)


@router.delete(f"{BANK}/memories/{{memory_id}}", response_model=HindsightDeleteResponse, summary="Delete memory unit", operation_id="delete_memory")
def delete_memory(memory_id: str, scope: WriteBank, writer: WriterDep, emit: EmitDep) -> dict:
    """The memory, its edges and the supersessions it caused (as AutoMem's DELETE /memory/{id})."""
    writer.delete(scope.bank, memory_id)
    emit.deleted(memory_id)
    return {"success": True, "message": f"Memory unit '{memory_id}' deleted", "deleted_count": 1}


@router.get(f"{BANK}/tags", summary="List tags", operation_id="list_tags")
def list_tags(
    scope: ReadBank, registry: RegistryDep,
    q: str | None = Query(None, max_length=500, description="Wildcard pattern ('user:*', '*-admin'); case-insensitive"),
    source: Literal["memories", "mental_models"] = Query("memories", description="mental_models: none are kept here"),
    limit: int = Query(100, ge=0, le=MAX_TAGS), offset: int = Query(0, ge=0),
) -> dict:
    """The bank's caller tags (not the entity tags enrichment derives) with their memory counts."""
    if q is not None:
        check_text(q, "q")
    buckets = registry.tags(scope.bank, MAX_TAGS) if source == "memories" else []
    items, total = bank_tags_page(buckets, q, limit, offset)
    return {"items": items, "total": total, "limit": limit, "offset": offset}


@router.post(f"{BANK}/reflect", status_code=501, summary="Reflect (needs a language model)", operation_id="reflect")
def reflect(scope: ReadBank) -> dict:
    raise HindsightError(
        "reflect needs a language model to write its answer, and none is configured here: use POST "
        f"/v1/default/banks/{scope.bank}/memories/recall and answer from its results",
        status_code=501,
    )
