"""GET /version (Hindsight's monitoring API): the Hindsight API version Engram implements and which of
Hindsight's features it serves. Open, as Hindsight's is: clients call it before anything else to
check the server (hindsight-client's get_version)."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, Field

from service.api.deps import SettingsDep

router = APIRouter(tags=["hindsight: monitoring"])

# The Hindsight API Engram's routes follow: the OpenAPI of hindsight-client 1.1.0 (tests/integration/test_hindsight_client.py).
HINDSIGHT_API_VERSION = "1.1.0"


class HindsightFeatures(BaseModel):
    observations: bool = Field(description="Observations (consolidation's cluster summaries), made by the scheduled consolidation")
    mcp: bool = Field(description="An MCP server inside this service (Engram's runs as its own process: `engram mcp`)")
    worker: bool = Field(description="The background worker (ENRICHMENT_ENABLED)")
    bank_config_api: bool = Field(description="Hindsight's per-bank configuration API")
    bank_llm_health: bool = Field(description="A per-bank LLM probe (Engram uses no language model)")
    file_upload_api: bool
    document_export_api: bool
    document_import_api: bool
    audit_log: bool
    llm_trace: bool
    store_document_text: bool = Field(description="Whether retained text is stored (always: it is the memory)")


class HindsightVersionResponse(BaseModel):
    api_version: str = Field(description="The Hindsight API version these routes implement")
    features: HindsightFeatures


@router.get("/version", response_model=HindsightVersionResponse)
async def version(settings: SettingsDep) -> HindsightVersionResponse:
    """The Hindsight API version implemented, and Hindsight's feature flags as this service has them."""
    return HindsightVersionResponse(api_version=HINDSIGHT_API_VERSION, features=HindsightFeatures(
        observations=settings.consolidation_cluster_interval_seconds > 0 and settings.consolidation_tick_seconds > 0,
        mcp=False, worker=settings.enrichment_enabled, bank_config_api=False, bank_llm_health=False, file_upload_api=False,
        document_export_api=False, document_import_api=False, audit_log=False, llm_trace=False, store_document_text=True,
    ))
