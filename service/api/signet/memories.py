"""Signet's write and read of one memory (its SDK's `remember` and `getMemory`), pure: the request model
of POST /api/memory/remember, how it maps onto the one store, and the rows both routes answer with.

    Signet                      stored
    content (trimmed)           content
    who (default "daemon")      who
    project, pinned, importance project, pinned, importance (0.5 when omitted, as every write here)
    tags (comma string, list)   tags
    type                        type (Engram's canonical one when it names one, else as given);
                                omitted: classified from the content, as POST /memory does
    createdAt                   timestamp
    validFrom / validUntil      t_valid / t_invalid
    sourceType / sourceId       metadata.source_type / metadata.source_id
    agentId                     metadata.agent_id

Signet dedupes a remember by (sourceType, sourceId), else by its content: here the memory's id
derives from the one or the other (the writer's idempotent create), so a repeat — on any replica,
at the same moment too — answers `deduped: true` with the memory stored first. `idempotencyKey`
(the SDK's) keys it instead of the content. Fields Signet uses that this store keeps nowhere
(hints, transcript, structured, occurredAt, ...) are accepted and named in `warnings`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import AliasChoices, Field, field_validator

from service.api.signet.models import NAME_CHARS, SESSION_KEY_CHARS, SignetBody
from service.api.signet.shaping import created_at, signet_type, tag_string
from service.clock.instants import InstantOrBlank, stored_datetime
from service.api.signet.temporal import js_iso

DEFAULT_WHO = "daemon"
DEFAULT_SOURCE_TYPE = "manual"
MAX_HINTS = 100
# Accepted, used by Signet's own pipeline, kept nowhere here.
NOT_KEPT = ("hints", "transcript", "structured", "occurredAt", "observedAt", "sourceCreatedAt", "reviewAfter", "sourcePath", "runtimePath")
# enrichment.status -> Signet's extraction_status.
EXTRACTION_STATUS = {"done": "complete", "pending": "pending", "failed": "failed"}


class RememberBody(SignetBody):
    """POST /api/memory/remember (Signet's daemon and its SDK's `remember`). Only `content` is required."""

    content: str | None = Field(None, description="The memory text (required)")
    who: str | None = Field(None, max_length=NAME_CHARS, description="Who wrote it (default: daemon)")
    project: str | None = Field(None, max_length=NAME_CHARS)
    importance: float | None = Field(None, ge=0.0, le=1.0)
    tags: str | list[str] | None = Field(None, description="Comma-separated, or a list")
    pinned: bool | None = None
    type: str | None = Field(None, max_length=64, description="preference, decision, fact, ... (omitted: classified from the content)")
    sourceType: str | None = Field(None, max_length=NAME_CHARS, validation_alias=AliasChoices("sourceType", "source_type"))
    sourceId: str | None = Field(None, max_length=SESSION_KEY_CHARS, validation_alias=AliasChoices("sourceId", "source_id"),
                                 description="Dedupe: a second remember with the same sourceType and sourceId answers the first memory")
    createdAt: InstantOrBlank = Field(None, validation_alias=AliasChoices("createdAt", "created_at"), description="ISO 8601: when it happened (omitted: now)")
    validFrom: InstantOrBlank = Field(None, validation_alias=AliasChoices("validFrom", "valid_from"))
    validUntil: InstantOrBlank = Field(None, validation_alias=AliasChoices("validUntil", "valid_until"))
    agentId: str | None = Field(None, max_length=NAME_CHARS, validation_alias=AliasChoices("agentId", "agent_id"))
    visibility: Literal["global", "private", "archived"] | None = Field(None, description="Accepted; every agent of the bank sees its memories here")
    idempotencyKey: str | None = Field(None, max_length=200, validation_alias=AliasChoices("idempotencyKey", "idempotency_key"))
    scope: str | None = Field(None, max_length=200, description="A memory scope: the bank to write (as X-Bank)")
    # Signet's, kept nowhere here (NOT_KEPT): validated, then named in `warnings`.
    hints: list[str] | None = Field(None, max_length=MAX_HINTS)
    transcript: str | None = None
    structured: dict[str, Any] | None = None
    occurredAt: InstantOrBlank = None
    observedAt: InstantOrBlank = None
    sourceCreatedAt: InstantOrBlank = None
    reviewAfter: InstantOrBlank = None
    sourcePath: str | None = Field(None, max_length=4096)
    runtimePath: str | None = Field(None, max_length=NAME_CHARS)
    mode: Literal["auto", "sync", "async"] | None = Field(None, description="Accepted; the memory is stored before the answer in every mode")

    @field_validator("content", mode="before")
    @classmethod
    def _content_is_text(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, str):
            raise ValueError("content must be a string")
        return value

    @field_validator("tags", mode="before")
    @classmethod
    def _tags_shape(cls, value: Any) -> Any:
        if value is None or isinstance(value, str) or (isinstance(value, list) and all(isinstance(t, str) for t in value)):
            return value
        raise ValueError("tags must be a string, string array, or null")  # Signet's words

    def not_kept(self) -> list[str]:
        """Warnings for what was given and is kept nowhere."""
        out = [f"{name} is accepted but not kept here" for name in NOT_KEPT if getattr(self, name) not in (None, [], {}, "")]
        if self.visibility == "private":
            out.append("visibility 'private' is not kept: every agent of the bank sees its memories here")
        return out


def normalized(content: str) -> str:
    """What two remembers must share to be one memory: the text with its runs of whitespace as one space."""
    return " ".join(content.split())


def dedupe_key(body: RememberBody, content: str) -> tuple[str, str]:
    """(kind, key) the memory's id derives from: the source, else the client's idempotency key, else the content."""
    if body.sourceId and body.sourceId.strip():
        return "source", f"signet-source\n{(body.sourceType or DEFAULT_SOURCE_TYPE).strip()}\n{body.sourceId.strip()}"
    if body.idempotencyKey and body.idempotencyKey.strip():
        return "idempotency", f"signet-idempotency\n{body.idempotencyKey.strip()}"
    digest = hashlib.sha256(normalized(content).encode("utf-8")).hexdigest()
    return "content", f"signet-content\n{digest}"


def remember_metadata(body: RememberBody) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if body.sourceId or body.sourceType:
        out["source_type"] = (body.sourceType or DEFAULT_SOURCE_TYPE).strip()
    if body.sourceId:
        out["source_id"] = body.sourceId.strip()
    if body.agentId and body.agentId.strip():
        out["agent_id"] = body.agentId.strip()
    return out


def _tags_or_none(source: Mapping[str, Any]) -> str | None:
    return tag_string(source.get("tags")) or None


def remembered(memory_id: str, source: Mapping[str, Any], *, deduped: bool) -> dict[str, Any]:
    """Signet's answer to a remember: the memory as stored; a dedupe says so (Signet's two shapes)."""
    out = {
        "id": memory_id, "type": signet_type(source.get("type")), "tags": _tags_or_none(source), "pinned": bool(source.get("pinned")),
        "importance": source.get("importance"), "content": source.get("content", ""), "embedded": True,
    }
    if deduped:
        return {**out, "tags": out["tags"] or "", "deduped": True}
    return {**out, "entities_linked": 0, "hints_written": 0, "structured": False}


def _metadata(source: Mapping[str, Any]) -> dict[str, Any]:
    metadata = source.get("metadata")
    return metadata if isinstance(metadata, dict) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def record(memory_id: str, source: Mapping[str, Any]) -> dict[str, Any]:
    """GET /api/memory/{id}: Signet's memory row (its SDK's MemoryRecord)."""
    metadata = _metadata(source)
    enrichment = source.get("enrichment") if isinstance(source.get("enrichment"), dict) else {}
    source_type = _text(metadata.get("source_type")) or _text(metadata.get("harness"))
    source_id = _text(metadata.get("source_id")) or _text(metadata.get("session_key"))
    session_id = _text(metadata.get("session_key")) or _text(metadata.get("session_id")) or (
        source_id if source_type and source_type.startswith("session") else None)
    updated = stored_datetime(source.get("updated_at"))
    accessed = stored_datetime(source.get("last_accessed"))
    out = {
        "id": memory_id, "content": source.get("content", ""), "type": signet_type(source.get("type")),
        "importance": source.get("importance"), "tags": _tags_or_none(source), "pinned": bool(source.get("pinned")),
        "who": source.get("who"), "source_id": source_id, "source_type": source_type, "project": source.get("project"),
        "session_id": session_id, "confidence": source.get("confidence"), "access_count": 0,
        "last_accessed": js_iso(accessed) if accessed else None, "is_deleted": False, "deleted_at": None,
        "extraction_status": EXTRACTION_STATUS.get(enrichment.get("status"), "none"), "embedding_model": source.get("embedding_model"),
        "version": 1, "created_at": created_at(source), "updated_at": js_iso(updated) if updated else created_at(source),
        "updated_by": source.get("who"),
    }
    if session_id:
        out["sessionId"] = session_id
    return out
