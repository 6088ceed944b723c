"""The recall pipeline: a RecallRequest in, AutoMem's response body out.

    per query:  embed -> arms (retrieval.plan_arms) -> ONE _msearch -> candidates -> scoring/ -> placement
    then:       merge queries -> current state (graph.current_state) -> recency / time order
                -> cross-encoder rerank (optional, recall.rerank) -> page
                -> graph expansion -> relations -> shaping -> access tracking (queued: storage/access_writer.py)

Every stage but the engine calls is a pure function of its module; `recall` reads as the list above.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from scoring.context import ContextProfile, build_context_profile
from scoring.floors import has_temporal_intent
from scoring.keywords import extract_keywords
from scoring.neighbours import neighbour_bonus
from scoring.rerank import ScoredCandidate, ScoringRequest, query_stems, rank, score_candidate, sort_scored
from scoring.weights import RecencyConfig, Weights
from service.config import Settings
from service.embedding import Embedder, EmbeddingError
from service.graph import current_state as state
from service.filters import clauses as C, tag_groups
from service.recall import lean as L, placement, queries as Q, retrieval, shaping
from service.graph.expansion import ExpansionOutcome, ExpansionRequest, GraphExpander, source_with_cosine
from service.recall.multi import merge, query_list
from service.clock.terms import query_date_terms
from service.recall.pool import Pool, QueryOutcome, arms_of, candidate_of, make_expanded, observation_members
from service.recall.request import RecallRequest
from service.recall.rerank import load_reranker
from service.storage.edges import EdgeStore
from service.storage.memories import VERSION_FIELDS, MemoryStore, Version, version_of

log = logging.getLogger("engram.recall")
# MemoryStore.touch's arguments: bank, {id: stored last_accessed}, now, {id: vector and version read}.
RecordAccess = Callable[[str, Mapping[str, str | None], datetime, Mapping[str, Version]], None]


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


class RecallService:
    def __init__(self, settings: Settings, store: MemoryStore, embedder: Embedder, edges: EdgeStore | None = None,
                 record_access: RecordAccess | None = None):
        self.settings = settings
        self.store = store
        # Where a recall's accesses go (MemoryStore.touch's arguments): the service's AccessWriter, which
        # writes them on its own thread; by default written before `recall` returns.
        self.record_access: RecordAccess = record_access or store.touch
        self.edges = edges
        self.embedder = embedder
        self.expander = GraphExpander(store, edges) if edges is not None else None
        self.weights = weights_from(settings)
        self.recency = RecencyConfig(settings.search_recency_window_days, settings.search_recency_curve)
        self.arm_options = retrieval.ArmOptions(
            overfetch=settings.recall_vector_overfetch, fetch_cap=settings.recall_vector_fetch_cap,
            metadata_search=settings.recall_metadata_search_enabled, idf=settings.search_keyword_mode == "idf",
            thread_context_boost=settings.search_thread_context_weight if settings.thread_context_enabled else 0.0,
        )
        self.reranker = load_reranker(settings.recall_rerank_model, top_n=settings.recall_rerank_top_n, weight=settings.recall_rerank_weight)

    # --- the whole request ---------------------------------------------------------------------
    def recall(self, req: RecallRequest, now: datetime) -> dict:
        """One recall in `req.bank`: every query of it filters on that bank (service/recall/queries.py)."""
        started, timings = time.perf_counter(), Timings()
        req = self.resolve_tags(req)
        # A page past the first is the same ranking of offset + limit results, sliced (AutoMem's clients
        # send offset): the stages below see the whole window.
        offset, asked = req.offset, req
        if offset:
            req = replace(req, limit=req.limit + offset, offset=0)
        profile = context_profile(req)
        queries = query_list(req)
        per_query = (req.per_query_limit or req.limit) if len(queries) > 1 else req.limit
        # One query's hits can be lean (service/recall/lean.py); merging several compares contents.
        lean = len(queries) <= 1 and self.reranker is None
        outcomes = [self.run_query(req, q, per_query, now, timings, profile, lean=lean) for q in (queries or [None])]
        merged, dedup_removed, deduped_from = self.merged(outcomes)
        pool = Pool.of(outcomes)
        margin = len(req.suppress_ids.intersection(pool.hits))  # suppressed candidates: the page reaches that much further
        recency = req.sort == "score" and (req.recency_bias == "on" or (req.recency_bias == "auto" and any(map(has_temporal_intent, queries))))
        merged, state_filter = self.current_state(req, merged, pool, outcomes[0], now, recency, margin)
        timings.lap("state")
        ordered, suppressed = placement.suppress(self.order(req, merged, pool, recency), req.suppress_ids, req.limit)
        timings.lap("rank")
        if req.prefer_observations:
            self.hydrate(pool, [s.candidate.id for s in ordered if s.candidate.type == C.OBSERVATION_TYPE])
            ordered = placement.prefer_observations(ordered, observation_members(ordered, pool), req.limit)
        ask = self.expansion_request(req, outcomes[0])
        page, seed_edges, due = self.hydrated_page(ordered[offset : req.limit], pool, now, ask, req.bank)
        expansion = self.expand(req, ask, page, seed_edges, pool, outcomes[0], now)
        returned = placement.final_floor(page + expansion.results, req.final_floor)
        self.relations(req, returned, pool, expansion)
        timings.lap("expand")
        results = [
            shaping.shape_result(
                s, pool.source(s.candidate.id), temporal_weight=self.weights.temporal, outside_scope=s.candidate.id in pool.fallback_ids,
                deduped=deduped_from.get(s.candidate.id), graph=pool.extras.get(s.candidate.id),
                arms=arms_of(s, pool) if req.detail else None,
            )
            for s in returned
        ]
        self.track_access(req.bank, page, due, pool, now)
        timings.lap("hydrate")
        diagnostics = shaping.Diagnostics(
            keywords=outcomes[0].keywords if len(outcomes) == 1 else sorted({k for o in outcomes for k in o.keywords}),
            vector_search=outcomes[0].vector_search, dedup_removed=dedup_removed,
            pool_sizes=[o.retrieved.pool_size for o in outcomes if o.retrieved.pool_size is not None],
            score_filters=[o.score_filter for o in outcomes if o.score_filter], injected=any(o.injected for o in outcomes),
            gated_low_evidence=sum(1 for s in page if s.components.get("relevance_gated")),
            recency_applied=recency and bool(merged), state_filter=state_filter, graph=expansion.response,
        )
        body = shaping.response_body(asked, queries, results, diagnostics, profile)
        if req.suppress_ids:
            body["suppressed"] = suppressed
        body["timings"] = timings.stages
        body["query_time_ms"] = round((time.perf_counter() - started) * 1000, 3)
        return body

    def resolve_tags(self, req: RecallRequest) -> RecallRequest:
        """Fuzzy tag-group leaves become the bank's similar tags (one aggregation request)."""
        if not tag_groups.has_fuzzy(req.tag_groups):
            return req
        bank_tags = tag_groups.parse_bank_tags(self.store.search(tag_groups.bank_tags_body(req.bank)))
        return replace(req, tag_groups=tuple(tag_groups.resolve_fuzzy(g, bank_tags) for g in req.tag_groups))

    # --- one query ------------------------------------------------------------------------------
    def run_query(
        self, req: RecallRequest, query: str | None, limit: int, now: datetime, timings: Timings, profile: ContextProfile | None,
        lean: bool = False,
    ) -> QueryOutcome:
        text = query if query and query != "*" else None
        lexical = Q.lexical_text(text) if text else None
        keywords = extract_keywords(lexical) if lexical else []
        vector, vector_search = self.query_vector(req, text)
        timings.lap("embed")
        flt_spec = Q.recall_filter(req, req.as_of or now, self.settings.excluded_types)
        # "last week" in a query names the week before the instant it is asked at: Hindsight's
        # query_timestamp, else the as_of point in time, else now.
        dates = query_date_terms(text, req.query_time or req.as_of or now, self.settings.date_zone) if text and req.scoring_profile == "engram" else ()
        lean_hits = self.lean_hits(req, keywords, dates) if lean else None
        arms = retrieval.plan_arms(
            req, flt_spec, text=text, lexical=lexical, keywords=keywords, vector=vector, limit=limit, profile=profile,
            options=self.arm_options if req.scoring_profile == "engram" else replace(self.arm_options, idf=False, thread_context_boost=0.0),
            lean=lean_hits,
        )
        retrieved = retrieval.parse_responses(arms, self.store.msearch([body for _, body in arms]))
        # A memory written before the fields ranking reads existed: its stored memory is read instead.
        if lean_hits is not None:
            stems = bool(lean_hits.stems)
            self.hydrate(retrieved, [mid for mid, h in retrieved.hits.items() if h.lean and L.predates(h.source, stems)])
        timings.lap("search")
        if retrieved.pool_size is not None:
            vector_search["matched"] = retrieved.pool_size > 0
        scoring = self.scoring_request(req, text, keywords, retrieved, now, profile, dates)
        default_match = "vector" if text or vector is not None else ("tag" if req.tags else "trending")
        ranked = rank([h.candidate(default_match) for h in retrieved.hits.values()], scoring)
        if req.scoring_profile == "engram" and self.settings.thread_context_enabled:
            prev = {mid: h.source.get("thread_prev") for mid, h in retrieved.hits.items()}
            ranked = neighbour_bonus(ranked, prev, self.settings.search_thread_neighbour_weight)
        ranked = placement.window_boost(ranked, {mid for mid, h in retrieved.hits.items() if "temporal" in h.arms}, self.weights.temporal)
        # The cross-encoder re-scores the hybrid order before placement, so priority ids, anchors and the
        # scope-fallback order (placement's rules) have the last word over it.
        if req.sort == "score" and text:
            ranked = self.rerank(text, ranked, retrieved, timings)
        placed = placement.place(
            ranked, fallback_ids=retrieved.fallback_ids,
            anchor_only={mid for mid, h in retrieved.hits.items() if h.only_anchor},
            anchors={mid for mid, h in retrieved.hits.items() if "anchor" in h.arms},
            profile=profile, priority_ids=req.priority_ids, limit=limit, sort=req.sort, has_query=bool(text or vector is not None),
            min_score=req.min_score, adaptive_floor=req.adaptive_floor,
        )
        timings.lap("score")
        return QueryOutcome(placed.ranked, keywords, vector_search, retrieved, placed.score_filter, placed.injected, scoring, vector)

    def lean_hits(self, req: RecallRequest, keywords: list[str], dates: tuple) -> retrieval.LeanHits | None:
        """How the main arms return their hits so that ranking needs no stored memory: the doc values
        the request's ranking reads (the engram profile's; the automem profile reads contents)."""
        if req.scoring_profile != "engram":
            return None
        return retrieval.LeanHits(
            L.fields_for(dates=bool(dates), times=req.sort != "score", thread=self.settings.thread_context_enabled),
            stems=query_stems(keywords) if self.settings.search_keyword_mode == "idf" else (),
        )

    def hydrate(
        self, hits: Pool | retrieval.Retrieved, ids: Sequence[str], versions: Collection[str] = (), along: Sequence[tuple[str, dict, str]] = (),
    ) -> list[dict]:
        """The stored memories of lean hits among `ids`, in one request; with `versions`, the vectors and
        versions of those memories too (Hit.version). `along` are searches of other indexes the same
        _msearch carries; their answers are returned."""
        todo = [mid for mid in dict.fromkeys(ids) if mid in hits.hits and hits.hits[mid].lean]
        if not todo:
            return self.store.msearch([], along)
        with_versions = any(mid in versions for mid in todo)
        if not along and not with_versions:  # sources alone: an _mget costs the engine ~60% of a search by ids
            for mid, source in self.store.read_sources(todo).items():
                hits.hits[mid].source = source
            return []
        # Whole stored memories (lean.stored_body: filtering _source costs the engine more than it saves).
        body = L.stored_body({"size": len(todo), "query": {"ids": {"values": todo}}, "track_total_hits": False})
        if with_versions:
            body.update(VERSION_FIELDS)
        read, *rest = self.store.msearch([body], along) if along else [self.store.search(body)]
        for h in read["hits"]["hits"]:
            if (hit := hits.hits.get(h["_id"])) is not None:
                hit.source = h.get("_source") or {}
                if "_seq_no" in h:
                    hit.version = version_of(h)
        return rest

    def hydrated_page(
        self, page: list[ScoredCandidate], pool: Pool, now: datetime, ask: ExpansionRequest | None, bank: str,
    ) -> tuple[list[ScoredCandidate], list[dict], dict[str, str | None]]:
        """The page with its stored memories; a memory deleted since the arms saw it is left out. The
        memories access tracking will rewrite (`due`: their lean hits say when they were last accessed)
        come with their vectors and versions: the rewrite needs them, and this read is made anyway. The
        same request carries the seeds' edges that relation expansion (`ask`) reads; their answers come
        back with the page."""
        ids = [s.candidate.id for s in page]
        along = self.expander.seed_edge_searches(bank, ask, ids) if self.expander is not None and ask is not None else []
        due = self.store.stale_accesses(self.accessed(ids, pool), now)
        seed_edges = self.hydrate(pool, ids, versions=due, along=along)
        return [s for s in page if not (s.candidate.id in pool.hits and pool.hits[s.candidate.id].lean)], seed_edges, due

    @staticmethod
    def accessed(ids: Sequence[str], pool: Pool) -> dict[str, str | None]:
        """{id: stored last_accessed} of the memories among `ids` whose access a recall records (all but
        the scope fallback's); None for one the arms did not return (a chain head, an expanded memory)."""
        return {mid: pool.hits[mid].source.get("last_accessed") if mid in pool.hits else None for mid in ids if mid not in pool.fallback_ids}

    def query_vector(self, req: RecallRequest, text: str | None) -> tuple[list[float] | None, dict]:
        """The given embedding, or the query's; a failed embedding degrades to keyword + metadata search."""
        if req.embedding is not None or not text:
            return req.embedding, {"enabled": True, "matched": False}
        try:
            return self.embedder.embed_query(text), {"enabled": True, "matched": False}
        except EmbeddingError as exc:
            log.warning("query embedding failed; degrading to keyword + metadata: %s", exc)
            return None, {"enabled": False, "matched": False, "error": f"embedding failed: {exc}; keyword and metadata search only"}

    def scoring_request(
        self, req: RecallRequest, text: str | None, keywords: list[str], retrieved: retrieval.Retrieved, now: datetime, profile: ContextProfile | None,
        dates: tuple = (),
    ) -> ScoringRequest:
        idf = retrieved.idf(keywords) if retrieved.counts else {}
        return ScoringRequest(
            query=text or "", keywords=tuple(keywords), now=req.query_time or now, profile=req.scoring_profile,
            keyword_mode=self.settings.search_keyword_mode, idf=idf,
            max_bm25=max((h.bm25 or 0.0 for h in retrieved.hits.values()), default=0.0),
            weights=self.weights, recency=self.recency, context=profile, relevance_gate=self.settings.recall_relevance_gate,
            thread_context_weight=self.settings.search_thread_context_weight if self.settings.thread_context_enabled else 0.0,
            query_dates=dates,
            date_weight=self.settings.search_weight_date,
        )

    # --- after the queries ------------------------------------------------------------------------
    @staticmethod
    def merged(outcomes: Sequence[QueryOutcome]) -> tuple[list[ScoredCandidate], int, dict[str, list[str]]]:
        if len(outcomes) == 1:
            return outcomes[0].ranked, 0, {}
        ranked, removed, deduped_from = merge([o.ranked for o in outcomes])
        return sort_scored(ranked), removed, deduped_from

    def current_state(
        self, req: RecallRequest, ranked: list[ScoredCandidate], pool: Pool, first: QueryOutcome, now: datetime, recency: bool,
        margin: int = 0,
    ) -> tuple[list[ScoredCandidate], dict | None]:
        """Suppress what is not current; supersession chains resolve to their head (one lookup per hop),
        on the whole candidate pool before the page is cut, so suppressions never shorten the page."""
        if req.state_mode != "current":
            return ranked, None
        at = req.as_of or now
        # A head must pass everything a seed passes, and be strictly current.
        head_filter = C.strictly_current(C.filter_clauses(Q.recall_filter(req, at, self.settings.excluded_types)), at, as_of=req.as_of is not None)

        def lookup(ids: list[str]) -> dict[str, tuple[dict, bool]]:
            hits = self.store.search(Q.heads_query(ids, req.bank, head_filter, first.vector))["hits"]["hits"]
            return {h["_id"]: (source_with_cosine(h), "head" in h.get("matched_queries", ())) for h in hits}

        def rescore(mid: str, source: dict, replaced: ScoredCandidate) -> ScoredCandidate:
            # The head takes the suppressed memory's place (its final_score); its components are its own.
            own = score_candidate(candidate_of(mid, source, state.STATE_REPLACEMENT), first.scoring) if first.scoring else replaced
            return ScoredCandidate(candidate=own.candidate, final_score=replaced.final_score, components=dict(own.components))

        # The page is the first `limit` of this order unless a re-sort follows (recency, time sorts);
        # state_debug resolves every chain so it can report each one.
        page = req.limit + margin if req.sort == "score" and not recency and not req.state_debug else None
        def stored(ids: list[str]) -> dict[str, dict]:  # lean hits hold only the supersession summary
            self.hydrate(pool, ids)
            return {mid: pool.hits[mid].source for mid in ids if mid in pool.hits}

        outcome = state.apply_current_state(ranked, pool.sources, at, lookup, rescore, page=page, as_of=req.as_of is not None, stored=stored)
        pool.extras.update(outcome.extras)
        return outcome.ranked, outcome.to_response(debug=req.state_debug)

    def order(self, req: RecallRequest, ranked: list[ScoredCandidate], pool: Pool, recency: bool) -> list[ScoredCandidate]:
        if recency and ranked:
            ranked = placement.recency_rerank(ranked, self.weights.temporal, pool.fallback_ids, req.priority_ids)
        return placement.sort_by_time(ranked, req.sort) if req.sort != "score" else ranked

    def rerank(self, query: str, ranked: list[ScoredCandidate], retrieved: retrieval.Retrieved, timings: Timings) -> list[ScoredCandidate]:
        """RECALL_RERANK_MODEL: the cross-encoder re-scores the top RECALL_RERANK_TOP_N of one query's
        candidates; a failing model leaves the order as it was."""
        if self.reranker is None or not ranked:
            return ranked
        head = ranked[: self.reranker.top_n]
        texts = [(h.source.get("content") or "") if (h := retrieved.hits.get(s.candidate.id)) else "" for s in head]
        try:
            out = self.reranker.rerank(query, ranked, texts)
        except Exception:  # noqa: BLE001 - a reranker problem never fails a recall
            log.warning("reranking failed; keeping the hybrid order", exc_info=True)
            return ranked
        timings.lap("rerank")
        return out

    def expansion_request(self, req: RecallRequest, first: QueryOutcome) -> ExpansionRequest | None:
        """What graph expansion asks for; None when the recall expands nothing."""
        if self.expander is None or not (req.expand_relations or req.expand_entities) or first.scoring is None:
            return None
        return ExpansionRequest(
            relations=req.expand_relations, entities=req.expand_entities, relation_limit=req.relation_limit,
            expansion_limit=req.expansion_limit, min_importance=req.expand_min_importance, min_strength=req.expand_min_strength,
            respect_tags=req.expand_respect_tags, min_score=req.min_score, text=first.scoring.query or None, vector=first.vector,
        )

    def expand(
        self, req: RecallRequest, ask: ExpansionRequest | None, seeds: list[ScoredCandidate], seed_edges: Sequence[dict], pool: Pool,
        first: QueryOutcome, now: datetime,
    ) -> ExpansionOutcome:
        if self.expander is None or ask is None or first.scoring is None:
            return ExpansionOutcome()
        at = req.as_of or now
        # Expanded memories pass the seeds' filters (time window, exclude_tags, excluded types) and
        # are strictly current; the tag scope applies only with expand_respect_tags (spec 000).
        flt = C.filter_clauses(Q.recall_filter(req, at, self.settings.excluded_types), scoped=req.expand_respect_tags)
        if req.state_mode == "current":
            flt = C.strictly_current(flt, at, as_of=req.as_of is not None)
        outcome = self.expander.expand(req.bank, ask, seeds, seed_edges, pool.source, flt, first.scoring, make_expanded)
        pool.extras.update(outcome.extras)
        return outcome

    def relations(self, req: RecallRequest, returned: Sequence[ScoredCandidate], pool: Pool, expansion: ExpansionOutcome) -> None:
        """spec 000 "Deferred Relation Hydration": with expand_relations, every returned memory's edges,
        read only for the page (the seeds' came with the expansion's own read)."""
        if not req.expand_relations or self.expander is None:
            return
        for mid, relations in expansion.seed_relations.items():
            pool.extras.setdefault(mid, {}).setdefault("relations", relations)
        todo = [s.candidate.id for s in returned if "relations" not in pool.extras.get(s.candidate.id, {})]
        if todo:
            for mid, relations in self.expander.hydrate(req.bank, todo, req.relation_limit).items():
                pool.extras.setdefault(mid, {})["relations"] = relations

    def track_access(self, bank: str, page: Sequence[ScoredCandidate], due: Mapping[str, str | None], pool: Pool, now: datetime) -> None:
        """last_accessed of the seeds (`record_access`): those of the page's memories `due` (worked out
        before the page read) for a rewrite; nothing when every seed was touched recently."""
        stale = {mid: due[mid] for s in page if (mid := s.candidate.id) in due}
        if stale:
            versions = {mid: v for mid in stale if (h := pool.hits.get(mid)) is not None and (v := h.version) is not None}
            self.record_access(bank, stale, now, versions)


def context_profile(req: RecallRequest) -> ContextProfile | None:
    return build_context_profile(
        context_tags=req.context_tags, context_types=req.context_types, priority_ids=req.priority_ids,
        context=req.context, language=req.language, active_path=req.active_path, query=req.query,
    )

