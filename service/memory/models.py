"""The write request models every surface builds (spec 003: Memory): the one way a memory is asked
to be stored or changed. Response models are each surface's own (service/api/*/)."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from service.clock.instants import Instant

# Client-chosen ids (imports that can be re-run): URL-safe, bounded. Server ids are UUID4.
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,127}$"
_ID_RE = re.compile(ID_PATTERN)


def valid_id(memory_id: str) -> bool:
    return bool(_ID_RE.match(memory_id))


def _tags(value: Any) -> Any:
    if value is None:
        return []
    if isinstance(value, str):
        return [t for t in (p.strip() for p in value.split(",")) if t]
    return value


class MemoryFields(BaseModel):
    """Fields shared by create and update; every input is bounded."""

    # NaN and Infinity (which Python's JSON parser accepts) are refused for every number.
    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)

    tags: list[str] | None = Field(None, description="Tags; hierarchy segments separated by ':' or '/' (TAG_MAX_COUNT, TAG_MAX_LENGTH)")
    importance: float | None = Field(None, ge=0.0, le=1.0, description="0-1; 0.5 when omitted on create")
    type: str | None = Field(None, max_length=64, description="Decision, Pattern, Preference, Style, Habit, Insight, Context or an alias")
    confidence: float | None = Field(None, ge=0.0, le=1.0)
    metadata: dict[str, Any] | None = Field(None, description="Any JSON object (METADATA_MAX_DEPTH, METADATA_MAX_KEYS, METADATA_MAX_BYTES)")
    timestamp: Instant | None = Field(None, description="ISO 8601 creation time; now when omitted")
    t_valid: Instant | None = Field(None, description="ISO 8601: valid from (omitted: from its timestamp)")
    t_invalid: Instant | None = Field(None, description="ISO 8601: invalid from (after t_valid)")
    updated_at: Instant | None = None
    last_accessed: Instant | None = None
    relevance_score: float | None = Field(None, ge=0.0, le=1.0, description="0-1, written by consolidation decay")
    archived: bool | None = None
    who: str | None = Field(None, max_length=256, description="Who wrote the memory (an agent, a harness, a person); Signet's `who`")
    project: str | None = Field(None, max_length=256, description="The project the memory belongs to (Signet's `project`)")
    pinned: bool | None = Field(None, description="Pinned memories are always kept in view (Signet's `pinned`); false when omitted")

    _split_tags = field_validator("tags", mode="before")(classmethod(lambda cls, v: _tags(v)))

    @field_validator("type")
    @classmethod
    def _type_not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("type must be a non-empty string")
        return value


class MemoryCreate(MemoryFields):
    content: str = Field(..., description="The memory text (required, non-empty)")
    embedding: list[float] | None = Field(None, description="Precomputed vector; its length must equal the model's")
    id: str | None = Field(None, pattern=ID_PATTERN, description="Client id: the write becomes an idempotent upsert")
    supersedes: str | None = Field(
        None, pattern=ID_PATTERN,
        description="Id of the memory this one replaces: it gets t_invalid = now and an edge old -> new, in this one request",
    )
    supersede_type: Literal["EVOLVED_INTO", "INVALIDATED_BY"] | None = Field(
        None, description="Edge type for `supersedes`; EVOLVED_INTO when omitted (case-insensitive)"
    )

    @field_validator("content")
    @classmethod
    def _content_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("content must be a non-empty string")
        return value

    @field_validator("supersede_type", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value

    def surface_fields(self) -> dict[str, Any]:
        """Stored fields another API surface adds to the memory (Hindsight's fact_type, document_id,
        ...: see service/api/hindsight/retain.py); AutoMem's own writes add none."""
        return {}


class MemoryUpdate(MemoryFields):
    content: str | None = None
    embedding: list[float] | None = None

    def surface_changes(self, current: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
        """Stored fields another API surface changes along with the PATCH, from the version the write
        is conditioned on and the changes made so far (Hindsight's curation record: see
        service/api/hindsight/curation.py); AutoMem's own PATCH changes none."""
        return {}

    @field_validator("content")
    @classmethod
    def _content_not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("content must be a non-empty string")
        return value


class MemoryBatch(BaseModel):
    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)

    memories: list[MemoryCreate] = Field(..., min_length=1, max_length=500, description="1-500 memories")
