"""GET and DELETE /memory/by-tag (spec 003). Included before the memory router, or FastAPI would send
`/memory/by-tag` to GET /memory/{memory_id}."""

from __future__ import annotations

from fastapi import APIRouter, Request

from service.api.deps import ApiAuth, StoreDep, WriterDep
from service.api.routes.memory import public_memory
from service.errors import BadRequest
from service.schemas.graph import ByTagResponse, DeleteByTagResponse
from service.storage.memories import BY_TAG_SORT, by_tags_query
from service.stream.emit import EmitDep
from service.tags import split_list_param
from service.timeparse import utcnow

router = APIRouter(dependencies=[ApiAuth], tags=["memory"])

# spec 003 / AutoMem memories_by_tag: limit 20 by default, at most 200 (clamped).
DEFAULT_LIMIT, MAX_LIMIT = 20, 200
MAX_TAGS = 200
# from + size may not pass the engine's index.max_result_window (10,000 by default).
MAX_WINDOW = 10_000


def _tags(request: Request) -> list[str]:
    qp = request.query_params
    tags = split_list_param(qp.getlist("tags") + qp.getlist("tags[]"))
    if not tags:
        raise BadRequest("'tags' query parameter is required")
    if len(tags) > MAX_TAGS:
        raise BadRequest(f"Invalid tags: at most {MAX_TAGS} values, got {len(tags)}")
    return tags


def _int(request: Request, name: str, default: int, lo: int) -> int:
    raw = request.query_params.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise BadRequest(f"Invalid {name}: expected an integer, got {raw!r}") from None
    if value < lo:
        raise BadRequest(f"Invalid {name}: must be >= {lo}, got {value}")
    return value


@router.get("/memory/by-tag", response_model=ByTagResponse)
def memories_by_tag(request: Request, store: StoreDep) -> dict:
    """Every memory carrying any of `tags` (exact, case-insensitive), importance desc, timestamp desc, id."""
    tags = _tags(request)
    limit = min(_int(request, "limit", DEFAULT_LIMIT, 1), MAX_LIMIT)
    offset = _int(request, "offset", 0, 0)
    if offset + limit > MAX_WINDOW:
        raise BadRequest(f"offset + limit must be <= {MAX_WINDOW}; narrow the tags instead")
    page, total = store.page(by_tags_query(store.bank, tags), BY_TAG_SORT, size=limit, offset=offset)
    # AutoMem records the access of enumerated memories too (memories_by_tag on_access).
    store.touch({mid: source.get("last_accessed") for mid, source in page}, utcnow())
    return {
        "status": "success", "tags": tags, "count": len(page), "limit": limit, "offset": offset,
        "has_more": offset + len(page) < total, "memories": [public_memory(mid, source) for mid, source in page],
    }


@router.delete("/memory/by-tag", response_model=DeleteByTagResponse)
def delete_by_tag(request: Request, writer: WriterDep, emit: EmitDep) -> dict:
    """Delete every memory carrying any of `tags`, with their edges."""
    tags = _tags(request)
    report = writer.delete_by_tags(tags)
    emit.deleted_by_tag(tags, report.deleted, report.edges_deleted)
    return {
        "status": "success", "tags": tags, "deleted_count": report.deleted, "matched_count": report.matched,
        "edges_deleted": report.edges_deleted, "supersessions_cleared": report.supersessions_cleared,
    }
