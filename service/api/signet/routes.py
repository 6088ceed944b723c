"""Signet's recall surface (spec 004), thin: each route builds the one RecallRequest, runs
RecallService.recall (or one search), and shapes Signet's answer.

    POST /api/memory/recall         hybrid recall, session dedupe, date phrases, aggregate (partial)
    GET  /api/memory/search         the same as a query string
    GET  /memory/search             legacy keyword search, filters alone, or distinct=who
    GET  /memory/similar            the memories nearest to one memory's vector
    POST /api/hooks/compaction-complete   store the compaction summary; the session's next context epoch
    POST /api/memory/remember, GET /api/memory/{id}   write and read one memory (routes_memory.py)

Banks: Signet's `scope` (an exact memory-scope string such as `world:alpha`, in the body or the query
string) is the bank to read, as X-Bank / ?bank= are on every other route (service/api/scope.py); a
token scoped to banks sees only those (404 otherwise). Errors are Signet's `{"error": ...}`
(errors.py); unknown fields and parameters are named in `warnings`.
"""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from scoring.components import cosine_from_lucene
from service.api.deps import ApiAuth, LedgerDep, RecallDep, SettingsDep, StoreDep, WriterDep
from service.api.scope import SignetReadScope, SignetWriteScope
from service.api.responses import dumps
from service.api.signet import models as M
from service.api.signet import queries as SQ
from service.api.signet import routes_memory, shaping
from service.api.signet.dedupe import Dedupe, agent_of
from service.api.signet.temporal import Temporal, resolve
from service.api.signet.errors import SIGNET_ERRORS, SignetRoute
from service.errors import BadRequest, NotFound
from service.recall import queries as Q
from service.filters import clauses as C
from service.memory.models import MemoryCreate, valid_id
from service.stream.emit import EmitDep, Emitter
from service.clock.expressions import TimeWindow
from service.clock.instants import utcnow
from service.recall.pipeline import RecallService
from service.storage.ledger import RecallLedger

router = APIRouter(dependencies=[ApiAuth], tags=["signet"], route_class=SignetRoute, responses=SIGNET_ERRORS)
# spec 004 GET /memory/search: "default: 20 with query, 50 without".
LEGACY_LIMITS = (20, 50)
LEGACY_MAX = 1000
# Keys of M.filters() that say how filters apply, not whether one was given.
FILTER_MODES = ("tag_mode", "caller_tags_only")
# The compaction summary (Signet's hooks-routes: type session_summary, importance 0.8, who system).
SUMMARY_TYPE, SUMMARY_IMPORTANCE, SUMMARY_WHO = "session_summary", 0.8, "system"


def _recall(service: RecallService, ledger: RecallLedger, settings, emit: Emitter, bank: str, *,
            query: str, limit: int, filters: dict[str, Any], time_options: M.TimeOptions | None, session_key: str | None, agent_id: str | None,
            include_recalled: bool) -> dict[str, Any]:
    started = time.perf_counter()
    now = utcnow()
    query = M.checked(query, "query", M.MAX_QUERY_CHARS) or ""
    if not query:
        raise BadRequest("query is required")
    session_key = M.checked(session_key, "sessionKey", M.SESSION_KEY_CHARS)
    agent_id = M.checked(agent_id, "agentId", M.NAME_CHARS)
    try:
        temporal = resolve(query, time_options, now, settings.date_zone)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
    dedupe = Dedupe.begin(ledger, bank, session_key, agent_id, include_recalled, now)
    # detail: each result carries its whole stored memory, so its rows can leave out the derived tags.
    req = M.recall_request(settings, bank=bank, query=(temporal.content_query if temporal else query) or None, limit=limit,
                           values=filters, suppress_ids=dedupe.suppress_ids, detail=True, **_window(temporal))
    body = service.recall(req, now)
    rows = [shaping.row(r, temporal=temporal) for r in body["results"]]
    rows = dedupe.finish(rows, body.get("suppressed", 0), now)
    emit.recalled(req, body)
    stages = shaping.stage_timings(body.get("timings", {}), dedupe.timings)
    vector = body.get("vector_search") or {}
    out: dict[str, Any] = {
        "results": rows, "query": query, "method": "hybrid" if vector.get("enabled") else "keyword",
        "meta": shaping.meta(rows, total_ms=(time.perf_counter() - started) * 1000, stages=stages,
                             dedupe=shaping.dedupe_meta(dedupe.epoch, dedupe.suppressed, dedupe.repeated), temporal=temporal),
    }
    return out


def _window(t: Temporal | None) -> dict[str, Any]:
    if t is None:
        return {}
    sort = {"sort": "time_asc", "sort_given": True} if t.mode == "timeline" else {}
    return {"window": TimeWindow(t.start, t.end, t.phrase), "window_facets": t.facets, **sort}


def _json(body: dict[str, Any], warnings: list[str] | None = None) -> Response:
    """The answer; the unknown fields or parameters the request sent, named in `warnings` (README)."""
    if warnings:
        body = {**body, "warnings": warnings}
    return Response(dumps(body), media_type="application/json")


@router.post("/api/memory/recall", response_model=M.SignetRecallResponse)
def recall(body: M.SignetRecallBody, scope: SignetReadScope, service: RecallDep, ledger: LedgerDep, settings: SettingsDep,
           emit: EmitDep) -> Response:
    """Hybrid recall (vector, BM25 and metadata arms, re-ranked) with Signet's filters, session dedupe
    (`sessionKey`, `includeRecalled`), date phrases in the query or a `time` window, and aggregate mode
    (answered with aggregate.partial: no language model here)."""
    values = M.filters(settings, type_=body.type, tags=body.tags, who=body.who, project=body.project,
                       pinned=body.pinned, importance_min=body.importance_min, since=body.since, until=body.until)
    out = _recall(service, ledger, settings, emit, scope.bank, query=body.query or "", limit=M.bounded_limit(body.limit, M.DEFAULT_LIMIT, M.MAX_LIMIT),
                  filters=values, time_options=body.time, session_key=body.sessionKey,
                  agent_id=body.agentId, include_recalled=body.includeRecalled)
    if body.aggregate:
        out["aggregate"] = shaping.aggregate(out["query"], body.aggregateBudget, out["results"])
    return _json(out, warnings=body.warnings)


@router.get("/api/memory/search", response_model=M.SignetRecallResponse)
def search(params: Annotated[M.SearchQuery, Query()], scope: SignetReadScope, service: RecallDep, ledger: LedgerDep, settings: SettingsDep,
           emit: EmitDep) -> Response:
    """POST /api/memory/recall as a query string (spec 004: "GET-compatible alias"); `scope` names the bank."""
    values = M.filters(settings, type_=params.type, tags=params.tags, who=params.who, project=params.project,
                       pinned=params.pinned, importance_min=params.importance_min, since=params.since, until=params.until)
    out = _recall(service, ledger, settings, emit, scope.bank, query=params.q or "", limit=M.bounded_limit(params.limit, M.DEFAULT_LIMIT, M.MAX_LIMIT),
                  filters=values, time_options=None, session_key=params.sessionKey, agent_id=params.agentId,
                  include_recalled=params.includeRecalled)
    return _json(out, warnings=params.warnings)


@router.get("/memory/search")
def legacy_search(params: Annotated[M.LegacySearchQuery, Query()], scope: SignetReadScope, store: StoreDep, settings: SettingsDep) -> Response:
    """Keyword search (BM25) inside Signet's filters; filters alone list memories pinned first, then by
    importance decayed by age; `distinct=who` gives the bank's authors."""
    bank = scope.bank
    if (params.distinct or "").strip().lower() == "who":
        aggs = store.search(SQ.distinct_who(bank)).get("aggregations", {})
        return _json({"values": [b["key"] for b in aggs.get("who", {}).get("buckets", [])]})  # spec 004: other parameters are ignored
    now = utcnow()
    q = M.checked(params.q, "q", M.MAX_QUERY_CHARS)
    values = M.filters(settings, type_=params.type, tags=params.tags, who=params.who, project=None, pinned=params.pinned,
                       importance_min=params.importance_min, since=params.since, until=None)
    given = any(v is not None and v != [] for k, v in values.items() if k not in FILTER_MODES)
    if not q and not given:
        return _json({"results": []}, warnings=params.warnings)
    req = M.recall_request(settings, bank=bank, query=q, limit=1, values=values)
    flt = C.strictly_current(C.filter_clauses(Q.recall_filter(req, now, settings.excluded_types)), now)
    limit = M.bounded_limit(params.limit, LEGACY_LIMITS[0] if q else LEGACY_LIMITS[1], LEGACY_MAX)
    body = SQ.keyword_search(flt, q, limit) if q else SQ.filter_listing(flt, limit, now)
    hits = store.search(body)["hits"]["hits"]
    return _json({"results": [shaping.legacy_row(h["_id"], h["_source"], h.get("_score")) for h in hits]}, warnings=params.warnings)


@router.get("/memory/similar")
def similar(params: Annotated[M.SimilarQuery, Query()], scope: SignetReadScope, store: StoreDep, settings: SettingsDep) -> Response:
    """The `k` memories nearest to memory `id`'s stored vector: one kNN query (404 when it has none)."""
    anchor = M.checked(params.id, "id", 200)
    if not anchor:
        raise BadRequest("id is required")
    found = store.vectors(scope.bank, [anchor]) if valid_id(anchor) else {}
    if anchor not in found:
        raise NotFound(f"Memory {anchor} not found")
    vector = found[anchor][0]
    if vector is None:
        raise NotFound(f"Memory {anchor} has no stored embedding")
    now = utcnow()
    req = M.recall_request(settings, bank=scope.bank, query=None, limit=1, values={"types": M.type_filter(M.checked(params.type, "type", M.NAME_CHARS))})
    flt = C.strictly_current(C.filter_clauses(Q.recall_filter(req, now, settings.excluded_types)), now)
    hits = store.search(SQ.similar(flt, vector, anchor, M.bounded_limit(params.k, 10, M.MAX_LIMIT)))["hits"]["hits"]
    return _json({"results": [shaping.similar_row(h["_id"], h["_source"], cosine_from_lucene(h["_score"])) for h in hits]}, warnings=params.warnings)


@router.post("/api/hooks/compaction-complete")
def compaction_complete(body: M.CompactionComplete, scope: SignetWriteScope, writer: WriterDep, ledger: LedgerDep, emit: EmitDep) -> Response:
    """The harness compacted its context: the summary is stored (a session_summary memory) and the
    session's next context epoch starts, so what it was shown before can be recalled again (Signet's
    own way to start an epoch)."""
    harness = M.checked(body.harness, "harness", M.NAME_CHARS)
    if not harness or not body.summary.strip():
        raise BadRequest("harness and summary are required")
    session_key = M.checked(body.sessionKey, "sessionKey", M.SESSION_KEY_CHARS)
    create = MemoryCreate(content=body.summary, type=SUMMARY_TYPE, importance=SUMMARY_IMPORTANCE, who=SUMMARY_WHO,
                          project=M.checked(body.project, "project", M.NAME_CHARS), tags=["session", "summary", harness],
                          metadata={"source": "compaction-complete", "harness": harness, **({"session_key": session_key} if session_key else {})})
    prepared = writer.create(scope.bank, create)
    emit.stored(prepared, create)
    out: dict[str, Any] = {"success": True, "memoryId": prepared.memory_id}
    if session_key:
        agent = agent_of(M.checked(body.agentId, "agentId", M.NAME_CHARS), session_key)
        out["contextEpoch"] = ledger.advance(
            scope.bank, session_key, agent, reason="compaction-complete", source_ref=prepared.memory_id, now=utcnow(),
        )
    return _json(out, warnings=body.warnings)


# After /api/memory/recall and /api/memory/search: GET /api/memory/{memory_id} must not shadow them.
router.include_router(routes_memory.router)
