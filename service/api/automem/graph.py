"""GET /memories/{id}/related (spec 003). Thin: parse the parameters, walk the graph, shape the answer."""

from __future__ import annotations

from fastapi import APIRouter

from service.api.deps import ApiAuth, EdgesDep, SettingsDep, StoreDep
from service.api.scope import ReadScope
from service.api.responses import public_memory
from service.errors import BadRequest, NotFound
from service.graph.walk import MAX_LIMIT, related_memories
from service.graph.registry import ALL_TYPES, AUTHORABLE_TYPES
from service.api.error_docs import ERROR_RESPONSES, NOT_FOUND
from service.api.automem.graph_models import RelatedQuery, RelatedResponse
from service.api.query_model import query_params
from service.memory.models import valid_id

router = APIRouter(dependencies=[ApiAuth], tags=["graph"])
RelatedParams = query_params(RelatedQuery)


@router.get("/memories/{memory_id}/related", response_model=RelatedResponse, responses={**ERROR_RESPONSES, **NOT_FOUND})
def related(memory_id: str, scope: ReadScope, store: StoreDep, edges: EdgesDep, settings: SettingsDep, params: RelatedParams) -> dict:
    """Memories reachable from `memory_id` within `max_depth` edges (either direction), importance first."""
    requested = [t.upper() for t in params.relationship_types]
    unknown = [t for t in requested if t not in ALL_TYPES]
    if unknown:
        raise BadRequest(f"Invalid relationship_types: {', '.join(unknown)}; expected any of {', '.join(ALL_TYPES)}")
    types = list(dict.fromkeys(requested)) or list(AUTHORABLE_TYPES)
    limit = min(params.limit or settings.recall_relation_limit, MAX_LIMIT)  # clamped like recall's limit, not refused
    if not valid_id(memory_id) or not store.existing(scope.bank, [memory_id]):
        raise NotFound(f"Memory {memory_id} not found")
    found = related_memories(store, edges, scope.bank, memory_id, types, params.max_depth, limit)
    items = [
        {**public_memory(r.id, source), "depth": r.depth, "path": r.path, "relation": r.relation}
        for r, source in found
    ]
    body = {
        "status": "success", "memory_id": memory_id, "count": len(items), "related_memories": items,
        "relationship_types": types, "max_depth": params.max_depth, "limit": limit,
    }
    if params.warnings:
        body["warnings"] = params.warnings
    return body
