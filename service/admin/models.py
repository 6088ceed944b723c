"""Request and response models of the admin API (spec 003: Admin)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from service.banks.scope import BANK_PATTERN


class ReembedRequest(BaseModel):
    """AutoMem's body, with its defaults; `bank` is ours."""

    model_config = ConfigDict(extra="ignore")

    batch_size: int = Field(32, ge=1, description="Texts per embedding call and per bulk request; above 100 is taken as 100 (AutoMem)")
    limit: int | None = Field(None, ge=1, description="At most this many memories, newest first (default: all)")
    force: bool = Field(False, description="Re-embed every memory, not only those another model (or none) embedded")
    bank: str | None = Field(None, pattern=BANK_PATTERN, description="Bank to re-embed (default: DEFAULT_BANK)")

    @field_validator("batch_size")
    @classmethod
    def _cap(cls, value: int) -> int:
        return min(value, 100)


class ReembedResponse(BaseModel):
    status: str = "complete"
    processed: int = Field(..., description="Memories that got a new vector")
    failed: int = Field(..., description="Memories whose embedding or write failed")
    total: int = Field(..., description="Memories attempted")
    batch_size: int
    model: str = Field(..., description="The configured model, now recorded on every processed memory")
    dimension: int
    failed_ids: list[str] | None = Field(None, description="The first 10 failed memory ids")
    failed_ids_truncated: bool | None = None


class RestoreResponse(BaseModel):
    status: str = Field(..., description="success, or partial_success when some records failed")
    bank: str
    memories: dict[str, int] = Field(..., description="Of the stored memories: restored, failed, vectors_reused, reembedded, "
                                                       "vectors_unusable (re-embedded: all zeros, beyond float32 or vanishing); duplicates: ids the archive held again")
    edges: dict[str, int] = Field(..., description="restored, failed; duplicates: edges (ends and type) the archive held again")
    archive: dict[str, Any] = Field(..., description="source (engram | automem), timestamp, what was skipped by label / type, unmapped properties")
    failures: list[dict[str, Any]] = Field(default_factory=list, description="The first failures: line, id, stage, reason")
    seconds: float
