"""GET /enrichment/status and POST /enrichment/reprocess (spec 003: Enrichment), and the hook the
memory routes call after a successful write."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Body, Query
from service.api.responses import SafeJSONResponse as JSONResponse  # never fails on odd echoed input
from pydantic import BaseModel, Field

from service.api.deps import EnrichmentDep, SettingsDep, StoreDep
from service.api.scope import AdminScope, ReadScope
from service.errors import BadRequest, EngineUnavailable
from service.api.error_docs import ADMIN_RESPONSES, ERROR_RESPONSES
from service.memory.tags import split_list_param
from service.memory.models import valid_id

router = APIRouter(tags=["enrichment"])

# The PATCH fields whose change makes a memory's enrichment stale (entities, sequence, scope).
class ReprocessResponse(BaseModel):
    status: Literal["queued"] = "queued"
    count: int = Field(description="memories queued")
    ids: list[str] = Field(description="the queued ids, sorted")
    missing: list[str] = Field(default_factory=list, description="well-formed ids of no stored memory: not queued")


@router.get("/enrichment/status", responses=ERROR_RESPONSES)
def enrichment_status(scope: ReadScope, worker: EnrichmentDep) -> dict[str, Any]:
    """Queue size, pending and inflight memories, counters (the worker's: it serves every bank), and
    the last success and error and the stored enrichment states of the request's bank (X-Bank or
    `bank`; default DEFAULT_BANK)."""
    return {**worker.status(scope.bank), "bank": scope.bank}


def _ids(raw: Any, where: str) -> list[str]:
    if raw is None:
        return []
    if isinstance(raw, str):
        raw = split_list_param(raw)
    if not isinstance(raw, list):
        raise BadRequest(f"{where} must be a list of memory ids or a comma-separated string")
    out = []
    for item in raw:
        if not isinstance(item, str) or not valid_id(item.strip()):
            raise BadRequest(f"{where} holds an invalid memory id: {str(item)[:80]!r}")
        out.append(item.strip())
    return out


@router.post("/enrichment/reprocess", status_code=202, response_model=ReprocessResponse,
             responses={202: {"description": "Queued (forced: enriched again even when up to date)"}, **ERROR_RESPONSES, **ADMIN_RESPONSES})
def enrichment_reprocess(scope: AdminScope, settings: SettingsDep, worker: EnrichmentDep, store: StoreDep,
                         ids: str | None = Query(None, description="comma-separated memory ids"),
                         body: Any = Body(None, examples=[{"ids": ["m-1", "m-2"]}])):
    """Enrich memories of the request's bank (X-Bank or `bank`; default DEFAULT_BANK) again (AutoMem:
    admin token). Ids of no memory of that bank are reported in `missing`."""
    if body is not None and not isinstance(body, dict):
        raise BadRequest("body must be an object: {\"ids\": [...]}")
    wanted = list(dict.fromkeys(_ids((body or {}).get("ids"), "ids") + _ids(ids, "ids")))
    if not wanted:
        raise BadRequest("No memory ids provided for reprocessing")
    limit = settings.enrichment_reprocess_max
    if len(wanted) > limit:
        raise BadRequest(f"at most {limit} ids per request (ENRICHMENT_REPROCESS_MAX), got {len(wanted)}")
    found = store.existing(scope.bank, wanted)
    queued = sorted(found)
    if queued:
        try:
            worker.mark_pending(queued)
        except RuntimeError as exc:
            raise EngineUnavailable(str(exc)) from exc
        if worker.running:
            worker.enqueue(queued, forced=True)
    body_out = ReprocessResponse(count=len(queued), ids=queued, missing=sorted(set(wanted) - found))
    return JSONResponse(body_out.model_dump(), status_code=202)
