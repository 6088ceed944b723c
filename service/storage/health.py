"""The engine's health as /health and /ready report it: one cluster-health call, bounded in time."""

from __future__ import annotations

from opensearchpy import OpenSearch


def cluster_health(client: OpenSearch, timeout: float) -> dict:
    """{"cluster_status": green | yellow | red, "cluster_name": ...}; the client's exceptions pass
    through (the caller turns any failure into "unreachable" or "did not answer in time")."""
    cluster = client.cluster.health(request_timeout=timeout)
    return {"cluster_status": cluster.get("status"), "cluster_name": cluster.get("cluster_name")}
