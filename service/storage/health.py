"""The engine's health as /health and /ready report it: one cluster-health call, bounded in time, and
the default bank's memory and vector counts (AutoMem's `memory_count`, `vector_count`, `sync_status`)."""

from __future__ import annotations

from typing import Literal

from opensearchpy import OpenSearch

from service.filters.clauses import HAS_VECTOR

SyncStatus = Literal["synced", "drift_detected", "unknown"]
_VECTORS = "vectors"


def cluster_health(client: OpenSearch, timeout: float) -> dict:
    """{"cluster_status": green | yellow | red, "cluster_name": ...}; the client's exceptions pass
    through (the caller turns any failure into "unreachable" or "did not answer in time")."""
    cluster = client.cluster.health(request_timeout=timeout)
    return {"cluster_status": cluster.get("status"), "cluster_name": cluster.get("cluster_name")}


def memory_counts_body(query: dict) -> dict:
    """The memories `query` selects, and how many of them have a vector, in one size-0 search. A memory
    has none when an update made in the engine directly re-indexed it without (the index keeps vectors
    out of `_source`): recall's vector arm cannot find it until `engram reembed` restores it."""
    return {"size": 0, "query": query, "track_total_hits": True, "aggs": {_VECTORS: {"filter": HAS_VECTOR}}}


def memory_counts(response: dict) -> tuple[int, int]:
    """(memories, memories with a vector) from a `memory_counts_body` search."""
    return int(response["hits"]["total"]["value"]), int(response["aggregations"][_VECTORS]["doc_count"])


def sync_status(memories: int | None, vectors: int | None) -> SyncStatus:
    """AutoMem's `sync_status` of /health: its vector store holds one point per memory ("synced") or
    fewer ("drift_detected"). Here the vector is a field of the memory, so there are never more."""
    if memories is None or vectors is None:
        return "unknown"
    return "synced" if vectors >= memories else "drift_detected"
