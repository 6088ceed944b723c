"""POST /associate (spec 003): one edge, or a batch of up to 500 with per-item outcomes (201 / 207)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body

from service.api.responses import SafeJSONResponse as JSONResponse  # never fails on odd echoed input

from service.api.deps import ApiAuth, AssociationsDep
from service.api.scope import WriteScope
from service.graph.links import success
from service.errors import BadRequest, EngineUnavailable, NotFound
from service.graph.registry import MAX_BATCH
from service.api.error_docs import ERROR_RESPONSES, NOT_FOUND
from service.api.automem.graph_models import AssociateBatchResponse, AssociateResponse, association_body_schema
from service.stream.emit import EmitDep
from service.clock.instants import utcnow

router = APIRouter(dependencies=[ApiAuth], tags=["graph"])

_EXAMPLES = {
    "single": {"value": {"memory1_id": "m-1", "memory2_id": "m-2", "type": "PREFERS_OVER", "strength": 0.9, "reason": "faster"}},
    "batch": {"value": {"associations": [{"memory1_id": "m-1", "memory2_id": "m-2", "type": "EVOLVED_INTO", "strength": 1.0}]}},
}


@router.post(
    "/associate",
    status_code=201,
    responses={
        201: {"model": AssociateResponse, "description": "Single: the edge; batch: every item succeeded (AssociateBatchResponse)"},
        207: {"model": AssociateBatchResponse, "description": "Batch: some items failed"},
        **ERROR_RESPONSES, **NOT_FOUND,
    },
    openapi_extra={"requestBody": {"content": {"application/json": {"schema": association_body_schema()}}}},
)
def associate(scope: WriteScope, service: AssociationsDep, emit: EmitDep, body: dict[str, Any] = Body(..., openapi_examples=_EXAMPLES)):
    """One association (AssociationIn) or `{"associations": [...]}` (AssociationBatchIn, up to 500)."""
    if "associations" not in body:
        outcome = service.associate(scope.bank, [body], utcnow())[0]
        if outcome.error:
            raise {400: BadRequest, 404: NotFound}.get(outcome.status, EngineUnavailable)(outcome.error)
        a = outcome.association
        emit.associated(success(a))
        return {"status": "success", "message": f"Association created between {a.source_id} and {a.target_id}", **success(a)}

    items = body["associations"]
    if not isinstance(items, list) or not items:
        raise BadRequest("associations must be a non-empty list")
    if len(items) > MAX_BATCH:
        raise BadRequest(f"associations holds {len(items)} items; the maximum is {MAX_BATCH}")
    outcomes = service.associate(scope.bank, items, utcnow())
    succeeded = [{"index": o.index, **success(o.association)} for o in outcomes if o.error is None]
    failed = [o.failure() for o in outcomes if o.error is not None]
    body_out = AssociateBatchResponse(
        status="partial_success" if failed else "success",
        created_count=len(succeeded), failed_count=len(failed), succeeded=succeeded, failed=failed,
        summary=f"{len(succeeded)}/{len(items)} associations created successfully",
    ).model_dump()
    emit.associated_batch(body_out)
    return JSONResponse(body_out, status_code=207 if failed else 201)

