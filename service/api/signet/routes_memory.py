"""Signet's write and read of one memory, so a Signet client can be pointed at this service end to end:

    POST /api/memory/remember   store a memory (deduped by source or content, as Signet's daemon does)
    GET  /api/memory/{id}       one memory as Signet's row

Shapes and the mapping onto the one store: service/api/signet/memories.py. `scope` names the bank,
as on every Signet route.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Response

from service.api.deps import ApiAuth, SettingsDep, StoreDep, WriterDep
from service.api.responses import dumps
from service.api.scope import SignetReadScope, SignetWriteScope
from service.api.signet import memories as SM
from service.api.signet import models as M
from service.api.signet.errors import SIGNET_CONFLICT, SIGNET_ERRORS, SignetRoute
from service.errors import BadRequest, Conflict, NotFound
from service.memory.models import MemoryCreate, valid_id
from service.stream.emit import EmitDep
from service.writes.writer import idempotent_id

router = APIRouter(dependencies=[ApiAuth], tags=["signet"], route_class=SignetRoute, responses=SIGNET_ERRORS)


def _json(body: dict, warnings: list[str]) -> Response:
    return Response(dumps({**body, "warnings": warnings} if warnings else body), media_type="application/json")


@router.post("/api/memory/remember", summary="Remember (Signet)", responses=SIGNET_CONFLICT)
def remember(body: SM.RememberBody, scope: SignetWriteScope, writer: WriterDep, store: StoreDep, settings: SettingsDep, emit: EmitDep) -> Response:
    """Store one memory; a repeat of the same source (sourceType + sourceId), idempotency key or
    content answers the memory stored first, with `deduped: true`."""
    content = M.checked(body.content, "content", settings.limits.content_chars) if body.content is not None else None
    if not content:
        raise BadRequest("content is required")
    if body.validFrom and body.validUntil and body.validUntil <= body.validFrom:
        raise BadRequest("validUntil must be after validFrom")
    create = MemoryCreate(
        content=content, tags=M.tag_list(body.tags, settings.limits), importance=body.importance, type=M.checked(body.type, "type", 64),
        who=M.checked(body.who, "who", M.NAME_CHARS) or SM.DEFAULT_WHO, project=M.checked(body.project, "project", M.NAME_CHARS),
        pinned=body.pinned, timestamp=body.createdAt, t_valid=body.validFrom, t_invalid=body.validUntil,
        metadata=SM.remember_metadata(body) or None,
    )
    for name in ("sourceType", "sourceId", "agentId", "idempotencyKey", "transcript", "sourcePath", "runtimePath"):
        M.checked(getattr(body, name), name, None)
    for i, hint in enumerate(body.hints or ()):
        M.checked(hint, f"hints[{i}]", 300)
    warnings = [*body.warnings, *body.not_kept()]
    kind, key = SM.dedupe_key(body, content)
    try:
        prepared = writer.create(scope.bank, create, idempotency_key=key)
    except Conflict:
        # The memory under this key holds other text: the same source again (Signet answers the
        # first), the same content but for its whitespace (the same), or the content's memory was
        # changed since (a new memory, as Signet would store).
        if kind == "idempotency":
            raise
        keyed_id = idempotent_id(key, scope.bank)
        existing = store.get(scope.bank, keyed_id)
        if existing is not None and (kind == "source" or SM.normalized(existing.get("content") or "") == SM.normalized(content)):
            return _json(SM.remembered(keyed_id, existing, deduped=True), warnings)
        prepared = writer.create(scope.bank, create)
    if prepared.replayed:
        return _json(SM.remembered(prepared.memory_id, prepared.doc, deduped=True), warnings)
    emit.stored(prepared, create)
    return _json(SM.remembered(prepared.memory_id, prepared.doc, deduped=False), [*warnings, *prepared.warnings])


@router.get("/api/memory/{memory_id}", summary="Get memory (Signet)")
def get_memory(memory_id: Annotated[str, Path(max_length=200)], scope: SignetReadScope, store: StoreDep) -> Response:
    """One memory as Signet's row (its SDK's MemoryRecord)."""
    source = store.get(scope.bank, memory_id) if valid_id(memory_id) else None
    if source is None:
        raise NotFound(f"Memory {memory_id} not found")
    return _json(SM.record(memory_id, source), [])
