"""Memory CRUD and batch (spec 003: Memory). Thin: validate, call the writer, shape the answer."""

from __future__ import annotations

import logging
from typing import Annotated

import orjson
from fastapi import APIRouter, Header
from fastapi.responses import JSONResponse

from service.api.deps import ApiAuth, StoreDep, WriterDep
from service.api.responses import sanitize
from service.errors import NotFound
from service.schemas.errors import CONFLICT, ERROR_RESPONSES, NOT_FOUND
from service.schemas.memory import (
    BatchResponse, DeleteResponse, MemoryBatch, MemoryCreate, MemoryResponse, MemoryUpdate, StoreResponse, UpdateResponse,
)
from service.schemas.memory import valid_id
from service.stream.emit import EmitDep
from service.threads import FIELDS as THREAD_FIELDS
from service.writes import DEFAULT_SUPERSEDE_TYPE

router = APIRouter(dependencies=[ApiAuth], tags=["memory"])
log = logging.getLogger("engram.memory")


# Stored for the engine only: the vector, the bank, derived lookup fields, and the ranking aids
# (thread context: service/threads/; date terms: service/dateterms.py).
INTERNAL_FIELDS = frozenset({"embedding", "bank", "tags_norm", "metadata_terms", "date_terms", *THREAD_FIELDS})


def public_memory(memory_id: str, source: dict) -> dict:
    """A stored memory as clients see it; sanitised if it cannot be serialised as is (see api/responses)."""
    out = {k: v for k, v in source.items() if k not in INTERNAL_FIELDS}
    out["id"] = memory_id
    try:
        orjson.dumps(out)
    except (orjson.JSONEncodeError, TypeError):
        log.warning("memory %s holds a value that cannot be serialised as is; returned sanitised", sanitize(memory_id))
        out = sanitize(out)
    return out


IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key", max_length=200, pattern=r"^[\x21-\x7e]+$",
        description="Makes a retry safe: the memory's id derives from the key and a repeated request stores "
        "once (without a client `id`). Use a new key per logical write, e.g. a UUID.",
    ),
]


@router.post("/memory", status_code=201, response_model=StoreResponse, response_model_exclude_none=True, responses={**ERROR_RESPONSES, **NOT_FOUND, **CONFLICT})
def store_memory(req: MemoryCreate, writer: WriterDep, emit: EmitDep, idempotency_key: IdempotencyKey = None) -> StoreResponse:
    p = writer.create(req, idempotency_key)
    emit.stored(p, req)
    d = p.doc
    return StoreResponse(
        memory_id=p.memory_id, type=d["type"], confidence=d["confidence"], importance=d["importance"],
        tags=d["tags"], timestamp=d["timestamp"], warnings=p.warnings or None,
        supersedes=req.supersedes, supersede_type=(req.supersede_type or DEFAULT_SUPERSEDE_TYPE) if req.supersedes else None,
    )


@router.post(
    "/memory/batch", status_code=201, response_model=BatchResponse, response_model_exclude_none=True,
    responses={207: {"model": BatchResponse, "description": "Some items failed; `failed` names each one"}, **ERROR_RESPONSES},
)
def store_batch(req: MemoryBatch, writer: WriterDep, emit: EmitDep, idempotency_key: IdempotencyKey = None):
    prepared, errors = writer.create_batch(req.memories, idempotency_key)
    emit.stored_batch(prepared, errors)
    warnings = [w for p in prepared for w in p.warnings] or None
    failed = [{"index": i, "id": p.memory_id, "reason": err} for i, (p, err) in enumerate(zip(prepared, errors)) if err]
    ids = [None if err else p.memory_id for p, err in zip(prepared, errors)]
    if failed:
        body = BatchResponse(status="partial_success", memory_ids=ids, count=len(prepared) - len(failed), failed=failed, warnings=warnings)
        return JSONResponse(body.model_dump(exclude_none=True), status_code=207)
    return BatchResponse(memory_ids=ids, count=len(ids), warnings=warnings)


@router.get("/memory/{memory_id}", response_model=MemoryResponse, response_model_exclude_unset=True, responses={**ERROR_RESPONSES, **NOT_FOUND})
def get_memory(memory_id: str, store: StoreDep) -> dict:
    source = store.get(memory_id) if valid_id(memory_id) else None
    if source is None:
        raise NotFound(f"Memory {memory_id} not found")
    return {"status": "success", "memory": public_memory(memory_id, source)}


@router.patch("/memory/{memory_id}", response_model=UpdateResponse, response_model_exclude_unset=True, responses={**ERROR_RESPONSES, **NOT_FOUND})
def update_memory(memory_id: str, req: MemoryUpdate, writer: WriterDep, emit: EmitDep) -> dict:
    updated = writer.update(memory_id, req)
    emit.updated(memory_id, updated, req)
    return {"status": "success", "memory_id": memory_id, "memory": public_memory(memory_id, updated)}


@router.delete("/memory/{memory_id}", response_model=DeleteResponse, responses={**ERROR_RESPONSES, **NOT_FOUND})
def delete_memory(memory_id: str, writer: WriterDep, emit: EmitDep) -> dict:
    writer.delete(memory_id)
    emit.deleted(memory_id)
    return {"status": "success", "memory_id": memory_id}
