"""Hindsight's bank routes: list, create / update (PUT, PATCH), get with statistics, profile, stats,
delete. A token scoped to other banks is answered 404 for any of them (service/banks/scope.py)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query

from service.api.hindsight.deps import CallerDep, ReadBank, RegistryDep, WriteBank
from service.api.hindsight.errors import HINDSIGHT_ERRORS, HindsightRoute
from service.api.hindsight.models import BankBody, BankDeleteResponse, BankProfileResponse
from service.banks.profiles import Bank
from service.errors import NotFound
from service.clock.instants import utcnow

router = APIRouter(route_class=HindsightRoute, tags=["hindsight: banks"], responses=HINDSIGHT_ERRORS)
BANKS = "/v1/default/banks"


def profile_of(bank: Bank) -> dict[str, Any]:
    """Hindsight's BankProfileResponse (background repeats the mission, as Hindsight does)."""
    return {"bank_id": bank.bank_id, "name": bank.name, "disposition": bank.disposition, "mission": bank.mission, "background": bank.mission}


def list_item(bank: Bank) -> dict[str, Any]:
    return {
        "bank_id": bank.bank_id, "name": bank.name, "disposition": bank.disposition, "mission": bank.mission or None,
        "created_at": bank.created_at, "updated_at": bank.updated_at, "fact_count": bank.fact_count,
        "last_document_at": None, "last_write_at": bank.last_write_at,
    }


def stats_of(bank_id: str, stats: dict[str, Any]) -> dict[str, Any]:
    """Hindsight's BankStatsResponse, plus `memory_count`, `edge_count` and `tags`. Engram runs no
    async operations and keeps no per-fact-type link counts: those fields are 0 / empty."""
    facts = stats["nodes_by_fact_type"]
    return {
        "bank_id": bank_id, "total_nodes": stats["memory_count"], "total_links": stats["edge_count"],
        "total_documents": stats["total_documents"], "nodes_by_fact_type": facts,
        "links_by_link_type": stats["links_by_link_type"], "links_by_fact_type": {}, "links_breakdown": {},
        "pending_operations": 0, "failed_operations": 0, "operations_by_status": {},
        "last_consolidated_at": stats["last_consolidated_at"], "last_memory_write_at": stats["last_memory_write_at"],
        "pending_consolidation": 0, "failed_consolidation": 0, "total_observations": facts.get("observation", 0),
        "memory_count": stats["memory_count"], "edge_count": stats["edge_count"], "types": stats["types"], "tags": stats["tags"],
    }


@router.get(BANKS, summary="List all memory banks", operation_id="list_banks")
def list_banks(caller: CallerDep, registry: RegistryDep, q: str | None = Query(None, max_length=200), limit: int = Query(100, ge=0, le=10_000),
               offset: int = Query(0, ge=0)) -> dict:
    """Banks with a profile or memories that the token may see; `q` filters on id or name."""
    banks, total = registry.list(caller.banks, q, limit, offset)
    return {"banks": [list_item(b) for b in banks], "total": total, "limit": limit, "offset": offset}


@router.put(f"{BANKS}/{{bank_id}}", response_model=BankProfileResponse, summary="Create or update memory bank", operation_id="create_or_update_bank")
def put_bank(body: BankBody, scope: WriteBank, registry: RegistryDep) -> dict:
    return profile_of(registry.update(scope.bank, body.model_dump(exclude_none=True), utcnow()))


@router.patch(f"{BANKS}/{{bank_id}}", response_model=BankProfileResponse, summary="Partial update memory bank", operation_id="update_bank")
def patch_bank(body: BankBody, scope: WriteBank, registry: RegistryDep) -> dict:
    """Only the fields given change (the bank is created when it does not exist, as Hindsight does)."""
    return profile_of(registry.update(scope.bank, body.model_dump(exclude_none=True), utcnow()))


@router.get(f"{BANKS}/{{bank_id}}", summary="Get a memory bank with its statistics", operation_id="get_bank")
def get_bank(scope: ReadBank, registry: RegistryDep) -> dict:
    bank = registry.get(scope.bank)
    if bank is None:
        raise NotFound(f"Bank {scope.bank} not found")
    return {**profile_of(bank), **{k: v for k, v in bank.profile.items() if k not in ("name", "mission", "disposition")},
            "created_at": bank.created_at, "updated_at": bank.updated_at, "stats": stats_of(scope.bank, registry.stats(scope.bank))}


@router.get(f"{BANKS}/{{bank_id}}/profile", response_model=BankProfileResponse, summary="Get memory bank profile", operation_id="get_bank_profile")
def get_profile(scope: ReadBank, registry: RegistryDep) -> dict:
    """The profile; a bank without one reads as Hindsight's defaults (nothing is written)."""
    return profile_of(registry.profile(scope.bank) or Bank(scope.bank))


@router.get(f"{BANKS}/{{bank_id}}/stats", summary="Get statistics for memory bank", operation_id="get_agent_stats")
def bank_stats(scope: ReadBank, registry: RegistryDep) -> dict:
    return stats_of(scope.bank, registry.stats(scope.bank))


@router.delete(f"{BANKS}/{{bank_id}}", response_model=BankDeleteResponse, summary="Delete memory bank", operation_id="delete_bank")
def delete_bank(scope: WriteBank, registry: RegistryDep) -> dict:
    """The bank's memories, edges, consolidation history, session ledger, recall log, operations and profile; the counts are reported."""
    report = registry.delete(scope.bank)
    return {
        "success": True, "deleted_count": report.total,
        "message": (f"Bank '{scope.bank}' deleted: {report.memories_deleted} memories, {report.edges_deleted} edges, "
                    f"{report.consolidation_records_deleted} consolidation records, {report.recall_ledger_deleted} session ledgers, "
                    f"{report.recall_log_deleted} recall log entries, {report.operations_deleted} operations" + (", its profile" if report.profile_deleted else "")),
        "memories_deleted": report.memories_deleted, "edges_deleted": report.edges_deleted,
        "consolidation_records_deleted": report.consolidation_records_deleted, "recall_ledger_deleted": report.recall_ledger_deleted,
        "recall_log_deleted": report.recall_log_deleted, "operations_deleted": report.operations_deleted, "profile_deleted": report.profile_deleted,
    }
