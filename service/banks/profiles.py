"""Bank profiles (pure): what Hindsight's CreateBankRequest carries (name, mission, disposition, the
retain and recall switches), how a PUT / PATCH merges into a profile, and what deleting a bank
reports. The registry that stores them is service/storage/banks.py."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Hindsight's DispositionTraits default (every trait 3 of 1-5).
DEFAULT_DISPOSITION = {"skepticism": 3, "literalism": 3, "empathy": 3}
# Profile fields kept as given (CreateBankRequest, spec of hindsight-client 1.1.0).
PROFILE_FIELDS = (
    "retain_mission", "retain_extraction_mode", "retain_custom_instructions", "retain_chunk_size",
    "retain_structured_chunk_size", "retain_max_attachments_per_chunk", "enable_observations", "observations_mission",
    "enable_text_search", "enable_temporal_retrieval", "enable_graph_retrieval", "enable_reranking",
)


def merged_profile(current: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """A profile after a PUT / PATCH (pure). Hindsight's precedence: reflect_mission, then mission,
    then background name the mission; disposition_* override the disposition object."""
    out = dict(current)
    if changes.get("name") is not None:
        out["name"] = changes["name"]
    mission = next((changes[k] for k in ("reflect_mission", "mission", "background") if changes.get(k) is not None), None)
    if mission is not None:
        out["mission"] = mission
    disposition = {**DEFAULT_DISPOSITION, **(out.get("disposition") or {})}
    if isinstance(changes.get("disposition"), Mapping):
        disposition.update({k: v for k, v in changes["disposition"].items() if k in DEFAULT_DISPOSITION and v is not None})
    for trait in DEFAULT_DISPOSITION:
        if changes.get(f"disposition_{trait}") is not None:
            disposition[trait] = changes[f"disposition_{trait}"]
    out["disposition"] = disposition
    out.update({k: changes[k] for k in PROFILE_FIELDS if changes.get(k) is not None})
    return out


@dataclass
class Bank:
    bank_id: str
    profile: dict[str, Any] = field(default_factory=dict)
    registered: bool = False  # has a profile document
    created_at: str | None = None
    updated_at: str | None = None
    fact_count: int = 0
    last_write_at: str | None = None

    @property
    def name(self) -> str:
        return self.profile.get("name") or self.bank_id

    @property
    def mission(self) -> str:
        return self.profile.get("mission") or ""

    @property
    def disposition(self) -> dict[str, int]:
        return {**DEFAULT_DISPOSITION, **(self.profile.get("disposition") or {})}

    def setting(self, name: str, default: Any = None) -> Any:
        value = self.profile.get(name)
        return default if value is None else value


@dataclass
class DeleteReport:
    bank_id: str
    memories_deleted: int = 0
    edges_deleted: int = 0
    consolidation_records_deleted: int = 0
    recall_ledger_deleted: int = 0  # Signet's session dedupe documents
    operations_deleted: int = 0  # Hindsight's async operations
    recall_log_deleted: int = 0  # RECALL_LOG_ENABLED documents (with the query text when it is logged)
    profile_deleted: bool = False

    @property
    def total(self) -> int:
        return (self.memories_deleted + self.edges_deleted + self.consolidation_records_deleted + self.recall_ledger_deleted
                + self.operations_deleted + self.recall_log_deleted + int(self.profile_deleted))
