"""Request and response models of the admin API (spec 003: Admin)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from service.banks.scope import BANK_PATTERN


class ReembedRequest(BaseModel):
    """AutoMem's body, with its defaults and its leniency: a `batch_size` or `limit` that is not a
    positive whole number falls back to the default (32; every memory), as AutoMem's int() does,
    with a warning. `bank` is ours."""

    model_config = ConfigDict(extra="ignore")

    batch_size: int = Field(32, description="Texts per embedding call and per bulk request; above 100 is taken as 100 (AutoMem)")
    limit: int | None = Field(None, description="At most this many memories, newest first (default: all)")
    force: bool = Field(False, description="Re-embed every memory, not only those another model (or none) embedded")
    bank: str | None = Field(None, pattern=BANK_PATTERN, description="Bank to re-embed (default: DEFAULT_BANK)")
    # What _lenient took as a default; not part of the body's schema.
    notes: SkipJsonSchema[list[str]] = Field(default_factory=list, exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _lenient(cls, values: Any) -> Any:
        if not isinstance(values, dict):
            return values
        out, notes = dict(values), []
        for name, default in (("batch_size", 32), ("limit", None)):
            if name in out and out[name] is not None:
                number = _whole(out[name])
                if number is None or number < 1:
                    notes.append(f"{name} {str(out[name])[:40]!r} is not a positive whole number: {'all memories' if default is None else default} used")
                    out[name] = default
                else:
                    out[name] = number
        out["notes"] = notes
        return out

    @field_validator("batch_size")
    @classmethod
    def _cap(cls, value: int) -> int:
        return min(value, 100)


def _whole(value: Any) -> int | None:
    """int(value) as AutoMem's Python takes it (a whole float, a numeric string), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    try:
        return int(str(value).strip())
    except ValueError:
        return None


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
    metadata_preserved: bool = Field(True, description="AutoMem's flag: the memories' payload (content, tags, metadata, ...) is kept; only the vector changes")
    message: str | None = Field(None, description="Set when there was nothing to re-embed (AutoMem's 'No memories found to reembed')")
    warnings: list[str] | None = Field(None, description="Body values that were taken as their defaults")


class RestoreResponse(BaseModel):
    status: str = Field(..., description="success, or partial_success when some records failed")
    bank: str
    memories: dict[str, int] = Field(..., description="Of the stored memories: restored, failed, vectors_reused, reembedded, "
                                                       "vectors_unusable (re-embedded: all zeros, beyond float32 or vanishing); duplicates: ids the archive held again")
    edges: dict[str, int] = Field(..., description="restored, failed; duplicates: edges (ends and type) the archive held again")
    archive: dict[str, Any] = Field(..., description="source (engram | automem), timestamp, what was skipped by label / type, unmapped properties")
    failures: list[dict[str, Any]] = Field(default_factory=list, description="The first failures: line, id, stage, reason")
    seconds: float
