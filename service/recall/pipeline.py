"""The recall pipeline: one `_msearch` for every arm, the pure re-ranker, filters, response shaping.

request -> RecallRequest -> filter + arms (queries.py) -> one msearch -> candidates -> scoring/
-> anchors / priority ids -> score filter -> recency bias -> sort -> trim -> response.
Graph expansion and supersession resolution plug in after scoring (see `expand`).
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from scoring.context import ContextProfile, build_context_profile, matches_profile
from scoring.floors import apply_score_filter, content_fingerprint, has_temporal_intent, recency_bias
from scoring.keywords import extract_keywords, topic_keywords
from scoring.rerank import Candidate, ScoredCandidate, ScoringRequest, rank, sort_scored
from scoring.weights import RecencyConfig, Weights
from service.config import Settings
from service.embedding import Embedder, EmbeddingError
from service.recall import queries as Q
from service.recall import state
from service.recall.expansion import COSINE_KEY, ExpansionOutcome, ExpansionRequest, GraphExpander
from service.recall.request import RecallRequest
from service.storage.edges import EdgeStore
from service.storage.memories import MemoryStore
from service.tags import hierarchy_key
from service.timeparse import stored_datetime
from service.timeparse import iso

log = logging.getLogger("engram.recall")

# The keyword arm digs deeper than the limit so every plausible lexical candidate is re-ranked.
KEYWORD_ARM_MIN = 50
# Tag-scoped queries widen the vector pool (spec 000 "Vector Candidate Over-fetch"), still capped.
TAG_SCOPE_WIDEN = 2
# Memory fields returned in `memory` (AutoMem returns the stored record without the vector).
MEMORY_FIELDS = (
    "content", "tags", "tag_prefixes", "importance", "confidence", "type", "timestamp", "updated_at",
    "last_accessed", "t_valid", "t_invalid", "archived", "metadata", "relevance_score",
    "superseded_by", "superseded_at", "supersede_type",  # supersession state (history mode shows it)
)


def weights_from(settings: Settings) -> Weights:
    return Weights(
        vector=settings.search_weight_vector, keyword=settings.search_weight_keyword,
        metadata=settings.search_weight_metadata, exact=settings.search_weight_exact,
        importance=settings.search_weight_importance, confidence=settings.search_weight_confidence,
        recency=settings.search_weight_recency, tag=settings.search_weight_tag,
        relation=settings.search_weight_relation, relevance=settings.search_weight_relevance,
        temporal=settings.search_weight_temporal,
    )


@dataclass
class Timings:
    stages: dict[str, float] = field(default_factory=dict)
    _t: float = field(default_factory=time.perf_counter)

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.stages[name] = round(self.stages.get(name, 0.0) + (now - self._t) * 1000, 3)
        self._t = now


@dataclass
class Hit:
    """One memory as the arms saw it, before it becomes a scoring Candidate."""

    id: str
    source: dict
    cosine: float | None = None
    bm25: float | None = None
    arms: set[str] = field(default_factory=set)

    def absorb(self, hit: dict, arm: str) -> None:
        score = hit.get("_score")
        self.arms.add(arm)
        cosine = hit.get("fields", {}).get("cosine")
        if cosine:  # the arm's script field (queries.with_cosine)
            self.cosine = float(cosine[0])
        if arm in ("vector", "fallback") and score is not None:
            self.cosine = 2.0 * float(score) - 1.0  # Lucene cosinesimil score is (1 + cos) / 2
        elif arm == "keyword" and score is not None:
            self.bm25 = float(score)

    def match_type(self, default: str) -> str:
        for arm in ("vector", "keyword", "metadata", "priority", "trending", "anchor", "fallback"):
            if arm in self.arms:
                return {"priority": "priority_id", "anchor": default, "fallback": "vector", "trending": default}.get(arm, arm)
        return default

    def candidate(self, default_match: str) -> Candidate:
        s = self.source
        return Candidate(
            id=self.id,
            content=s.get("content", ""),
            tags=tuple(s.get("tags") or ()),
            type=s.get("type"),
            importance=s.get("importance"),
            confidence=s.get("confidence"),
            relevance_score=s.get("relevance_score"),
            timestamp=stored_datetime(s.get("timestamp")),
            updated_at=stored_datetime(s.get("updated_at")),
            metadata=s.get("metadata") or {},
            vector_cosine=self.cosine,
            bm25=self.bm25,
            in_vector_arm="vector" in self.arms or "fallback" in self.arms,
            in_keyword_arm="keyword" in self.arms,
            in_metadata_arm="metadata" in self.arms,
            match_type=self.match_type(default_match),
        )


@dataclass
class QueryOutcome:
    """What one query (of possibly several) produced."""

    ranked: list[ScoredCandidate]
    keywords: list[str]
    vector_search: dict
    pool_size: int | None
    score_filter: dict | None
    fallback_ids: set[str]
    injected: bool
    hits: dict[str, Hit]
    # What graph expansion needs to score expanded memories like the seeds.
    scoring: ScoringRequest | None = None
    vector: list[float] | None = None


class RecallService:
    def __init__(self, settings: Settings, store: MemoryStore, embedder: Embedder, edges: EdgeStore | None = None):
        self.settings = settings
        self.store = store
        self.embedder = embedder
        self.expander = GraphExpander(store, edges) if edges is not None else None
        self.weights = weights_from(settings)
        self.recency = RecencyConfig(settings.search_recency_window_days, settings.search_recency_curve)

    # --- filters ----------------------------------------------------------------------------
    def build_filter(self, p: RecallRequest, now: datetime) -> Q.RecallFilter:
        extra: list[dict] = []
        extra_not: list[dict] = []
        if p.state_mode == "current":
            # Current state, inside OpenSearch (service/recall/state.py): not yet valid and expired
            # memories never reach a page; superseded ones do, so their chain's head can take their
            # place. state_debug moves the validity rules to Python so each suppression is named.
            extra_not += state.candidate_must_not(p.as_of or now, in_python=p.state_debug)
        return Q.RecallFilter(
            bank=p.bank,
            tags=tuple(p.tags), tag_mode=p.tag_mode, tag_match=p.tag_match,
            exclude_tags=tuple(p.exclude_tags),
            start=p.window.start if p.window else None, end=p.window.end if p.window else None,
            excluded_types=tuple(self.settings.excluded_types),
            extra=tuple(extra), extra_must_not=tuple(extra_not),
        )

    def fetch_k(self, limit: int, scoped: bool) -> int:
        s = self.settings
        k = max(limit, min(limit * s.recall_vector_overfetch, s.recall_vector_fetch_cap))
        if scoped:
            k = max(k, min(k * TAG_SCOPE_WIDEN, s.recall_vector_fetch_cap))
        return k

    # --- graph and lifecycle (issue 4; service/recall/state.py, expansion.py) -------------------
    def current_state(
        self, p: RecallRequest, ranked: list[ScoredCandidate], sources: dict[str, dict], now: datetime, page: int | None = None
    ) -> state.StateOutcome:
        """Suppress what is not current; supersession chains resolve to their head, one lookup per hop."""
        at = p.as_of or now
        # A head must pass everything a seed passes, and be strictly current.
        head_filter = {"bool": {"filter": [Q.filter_clauses(self.build_filter(p, now))], "must_not": state.active_must_not(at)}}

        def lookup(ids: list[str]) -> dict[str, tuple[dict, bool]]:
            query = {"bool": {
                "filter": [{"term": {"bank": p.bank}}, {"ids": {"values": ids}}],
                "should": [{"bool": {"filter": [head_filter], "_name": "head"}}],
            }}
            hits = self.store.search({"size": len(ids), "_source": {"excludes": Q.SOURCE_EXCLUDES}, "query": query})["hits"]["hits"]
            return {h["_id"]: (h["_source"], "head" in h.get("matched_queries", ())) for h in hits}

        return state.apply_current_state(ranked, sources, at, lookup, lambda mid, source, match: Hit(mid, source).candidate(match), page=page)

    def expand(self, p: RecallRequest, seeds: list[ScoredCandidate], sources: dict[str, dict], first: QueryOutcome, now: datetime) -> ExpansionOutcome:
        if self.expander is None or not (p.expand_relations or p.expand_entities) or first.scoring is None:
            return ExpansionOutcome()
        # Expanded memories pass the seeds' filters (time window, exclude_tags, excluded types) and
        # are strictly current; the tag scope applies only with expand_respect_tags (spec 000).
        flt = Q.filter_clauses(self.build_filter(p, now), scoped=p.expand_respect_tags)
        if p.state_mode == "current":
            flt = {"bool": {"filter": [flt], "must_not": state.active_must_not(p.as_of or now)}}
        req = ExpansionRequest(
            relations=p.expand_relations, entities=p.expand_entities, relation_limit=p.relation_limit,
            expansion_limit=p.expansion_limit, min_importance=p.expand_min_importance, min_strength=p.expand_min_strength,
            respect_tags=p.expand_respect_tags, min_score=p.min_score, text=first.scoring.query or None, vector=first.vector,
        )

        def make_candidates(items, match_type: str) -> list[Candidate]:
            return [Hit(mid, dict(source), cosine=source.get(COSINE_KEY)).candidate(match_type) for mid, source in items]

        return self.expander.expand(req, seeds, sources, flt, first.scoring, make_candidates)

    # --- one query ------------------------------------------------------------------------------
    def run_query(
        self, p: RecallRequest, query: str | None, limit: int, now: datetime, timings: Timings,
        profile: ContextProfile | None,
    ) -> QueryOutcome:
        flt_spec = self.build_filter(p, now)
        flt = Q.filter_clauses(flt_spec)
        scoped = bool(p.tags)
        text = query if query and query != "*" else None
        lexical = Q.lexical_text(text) if text else None
        keywords = extract_keywords(lexical) if lexical else []

        vector: list[float] | None = p.embedding
        vector_search = {"enabled": True, "matched": False}
        if vector is None and text:
            try:
                vector = self.embedder.embed_query(text)
            except EmbeddingError as exc:
                log.warning("query embedding failed; degrading to keyword + metadata: %s", exc)
                vector_search = {"enabled": False, "matched": False, "error": f"embedding failed: {exc}; keyword and metadata search only"}
        timings.lap("embed")

        arms: list[tuple[str, dict]] = []
        k = self.fetch_k(limit, scoped)
        if vector is not None:
            arms.append(("vector", Q.knn_arm(vector, k, flt)))
        if text:
            arms.append(("keyword", Q.with_cosine(Q.keyword_arm(lexical, max(k, KEYWORD_ARM_MIN), flt), vector)))
            if self.settings.recall_metadata_search_enabled:
                arms.append(("metadata", Q.with_cosine(Q.metadata_arm(lexical, keywords, max(1, min(limit, 10)), flt), vector)))
        if vector is None and not text:
            arms.append(("trending", Q.trending_arm(max(limit, 1), flt, p.sort)))
        if p.priority_ids:
            arms.append(("priority", Q.with_cosine(Q.ids_arm(p.priority_ids, flt), vector)))
        if profile is not None and profile.require_injection:
            anchor = Q.anchor_arm(
                max(1, min(limit, 3)), flt, [hierarchy_key(t) for t in profile.context_tags], profile.context_types
            )
            if anchor:
                arms.append(("anchor", Q.with_cosine(anchor, vector)))
        if p.scope_fallback and scoped and vector is not None:
            unscoped = Q.filter_clauses(flt_spec, scoped=False)
            # Fills never include in-scope memories: they are in scope by definition.
            unscoped["bool"]["must_not"] = unscoped["bool"]["must_not"] + Q.tag_clauses(p.tags, "any", p.tag_match)
            arms.append(("fallback", Q.knn_arm(vector, max(limit, 1), unscoped)))
        idf_needed = bool(text and keywords and p.scoring_profile == "engram" and self.settings.search_keyword_mode == "idf")
        if idf_needed:
            arms.append(("count", Q.doc_count_arm(flt, None)))
            arms += [(f"df:{kw}", Q.doc_count_arm(flt, kw)) for kw in topic_keywords(keywords)]

        responses = self.store.msearch([body for _, body in arms])
        timings.lap("search")

        hits: dict[str, Hit] = {}
        counts: dict[str, int] = {}
        pool_size = None
        for (arm, _), resp in zip(arms, responses):
            if arm == "count" or arm.startswith("df:"):
                counts[arm] = int(resp["hits"]["total"]["value"])
                continue
            if arm == "vector":
                pool_size = len(resp["hits"]["hits"])
                vector_search["matched"] = pool_size > 0
            for h in resp["hits"]["hits"]:
                hit = hits.get(h["_id"])
                if hit is None:
                    hit = hits[h["_id"]] = Hit(h["_id"], h["_source"])
                hit.absorb(h, arm)

        idf: dict[str, float] = {}
        if idf_needed:
            n = counts.get("count", 0)
            for kw in topic_keywords(keywords):
                df = counts.get(f"df:{kw}", 0)
                idf[kw] = math.log(1.0 + (n - df + 0.5) / (df + 0.5)) if n else 0.0
        default_match = "trending" if not text and vector is None and not p.tags else ("tag" if not text and vector is None else "vector")
        cands = [h.candidate(default_match) for h in hits.values()]
        req = ScoringRequest(
            query=text or "", keywords=tuple(keywords), now=now, profile=p.scoring_profile,
            keyword_mode=self.settings.search_keyword_mode, idf=idf, max_bm25=max((c.bm25 or 0.0 for c in cands), default=0.0),
            weights=self.weights, recency=self.recency, context=profile,
            relevance_gate=self.settings.recall_relevance_gate,
        )
        ranked = rank(cands, req)
        fallback_ids = {h.id for h in hits.values() if h.arms == {"fallback"}}
        scoped_ranked = [s for s in ranked if s.candidate.id not in fallback_ids]
        fallback_ranked = [s for s in ranked if s.candidate.id in fallback_ids]

        # Anchors: when no scored result matches the context profile, keep up to min(limit, 3) that do.
        injected = False
        anchor_ids = {h.id for h in hits.values() if "anchor" in h.arms}
        non_anchor = [s for s in scoped_ranked if not (s.candidate.id in anchor_ids and len(hits[s.candidate.id].arms) == 1)]
        if anchor_ids and not any(_matches(profile, s) for s in non_anchor[:limit]):
            anchors = [s for s in scoped_ranked if s.candidate.id in anchor_ids][: max(1, min(limit, 3))]
            injected = bool(anchors)
            rest = [s for s in non_anchor if s.candidate.id not in {a.candidate.id for a in anchors}]
            scoped_ranked = anchors + rest
        else:
            scoped_ranked = non_anchor

        # priority_ids go first (before trimming), still subject to every filter and the score floor.
        if p.priority_ids:
            wanted = set(p.priority_ids)
            first = [s for s in scoped_ranked if s.candidate.id in wanted]
            scoped_ranked = first + [s for s in scoped_ranked if s.candidate.id not in wanted]

        kept, score_filter = (scoped_ranked, None)
        if p.sort == "score" and (text or vector is not None):
            kept, score_filter = apply_score_filter(scoped_ranked, p.min_score, p.adaptive_floor)
            if p.priority_ids:
                wanted = set(p.priority_ids)
                kept = [s for s in kept if s.candidate.id in wanted] + [s for s in kept if s.candidate.id not in wanted]
        elif p.min_score > 0:
            kept, score_filter = apply_score_filter(scoped_ranked, p.min_score, False)
        fallback_kept = [s for s in fallback_ranked if s.final_score >= p.min_score]
        timings.lap("score")
        return QueryOutcome(
            ranked=kept + fallback_kept, keywords=keywords, vector_search=vector_search, pool_size=pool_size,
            score_filter=score_filter, fallback_ids=fallback_ids, injected=injected, hits=hits,
            scoring=req, vector=vector,
        )

    # --- the whole request ---------------------------------------------------------------------
    def recall(self, p: RecallRequest, now: datetime, defer: Callable[..., None] | None = None) -> dict:
        started = time.perf_counter()
        timings = Timings()
        profile = build_context_profile(
            context_tags=p.context_tags, context_types=p.context_types, priority_ids=p.priority_ids,
            context=p.context, language=p.language, active_path=p.active_path, query=p.query,
        )
        query_list = list(p.queries)
        if p.query and p.query not in query_list:
            query_list.insert(0, p.query)
        if p.auto_decompose and p.query:
            query_list += [q for q in decompose(p.query) if q not in query_list]
        multi = len(query_list) > 1
        per_query = p.per_query_limit or p.limit

        outcomes = [self.run_query(p, q, per_query if multi else p.limit, now, timings, profile) for q in (query_list or [None])]
        merged, dedup_removed, deduped_from = merge_outcomes(outcomes) if multi else (outcomes[0].ranked, 0, {})
        if multi:
            merged = sort_scored(merged)

        # Graph (issue 4): the current-state filter runs on the whole candidate pool, before the trim,
        # so a superseded memory's head takes its place and suppressions never shorten the page.
        sources = {mid: h.source for o in outcomes for mid, h in o.hits.items()}
        graph_extras: dict[str, dict] = {}
        recency = p.sort == "score" and (p.recency_bias == "on" or (p.recency_bias == "auto" and any(has_temporal_intent(q) for q in query_list)))
        # The page is the first `limit` of this order unless a re-sort follows (recency, time sorts);
        # state_debug resolves every chain so it can report each one.
        page = p.limit if p.sort == "score" and not recency and not p.state_debug else None
        state_outcome = self.current_state(p, merged, sources, now, page) if p.state_mode == "current" else None
        if state_outcome is not None:
            merged = state_outcome.ranked
            graph_extras.update(state_outcome.extras)
        timings.lap("state")

        recency_applied = False
        if recency and merged:
            recency_applied = True
            fallback = set().union(*(o.fallback_ids for o in outcomes))
            scoped = recency_bias([s for s in merged if s.candidate.id not in fallback], self.weights.temporal)
            merged = scoped + [s for s in merged if s.candidate.id in fallback]
            if p.priority_ids:
                wanted = set(p.priority_ids)
                merged = [s for s in merged if s.candidate.id in wanted] + [s for s in merged if s.candidate.id not in wanted]

        if p.sort != "score":
            merged = sort_by_time(merged, p.sort)
        results = merged[: p.limit]
        timings.lap("rank")

        # Graph (issue 4): relation and entity expansion from the returned seeds; expanded memories
        # come after them (AutoMem returns seeds + expansions), within expansion_limit.
        expansion = self.expand(p, results, {**sources, **{k: v["source"] for k, v in graph_extras.items()}}, outcomes[0], now)
        graph_extras.update(expansion.extras)
        returned = results + expansion.results
        if p.expand_relations and self.expander is not None:
            for mid, relations in expansion.seed_relations.items():
                graph_extras.setdefault(mid, {}).setdefault("relations", relations)
            todo = [s.candidate.id for s in returned if "relations" not in graph_extras.get(s.candidate.id, {})]
            if todo:
                for mid, relations in self.expander.hydrate(todo, p.relation_limit).items():
                    graph_extras.setdefault(mid, {})["relations"] = relations
        timings.lap("expand")

        fallback_ids = set().union(*(o.fallback_ids for o in outcomes))
        hits = {}
        for o in outcomes:
            hits.update(o.hits)
        shaped = [shape_result(s, fallback_ids, deduped_from.get(s.candidate.id), hits, self.weights.temporal, graph_extras) for s in returned]
        # Access tracking for the seeds, in one bulk request; `defer` runs it after the response is sent.
        seeds = [s.candidate.id for s in results if s.candidate.id not in fallback_ids]
        seen = {mid: hits[mid].source.get("last_accessed") if mid in hits else None for mid in seeds}
        (defer or _call_now)(self.store.touch, seen, now)
        timings.lap("hydrate")

        first = outcomes[0]
        body: dict[str, Any] = {
            "status": "success",
            "query": p.query if p.query is not None else (query_list[0] if query_list else None),
            "results": shaped,
            "count": len(shaped),
            "dedup_removed": dedup_removed,
            "sort": p.sort,
            "state_mode": p.state_mode,
            "keywords": first.keywords if not multi else sorted({k for o in outcomes for k in o.keywords}),
            "vector_search": first.vector_search,
            "tag_mode": p.tag_mode,
            "tag_match": p.tag_match,
            "tags": p.tags,
            "exclude_tags": p.exclude_tags,
            "scoring_profile": p.scoring_profile,
        }
        if multi:
            body["queries"] = query_list
        if state_outcome is not None:
            body["state_filter"] = state_outcome.to_response(debug=p.state_debug)
            if p.as_of:
                body["state_filter"]["as_of"] = iso(p.as_of)
        if p.tags:
            pools = [o.pool_size for o in outcomes if o.pool_size is not None]
            body["tag_scope"] = {
                "filtered": True,
                "pool_size_hint": sum(pools) if pools else None,
                "gated_low_evidence": sum(1 for s in results if s.components.get("relevance_gated")),
            }
        if p.scope_fallback:
            body["scope_fallback"] = True
        filters = [o.score_filter for o in outcomes if o.score_filter]
        if filters:
            body["score_filter"] = filters[0] if len(filters) == 1 else {
                "min_score": filters[0]["min_score"],
                "adaptive_floor": [f["adaptive_floor"] for f in filters],
                "filtered_count": sum(f["filtered_count"] for f in filters),
            }
        if profile is not None:
            body["context_priority"] = profile.to_response(injected=any(o.injected for o in outcomes))
        if p.window is not None:
            body["time_window"] = p.window.to_response()
        if recency_applied:
            body["recency_bias"] = "on"
        body.update(expansion.response)
        if p.warnings:
            body["warnings"] = list(p.warnings)
        body["timings"] = timings.stages
        body["query_time_ms"] = round((time.perf_counter() - started) * 1000, 3)
        return body


def _call_now(fn: Callable[..., None], *args) -> None:
    fn(*args)


def _matches(profile: ContextProfile | None, s: ScoredCandidate) -> bool:
    c = s.candidate
    return matches_profile(profile, memory_id=c.id, tags=c.tags, type=c.type)


def merge_outcomes(outcomes: Sequence[QueryOutcome]) -> tuple[list[ScoredCandidate], int, dict[str, list[str]]]:
    """Merge several queries' results: dedupe by id, then by content fingerprint; the higher score wins."""
    by_id: dict[str, ScoredCandidate] = {}
    removed = 0
    for o in outcomes:
        for s in o.ranked:
            prev = by_id.get(s.candidate.id)
            if prev is not None:
                removed += 1
                if s.final_score > prev.final_score:
                    by_id[s.candidate.id] = s
            else:
                by_id[s.candidate.id] = s
    by_print: dict[str, ScoredCandidate] = {}
    deduped_from: dict[str, list[str]] = {}
    out: list[ScoredCandidate] = []
    for s in sorted(by_id.values(), key=lambda x: -x.final_score):
        fp = content_fingerprint(s.candidate.content)
        if fp and fp in by_print:
            removed += 1
            deduped_from.setdefault(by_print[fp].candidate.id, []).append(s.candidate.id)
            continue
        if fp:
            by_print[fp] = s
        out.append(s)
    return out, removed, deduped_from


_NAME = re.compile(r"\b([A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)\b")


def decompose(query: str) -> list[str]:
    """auto_decompose (spec 000): up to three topic keywords; with capitalised names (at most two),
    each name alone and combined with the topic keywords."""
    keywords = extract_keywords(query)
    first_word = query.split()[0] if query.split() else ""
    names = [n for n in dict.fromkeys(_NAME.findall(query)) if n != first_word or n.lower() not in {"what", "when", "where", "who", "how", "why", "did", "does", "is"}][:2]
    name_words = {w.lower() for n in names for w in n.split()}
    topics = [k for k in keywords if k not in name_words][:3]
    if not names:
        return topics
    out: list[str] = []
    for name in names:
        out.append(name)
        if topics:
            out.append(" ".join([name, *topics]))
    return out


def sort_by_time(items: list[ScoredCandidate], sort: str) -> list[ScoredCandidate]:
    def key(s: ScoredCandidate) -> float:
        c = s.candidate
        moment = c.updated_at or c.timestamp
        return moment.timestamp() if moment else float("-inf")

    desc = sort.endswith("_desc")
    dated = [s for s in items if (s.candidate.updated_at or s.candidate.timestamp)]
    undated = [s for s in items if not (s.candidate.updated_at or s.candidate.timestamp)]
    return sorted(dated, key=key, reverse=desc) + undated


def shape_result(
    s: ScoredCandidate, fallback_ids: set[str], deduped: list[str] | None, hits: dict[str, Hit], temporal_weight: float,
    graph: dict[str, dict] | None = None,
) -> dict:
    c = s.candidate
    # Graph stage additions (issue 4): the stored source of expanded / replacement memories (the arms
    # never returned them), their relations, state_replaces and expanded_from_entity.
    extra = (graph or {}).get(c.id, {})
    source = extra.get("source") or (hits[c.id].source if c.id in hits else {})
    memory = {k: source[k] for k in MEMORY_FIELDS if k in source}
    components = {k: (round(v, 6) if isinstance(v, float) else v) for k, v in s.components.items()}
    raw = c.vector_cosine if c.in_vector_arm and c.vector_cosine is not None else components.get("keyword", 0.0)
    out: dict[str, Any] = {
        "id": c.id,
        "memory": memory,
        "final_score": round(s.final_score, 6),
        "match_type": c.match_type,
        "score_components": components,
        "relations": [],
        # Bookkeeping fields AutoMem clients read (spec 000: "Result fields").
        "score": round(s.final_score, 6),
        "source": "opensearch",
        "match_score": round(float(raw), 6) if raw is not None else None,
        # The score before the relative-recency re-rank.
        "original_score": round(s.final_score - temporal_weight * float(s.components.get("temporal", 0.0)), 6),
    }
    if c.id in fallback_ids:
        out["outside_tag_scope"] = True
    if deduped:
        out["deduped_from"] = deduped
    out["relations"] = extra.get("relations", [])
    for key in ("state_replaces", "expanded_from_entity"):
        if key in extra:
            out[key] = extra[key]
    return out
