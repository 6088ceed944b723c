"""POST /consolidate and GET /consolidate/status (spec 003: Consolidation)."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Body
from pydantic import BaseModel, ConfigDict, Field

from service.api.deps import ApiAuth, ConsolidationDep
from service.api.scope import ReadScope, WriteScope
from service.errors import EngineUnavailable
from service.api.error_docs import ERROR_RESPONSES

router = APIRouter(dependencies=[ApiAuth], responses=ERROR_RESPONSES, tags=["consolidation"])


class ConsolidateRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    mode: Literal["full", "decay", "creative", "cluster", "forget"] = Field(
        "full", description="full runs decay, creative, cluster and forget in that order",
    )
    dry_run: bool = Field(True, description="Report what would change and change nothing (AutoMem's default)")


@router.post("/consolidate")
def consolidate(scope: WriteScope, service: ConsolidationDep, req: ConsolidateRequest | None = Body(None)) -> dict:
    """Run one consolidation mode now on the request's bank; the result lists what changed (or, dry, what would change)."""
    req = req or ConsolidateRequest()
    result = service.run(scope.bank, req.mode, req.dry_run)
    if not result.get("success"):
        raise EngineUnavailable(f"consolidation {req.mode} failed: {result.get('error')}", extra={"consolidation": result})
    return {"status": "success", "consolidation": result}


@router.get("/consolidate/status")
def consolidation_status(scope: ReadScope, service: ConsolidationDep) -> dict:
    """The request's bank: when each task runs next, the recent runs (newest first), and the scheduler thread's state."""
    return service.status(scope.bank)
