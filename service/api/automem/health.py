"""GET /health (AutoMem's: `status`, `memory_count`, `vector_count`, `sync_status`, `enrichment`) and
GET /ready (for orchestrators).

/health is "degraded" while the engine is unreachable or red, or while memories of the default bank
have no vector (`sync_status` "drift_detected", as AutoMem reports a vector store behind its graph):
recall finds those by keyword only until the sync worker (service/admin/vector_repair.py) or `engram
reembed` restores them. /ready ignores that drift: an orchestrator restarting the service would not
fix it.

Both are open and answer fast whatever the engine does: the engine check runs on threads of its own
(a frozen engine can block every handler thread; health must not queue behind them) and gets
HEALTH_TIMEOUT_SECONDS. Neither ever echoes engine addresses or exception text.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Annotated

import anyio
from fastapi import APIRouter, Depends
from opensearchpy import OpenSearch
from opensearchpy.exceptions import ConnectionTimeout
from service.api.responses import SafeJSONResponse as JSONResponse  # never fails on odd echoed input

from service import __version__
from service.api.deps import ClientDep, EdgesDep, EmbedderDep, EnrichmentDep, SettingsDep, StoreDep
from service.api.errors import error_body
from service.config import Settings
from service.storage.edges import EdgeStore
from service.storage.memories import MemoryStore
from service.filters.clauses import count_query
from service.storage.health import cluster_health, memory_counts, memory_counts_body, sync_status
from service.clock.instants import iso, utcnow

router = APIRouter(tags=["health"])
log = logging.getLogger("engram.health")

# Engine checks never use the handlers' thread pool: a few threads of their own, enough for probes.
_PROBE_THREADS = anyio.CapacityLimiter(4)


@dataclass(frozen=True)
class Engine:
    """What the probe reads: the engine and the default bank's counts (health is open: no bank scope)."""

    settings: Settings
    client: OpenSearch
    memories: MemoryStore
    edges: EdgeStore


async def _engine(settings: SettingsDep, client: ClientDep, memories: StoreDep, edges: EdgesDep) -> Engine:
    return Engine(settings, client, memories, edges)


def _probe(engine: Engine) -> dict:
    settings = engine.settings
    timeout = settings.health_timeout_seconds
    # RECALL_EXCLUDED_TYPES apply to both counts (spec 000 "Internal Artifact Type Exclusion").
    memories, vectors = memory_counts(engine.memories.search(memory_counts_body(count_query(settings.default_bank, settings.excluded_types))))
    return {**cluster_health(engine.client, timeout), "memory_count": memories, "vector_count": vectors, "edge_count": engine.edges.count(settings.default_bank)}


async def _check(engine: Engine) -> tuple[dict | None, str | None]:
    """(probe result, None) or (None, a reason fit for clients)."""
    timeout = engine.settings.health_timeout_seconds
    try:
        with anyio.fail_after(timeout):
            return await anyio.to_thread.run_sync(_probe, engine, limiter=_PROBE_THREADS, abandon_on_cancel=True), None
    except TimeoutError:
        return None, f"OpenSearch did not answer within {timeout:g} s"
    except Exception as exc:  # noqa: BLE001 - health answers whatever the engine does
        # The client's own request timeout (the same length) can fire first: the same cause.
        if isinstance(exc, ConnectionTimeout) or isinstance(exc.__cause__, ConnectionTimeout):
            return None, f"OpenSearch did not answer within {timeout:g} s"
        log.warning("health check: engine unreachable (%s)", type(exc).__name__)
        return None, "OpenSearch is unreachable"


# HEAD too: uptime monitors and load balancers probe with it (the body is not sent).
@router.get("/health")
@router.head("/health", include_in_schema=False)
async def health(engine: Annotated[Engine, Depends(_engine)], embedder: EmbedderDep, enrichment: EnrichmentDep) -> dict:
    settings = engine.settings
    body: dict = {
        "status": "healthy",
        "timestamp": iso(utcnow()),
        "version": __version__,
        "memory_count": None,
        "vector_count": None,
        "sync_status": sync_status(None, None),
        "edge_count": None,
        "opensearch": {"connected": False, "cluster_status": None, "memories_index": settings.memories_alias},
        "embedding": {"model": embedder.short_name, "vector_size": embedder.dimension},
        "vector_size": embedder.dimension,
        "enrichment": enrichment.health(),
    }
    probe, problem = await _check(engine)
    if probe is None:
        body["status"] = "degraded"
        body["opensearch"]["error"] = problem
        return body
    body["opensearch"].update(connected=True, cluster_status=probe["cluster_status"], cluster_name=probe["cluster_name"])
    body["memory_count"], body["vector_count"], body["edge_count"] = probe["memory_count"], probe["vector_count"], probe["edge_count"]
    body["sync_status"] = sync_status(probe["memory_count"], probe["vector_count"])
    if probe["cluster_status"] == "red" or body["sync_status"] == "drift_detected":
        body["status"] = "degraded"
    return body


@router.get("/ready", responses={503: {"description": "The engine is unreachable or red"}})
@router.head("/ready", include_in_schema=False)
async def ready(engine: Annotated[Engine, Depends(_engine)]):
    """200 when the engine answers and is not red, else 503: for load balancers and orchestrators."""
    probe, problem = await _check(engine)
    if probe is None or probe["cluster_status"] == "red":
        return JSONResponse(error_body(503, problem or "OpenSearch cluster status is red"), status_code=503)
    return {"status": "ready", "cluster_status": probe["cluster_status"]}
