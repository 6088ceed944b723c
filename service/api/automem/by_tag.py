"""GET and DELETE /memory/by-tag (spec 003). Included before the memory router, or FastAPI would send
`/memory/by-tag` to GET /memory/{memory_id}."""

from __future__ import annotations

from fastapi import APIRouter

from service.api.deps import AccessDep, ApiAuth, StoreDep, WriterDep
from service.api.scope import ReadScope, WriteScope
from service.api.responses import public_memory
from service.errors import BadRequest
from service.api.error_docs import ERROR_RESPONSES
from service.stream.emit import EmitDep
from service.api.automem.graph_models import BY_TAG_MAX_WINDOW, ByTagQuery, ByTagResponse, DeleteByTagResponse, TagsQuery
from service.api.query_model import query_params
from service.filters.clauses import BY_TAG_SORT, by_tags_query
from service.clock.instants import utcnow

router = APIRouter(dependencies=[ApiAuth], tags=["memory"])
ByTagParams, TagsParams = query_params(ByTagQuery), query_params(TagsQuery)


@router.get("/memory/by-tag", response_model=ByTagResponse, responses=ERROR_RESPONSES)
def memories_by_tag(scope: ReadScope, store: StoreDep, accesses: AccessDep, params: ByTagParams) -> dict:
    """Every memory carrying any of `tags` (exact, case-insensitive), importance desc, timestamp desc, id."""
    limit, offset = params.page_size, params.offset
    if offset + limit > BY_TAG_MAX_WINDOW:
        raise BadRequest(f"offset + limit must be <= {BY_TAG_MAX_WINDOW}; narrow the tags instead")
    page, total = store.page(by_tags_query(scope.bank, params.tags), BY_TAG_SORT, size=limit, offset=offset)
    # AutoMem records the access of enumerated memories too (memories_by_tag on_access); off the
    # request path, as recall does.
    now = utcnow()
    due = store.stale_accesses({mid: source.get("last_accessed") for mid, source in page}, now)
    if due:
        accesses.submit(scope.bank, due, now, {})
    body = {
        "status": "success", "tags": params.tags, "count": len(page), "limit": limit, "offset": offset,
        "has_more": offset + len(page) < total, "memories": [public_memory(mid, source) for mid, source in page],
    }
    if params.warnings:
        body["warnings"] = params.warnings
    return body


@router.delete("/memory/by-tag", response_model=DeleteByTagResponse, responses=ERROR_RESPONSES)
def delete_by_tag(scope: WriteScope, writer: WriterDep, emit: EmitDep, params: TagsParams) -> dict:
    """Delete every memory carrying any of `tags`, with their edges; says what it did."""
    report = writer.delete_by_tags(scope.bank, params.tags)
    emit.deleted_by_tag(params.tags, report.deleted, report.edges_deleted)
    return {
        "status": "success", "tags": params.tags, "deleted_count": report.deleted, "matched_count": report.matched,
        "edges_deleted": report.edges_deleted, "supersessions_cleared": report.supersessions_cleared,
    }
