"""Shaping: ranked candidates into AutoMem's response (spec 000 "Standard Response Structure")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scoring.context import ContextProfile
from scoring.rerank import ScoredCandidate
from service.memory.index_only import CURATION_FIELDS, RANKING_FIELDS
from service.recall.request import RecallRequest
from service.clock.instants import iso

# Memory fields returned in `memory` (AutoMem returns the stored record without the vector).
MEMORY_FIELDS = (
    "content", "tags", "tag_prefixes", "importance", "confidence", "type", "timestamp", "updated_at",
    "last_accessed", "t_valid", "t_invalid", "archived", "metadata", "relevance_score",
    "superseded_by", "superseded_at", "supersede_type",  # supersession state (history mode shows it)
    "who", "pinned", "project",  # when stored (every write API takes them; Signet's recall returns them)
)


def _round(value: Any) -> Any:
    return round(value, 6) if isinstance(value, float) else value


# Stored fields never returned, even in detail (vectors; the derived lookup fields; the ranking aids
# scoring read from the same _source).
HIDDEN_FIELDS = ("embedding", "tags_norm", "metadata_terms", *RANKING_FIELDS, *CURATION_FIELDS)


def retrieval_detail(s: ScoredCandidate, arms: Sequence[str]) -> dict:
    """What the arms saw of one result: which surfaced it, its cosine if the vector arm did, its BM25
    if the keyword arm did (other surfaces report per-arm scores)."""
    c = s.candidate
    return {
        "arms": sorted(arms),
        "semantic": round(float(c.vector_cosine), 6) if c.in_vector_arm and c.vector_cosine is not None else None,
        "keyword": round(float(c.bm25), 6) if c.in_keyword_arm and c.bm25 is not None else None,
    }


def shape_result(
    s: ScoredCandidate, source: Mapping[str, Any], *, temporal_weight: float, outside_scope: bool = False,
    deduped: Sequence[str] | None = None, graph: Mapping[str, Any] | None = None, arms: Sequence[str] | None = None,
) -> dict:
    """One result. `graph` holds what the graph stages add: relations, state_replaces, expanded_from_entity.
    With `arms` (RecallRequest.detail), `memory` is the whole stored memory and `retrieval` says what
    the arms saw."""
    c = s.candidate
    extra = graph or {}
    components = {k: _round(v) for k, v in s.components.items()}
    raw = c.vector_cosine if c.in_vector_arm and c.vector_cosine is not None else components.get("keyword", 0.0)
    out: dict[str, Any] = {
        "id": c.id,
        "memory": {k: source[k] for k in MEMORY_FIELDS if k in source},
        "final_score": round(s.final_score, 6),
        "match_type": c.match_type,
        "score_components": components,
        "relations": list(extra.get("relations", [])),
        # Bookkeeping fields AutoMem clients read (spec 000: "Result fields").
        "score": round(s.final_score, 6),
        "source": "opensearch",
        "match_score": round(float(raw), 6) if raw is not None else None,
        # The score before the relative-recency re-rank.
        "original_score": round(s.final_score - temporal_weight * float(s.components.get("temporal", 0.0)), 6),
    }
    if outside_scope:
        out["outside_tag_scope"] = True
    if deduped:
        out["deduped_from"] = list(deduped)
    for key in ("state_replaces", "expanded_from_entity"):
        if key in extra:
            out[key] = extra[key]
    if arms is not None:
        out["memory"] = {k: v for k, v in source.items() if k not in HIDDEN_FIELDS}
        out["retrieval"] = retrieval_detail(s, arms)
    return out


@dataclass
class Diagnostics:
    """What the stages report besides the results."""

    keywords: list[str]
    vector_search: dict
    dedup_removed: int = 0
    pool_sizes: list[int] = field(default_factory=list)
    score_filters: list[dict] = field(default_factory=list)
    injected: bool = False
    gated_low_evidence: int = 0  # page results whose components RECALL_RELEVANCE_GATE ramped down
    recency_applied: bool = False
    state_filter: dict | None = None
    graph: dict = field(default_factory=dict)  # expansion / entity_expansion blocks


def response_body(
    req: RecallRequest, queries: Sequence[str], results: Sequence[dict], d: Diagnostics, profile: ContextProfile | None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "status": "success",
        "query": req.query if req.query is not None else (queries[0] if queries else None),
        "results": list(results),
        "count": len(results),
        "dedup_removed": d.dedup_removed,
        "sort": req.sort,
        "state_mode": req.state_mode,
        "keywords": d.keywords,
        "vector_search": d.vector_search,
        "tag_mode": req.tag_mode,
        "tag_match": req.tag_match,
        "tags": req.tags,
        "exclude_tags": req.exclude_tags,
        "scoring_profile": req.scoring_profile,
    }
    if len(queries) > 1:
        body["queries"] = list(queries)
    if d.state_filter is not None:
        body["state_filter"] = d.state_filter
        if req.as_of:
            body["state_filter"]["as_of"] = iso(req.as_of)
    if req.tags:
        body["tag_scope"] = {
            "filtered": True,
            "pool_size_hint": sum(d.pool_sizes) if d.pool_sizes else None,
            "gated_low_evidence": d.gated_low_evidence,
        }
    if req.scope_fallback:
        body["scope_fallback"] = True
    if d.score_filters:
        f = d.score_filters
        body["score_filter"] = f[0] if len(f) == 1 else {
            "min_score": f[0]["min_score"], "adaptive_floor": [x["adaptive_floor"] for x in f], "filtered_count": sum(x["filtered_count"] for x in f),
        }
    if profile is not None:
        body["context_priority"] = profile.to_response(injected=d.injected)
    if req.window is not None:
        body["time_window"] = req.window.to_response()
    if d.recency_applied:
        body["recency_bias"] = "on"
    body.update(d.graph)
    if req.warnings:
        body["warnings"] = list(req.warnings)
    return body
