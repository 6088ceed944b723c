"""GET /health: open, cheap, and honest about what is down (AutoMem clients read status and memory_count)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from service import __version__
from service.errors import EngramError
from service.writes import iso, utcnow

router = APIRouter(tags=["health"])


@router.get("/health")
def health(request: Request) -> dict:
    state = request.app.state
    settings = state.settings
    body: dict = {
        "status": "healthy",
        "timestamp": iso(utcnow()),
        "version": __version__,
        "memory_count": None,
        "edge_count": None,
        "opensearch": {"connected": False, "cluster_status": None, "memories_index": settings.memories_alias},
        "embedding": {"model": state.embedder.short_name, "vector_size": state.embedder.dimension},
        "vector_size": state.embedder.dimension,
    }
    try:
        cluster = state.client.cluster.health(request_timeout=5)
        body["opensearch"].update(connected=True, cluster_status=cluster.get("status"), cluster_name=cluster.get("cluster_name"))
        excluded = settings.excluded_types
        query = {"bool": {"filter": [{"term": {"bank": settings.default_bank}}], "must_not": [{"terms": {"type": excluded}}] if excluded else []}}
        body["memory_count"] = state.memories.count(query)
        body["edge_count"] = state.edges.count()
        if cluster.get("status") == "red":
            body["status"] = "degraded"
    except EngramError as exc:
        body["status"] = "degraded"
        body["opensearch"]["error"] = exc.message
    except Exception as exc:  # noqa: BLE001 - health must answer whatever the engine does
        body["status"] = "degraded"
        body["opensearch"]["error"] = f"{type(exc).__name__}: {exc}"
    return body
