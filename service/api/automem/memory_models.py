"""Response models of AutoMem's memory routes (spec 003: Memory)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class StoreResponse(BaseModel):
    status: str = "success"
    memory_id: str
    type: str
    confidence: float
    importance: float
    tags: list[str]
    timestamp: str
    warnings: list[str] | None = None
    supersedes: str | None = Field(None, description="The memory this one superseded (when `supersedes` was given)")
    supersede_type: str | None = None


class BatchResponse(BaseModel):
    status: str = "success"
    memory_ids: list[str | None]
    count: int
    failed: list[dict[str, Any]] | None = None
    warnings: list[str] | None = None


class MemoryRecord(BaseModel):
    """A stored memory as every read returns it (the vector is never sent)."""

    model_config = ConfigDict(extra="allow")

    id: str
    content: str
    tags: list[str] = Field(default_factory=list)
    tag_prefixes: list[str] = Field(default_factory=list, description="Every hierarchy prefix of every tag, lowercased, ':'-joined")
    type: str | None = None
    importance: float | None = None
    confidence: float | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    timestamp: str | None = None
    updated_at: str | None = None
    last_accessed: str | None = None
    t_valid: str | None = None
    t_invalid: str | None = None
    archived: bool | None = None
    relevance_score: float | None = None
    superseded_by: str | None = Field(None, description="The newest memory that superseded this one (INVALIDATED_BY / EVOLVED_INTO)")
    superseded_at: str | None = None


class MemoryResponse(BaseModel):
    status: str = "success"
    memory: MemoryRecord


class UpdateResponse(BaseModel):
    status: str = "success"
    memory_id: str
    memory: MemoryRecord


class DeleteResponse(BaseModel):
    status: str = "success"
    memory_id: str
