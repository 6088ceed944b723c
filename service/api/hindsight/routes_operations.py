"""Hindsight's operation routes: the status of one async operation and the bank's list, in Hindsight's
shapes (hindsight-client's OperationStatusResponse and OperationsListResponse). The operations are
async retains (service/api/hindsight/operations.py), kept in the engine."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Query

from service.api.hindsight.deps import OperationsDep, ReadBank
from service.api.hindsight.errors import HINDSIGHT_ERRORS, HindsightRoute
from service.errors import NotFound
from service.memory.limits import check_text
from service.storage.operations import list_query

router = APIRouter(route_class=HindsightRoute, tags=["hindsight: operations"], responses=HINDSIGHT_ERRORS)
OPERATIONS = "/v1/default/banks/{bank_id}/operations"


def list_item(doc: dict[str, Any]) -> dict[str, Any]:
    """Hindsight's OperationResponse."""
    return {
        "id": doc["operation_id"], "operation_id": doc["operation_id"], "task_type": doc["task_type"], "operation_type": doc["task_type"],
        "items_count": doc.get("items_count") or 0, "document_id": None, "created_at": doc["created_at"], "updated_at": doc.get("updated_at"),
        "status": doc["status"], "error_message": doc.get("error_message"), "retry_count": doc.get("retry_count") or 0,
    }


def status_of(doc: dict[str, Any], *, include_payload: bool) -> dict[str, Any]:
    """Hindsight's OperationStatusResponse; result_metadata says how many memories the run stored."""
    out = {
        **{k: v for k, v in list_item(doc).items() if k not in ("items_count", "document_id")},
        "completed_at": doc.get("completed_at"),
        "result_metadata": {"items_count": doc.get("items_count") or 0, "memories_count": doc.get("memories_count") or 0},
    }
    if include_payload:
        out["task_payload"] = (doc.get("request") or {}).get("body")
    return out


@router.get(OPERATIONS, summary="List async operations", operation_id="list_operations")
def list_operations(
    scope: ReadBank, operations: OperationsDep,
    status: Literal["pending", "processing", "completed", "failed", "cancelled"] | None = Query(None),
    type: Literal["retain", "consolidation", "refresh_mental_model", "file_convert_retain", "webhook_delivery"] | None = Query(None),
    limit: int = Query(20, ge=1, le=100), offset: int = Query(0, ge=0, le=9_900),  # within the engine's result window
    exclude_parents: bool = Query(False, description="Accepted; no operation here has children"),
) -> dict:
    """The bank's async operations, most recent first."""
    docs, total = operations.operations.page(list_query(scope.bank, status, type), size=limit, offset=offset)
    return {"bank_id": scope.bank, "total": total, "limit": limit, "offset": offset, "operations": [list_item(d) for d in docs]}


@router.get(f"{OPERATIONS}/{{operation_id}}", summary="Get operation status", operation_id="get_operation_status")
def get_operation_status(operation_id: str, scope: ReadBank, operations: OperationsDep, include_payload: bool = Query(False)) -> dict:
    check_text(operation_id, "operation_id", max_chars=200)
    doc = operations.operations.get(scope.bank, operation_id)
    if doc is None:
        raise NotFound(f"Operation '{operation_id}' not found")
    return status_of(doc, include_payload=include_payload)
