"""Memory CRUD and batch (spec 003: Memory). Thin: validate, call the writer, shape the answer."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header

from service.api.deps import ApiAuth, StoreDep, WriterDep
from service.api.scope import ReadScope, WriteScope
from service.api.responses import SafeJSONResponse as JSONResponse  # never fails on odd echoed input
from service.api.responses import public_memory
from service.errors import NotFound
from service.api.error_docs import CONFLICT, ERROR_RESPONSES, NOT_FOUND
from service.api.automem.memory_models import BatchResponse, DeleteResponse, MemoryResponse, StoreResponse, UpdateResponse
from service.memory.models import MemoryBatch, MemoryCreate, MemoryUpdate, valid_id
from service.stream.emit import EmitDep
from service.writes.writer import DEFAULT_SUPERSEDE_TYPE

router = APIRouter(dependencies=[ApiAuth], tags=["memory"])


IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key", max_length=200, pattern=r"^[\x21-\x7e]+$",
        description="Makes a retry safe: the memory's id derives from the key and a repeated request stores "
        "once (without a client `id`). Use a new key per logical write, e.g. a UUID.",
    ),
]


@router.post("/memory", status_code=201, response_model=StoreResponse, response_model_exclude_none=True, responses={**ERROR_RESPONSES, **NOT_FOUND, **CONFLICT})
def store_memory(req: MemoryCreate, scope: WriteScope, writer: WriterDep, emit: EmitDep, idempotency_key: IdempotencyKey = None) -> StoreResponse:
    p = writer.create(scope.bank, req, idempotency_key)
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
def store_batch(req: MemoryBatch, scope: WriteScope, writer: WriterDep, emit: EmitDep, idempotency_key: IdempotencyKey = None):
    prepared, errors = writer.create_batch(scope.bank, req.memories, idempotency_key)
    emit.stored_batch(prepared, errors)
    warnings = [w for p in prepared for w in p.warnings] or None
    failed = [{"index": i, "id": p.memory_id, "reason": err} for i, (p, err) in enumerate(zip(prepared, errors)) if err]
    ids = [None if err else p.memory_id for p, err in zip(prepared, errors)]
    if failed:
        body = BatchResponse(status="partial_success", memory_ids=ids, count=len(prepared) - len(failed), failed=failed, warnings=warnings)
        return JSONResponse(body.model_dump(exclude_none=True), status_code=207)
    return BatchResponse(memory_ids=ids, count=len(ids), warnings=warnings)


@router.get("/memory/{memory_id}", response_model=MemoryResponse, response_model_exclude_unset=True, responses={**ERROR_RESPONSES, **NOT_FOUND})
def get_memory(memory_id: str, scope: ReadScope, store: StoreDep) -> dict:
    source = store.get(scope.bank, memory_id) if valid_id(memory_id) else None
    if source is None:
        raise NotFound(f"Memory {memory_id} not found")
    return {"status": "success", "memory": public_memory(memory_id, source)}


@router.patch("/memory/{memory_id}", response_model=UpdateResponse, response_model_exclude_unset=True, responses={**ERROR_RESPONSES, **NOT_FOUND})
def update_memory(memory_id: str, req: MemoryUpdate, scope: WriteScope, writer: WriterDep, emit: EmitDep) -> dict:
    updated = writer.update(scope.bank, memory_id, req)
    emit.updated(memory_id, updated, req)
    return {"status": "success", "memory_id": memory_id, "memory": public_memory(memory_id, updated)}


@router.delete("/memory/{memory_id}", response_model=DeleteResponse, responses={**ERROR_RESPONSES, **NOT_FOUND})
def delete_memory(memory_id: str, scope: WriteScope, writer: WriterDep, emit: EmitDep) -> dict:
    writer.delete(scope.bank, memory_id)
    emit.deleted(memory_id)
    return {"status": "success", "memory_id": memory_id}
