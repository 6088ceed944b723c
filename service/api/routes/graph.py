"""GET /memories/{id}/related (spec 003). Thin: parse the parameters, walk the graph, shape the answer."""

from __future__ import annotations

from fastapi import APIRouter, Request

from service.api.deps import ApiAuth, EdgesDep, SettingsDep, StoreDep
from service.api.routes.memory import public_memory
from service.errors import BadRequest, NotFound
from service.related import MAX_DEPTH, MAX_LIMIT, MIN_DEPTH, related_memories
from service.relations import ALL_TYPES, AUTHORABLE_TYPES
from service.schemas.graph import RelatedResponse
from service.tags import split_list_param
from service.schemas.memory import valid_id

router = APIRouter(dependencies=[ApiAuth], tags=["graph"])


def _int(request: Request, name: str, default: int) -> int:
    raw = request.query_params.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        return int(raw.strip())
    except ValueError:
        raise BadRequest(f"Invalid {name}: expected an integer, got {raw!r}") from None


@router.get("/memories/{memory_id}/related", response_model=RelatedResponse)
def related(memory_id: str, request: Request, store: StoreDep, edges: EdgesDep, settings: SettingsDep) -> dict:
    """Memories reachable from `memory_id` within `max_depth` edges (either direction), importance first.

    `relationship_types` (repeated or comma-separated) defaults to the 11 authorable types; the system
    types SIMILAR_TO, PRECEDED_BY and DISCOVERED are followed only when named.
    """
    qp = request.query_params
    requested = [t.upper() for t in split_list_param(qp.getlist("relationship_types"))]
    unknown = [t for t in requested if t not in ALL_TYPES]
    if unknown:
        raise BadRequest(f"Invalid relationship_types: {', '.join(unknown)}; expected any of {', '.join(ALL_TYPES)}")
    types = list(dict.fromkeys(requested)) or list(AUTHORABLE_TYPES)
    max_depth = _int(request, "max_depth", MIN_DEPTH)
    if not MIN_DEPTH <= max_depth <= MAX_DEPTH:
        raise BadRequest(f"Invalid max_depth: must be between {MIN_DEPTH} and {MAX_DEPTH}, got {max_depth}")
    limit = _int(request, "limit", settings.recall_relation_limit)
    if limit < 1:
        raise BadRequest(f"Invalid limit: must be >= 1, got {limit}")
    limit = min(limit, MAX_LIMIT)  # clamped like recall's limit, not refused
    if not valid_id(memory_id) or not store.existing([memory_id]):
        raise NotFound(f"Memory {memory_id} not found")
    found = related_memories(store, edges, memory_id, types, max_depth, limit)
    items = [
        {**public_memory(r.id, source), "depth": r.depth, "path": r.path, "relation": r.relation}
        for r, source in found
    ]
    return {
        "status": "success", "memory_id": memory_id, "count": len(items), "related_memories": items,
        "relationship_types": types, "max_depth": max_depth, "limit": limit,
    }
