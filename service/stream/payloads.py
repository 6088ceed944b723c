"""The `data` of each stream event and the fields of each operational log line. Pure.

Event fields are spec 003's (Stream: "Event types") and AutoMem's (runtime_memory_routes.py:
content previews of 100 characters plus "...", five tags, size in bytes). Log fields carry counts,
latency and storage status, never a recall's query text (spec 003: Operational logging).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

PREVIEW_CHARS = 100  # AutoMem preview_text
EVENT_TAGS = 5  # AutoMem: tags[:5]
BATCH_IDS = 50  # ids listed in a batch event (the count says how many there were)


def preview(text: Any, limit: int = PREVIEW_CHARS) -> str:
    value = "" if text is None else str(text)
    return value[:limit] + "..." if len(value) > limit else value


def size_bytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def ms(seconds: float) -> float:
    return round(seconds * 1000, 2)


# --- memory.store -------------------------------------------------------------------------------
def store_event(doc: Mapping[str, Any], memory_id: str, elapsed_s: float) -> dict[str, Any]:
    content = doc.get("content", "")
    return {
        "id": memory_id, "content_preview": preview(content), "type": doc.get("type"),
        "importance": doc.get("importance"), "tags": list(doc.get("tags") or [])[:EVENT_TAGS],
        "size_bytes": size_bytes(content), "elapsed_ms": ms(elapsed_s), "count": 1,
    }


def store_log(doc: Mapping[str, Any], memory_id: str, elapsed_s: float, embedding_status: str) -> dict[str, Any]:
    return {
        "memory_id": memory_id, "type": doc.get("type"), "importance": doc.get("importance"),
        "tags_count": len(doc.get("tags") or []), "content_length": len(doc.get("content", "")),
        "latency_ms": ms(elapsed_s), "embedding_status": embedding_status, "storage_status": "stored",
    }


def batch_event(stored: Sequence[tuple[str, Mapping[str, Any]]], elapsed_s: float) -> dict[str, Any]:
    return {
        "count": len(stored), "ids": [mid for mid, _ in stored][:BATCH_IDS],
        "content_preview": preview(stored[0][1].get("content", "")) if stored else "",
        "elapsed_ms": ms(elapsed_s),
    }


def batch_log(requested: int, stored: int, elapsed_s: float) -> dict[str, Any]:
    failed = requested - stored
    return {
        "count": stored, "requested": requested, "failed_count": failed, "latency_ms": ms(elapsed_s),
        "storage_status": "stored" if not failed else ("partial" if stored else "failed"),
    }


# --- memory.update / memory.delete ---------------------------------------------------------------
def update_event(memory_id: str, memory: Mapping[str, Any], fields: Sequence[str]) -> dict[str, Any]:
    return {
        "id": memory_id, "content_preview": preview(memory.get("content")), "type": memory.get("type"),
        "importance": memory.get("importance"), "tags": list(memory.get("tags") or [])[:EVENT_TAGS],
        "fields": sorted(fields),
    }


def delete_event(memory_id: str) -> dict[str, Any]:
    return {"id": memory_id, "count": 1}


def delete_by_tag_event(tags: Sequence[str], count: int) -> dict[str, Any]:
    return {"count": count, "tags": list(tags)}


# --- memory.associate -----------------------------------------------------------------------------
def associate_event(body: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "memory1_id": body.get("memory1_id"), "memory2_id": body.get("memory2_id"),
        "relation_type": body.get("relation_type"), "strength": body.get("strength"), "count": 1,
    }


def associate_batch_event(body: Mapping[str, Any]) -> dict[str, Any]:
    types = sorted({s.get("relation_type") for s in body.get("succeeded", []) if s.get("relation_type")})
    return {"count": body.get("created_count", 0), "failed_count": body.get("failed_count", 0), "relation_types": types}


# --- memory.recall --------------------------------------------------------------------------------
def recall_event(query: str | None, limit: int, body: Mapping[str, Any], tags: Sequence[str]) -> dict[str, Any]:
    return {
        "query": preview(query) if query else query, "limit": limit, "result_count": body.get("count", 0),
        "elapsed_ms": body.get("query_time_ms"), "tags": list(tags),
    }


def recall_log(query: str | None, limit: int, body: Mapping[str, Any], tags: Sequence[str]) -> dict[str, Any]:
    """Never the query text: its length and whether there was one."""
    vector = body.get("vector_search") or {}
    return {
        "result_count": body.get("count", 0), "limit": limit, "latency_ms": body.get("query_time_ms"),
        "has_query": bool(query), "query_length": len(query or ""), "tags_count": len(tags),
        "state_mode": body.get("state_mode"), "vector_matched": vector.get("matched"),
        "expanded_count": (body.get("expansion") or {}).get("expanded_count", 0),
    }
