"""Retrieval: the arms of one query, one `_msearch`, the answers parsed into scoring candidates.

`plan_arms` (pure) decides the arms from the request: filtered kNN, BM25 over content and tags
(always, beside kNN), the metadata sidecar, trending (no query), priority ids, context anchors,
the unscoped scope_fallback fill, and size-0 document counts for IDF. `parse_responses` (pure)
merges the hits by id. The one I/O step is `MemoryStore.msearch`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from scoring.components import cosine_from_lucene
from scoring.context import ContextProfile
from scoring.keywords import topic_keywords
from scoring.rerank import Candidate
from service.memory.stems import CONTENT_STEMS, CONTEXT_STEMS, read_stems, stored_stems
from service.recall import lean as L
from service.recall import queries as Q
from service.filters import clauses as C
from service.filters import scripts as S
from service.recall.request import RecallRequest
from service.memory.tags import hierarchy_key
from service.clock.instants import stored_datetime
from service.storage.memories import Version

# The keyword arm digs deeper than the limit so every plausible lexical candidate is re-ranked.
KEYWORD_ARM_MIN = 50
# Tag-scoped queries widen the vector pool (spec 000 "Vector Candidate Over-fetch"), still capped.
TAG_SCOPE_WIDEN = 2
COUNT_ARM = "count"
DF_PREFIX = "df:"
# Session dedupe: the main arms leave the suppressed memories out (so the pool is full of the others);
# the same arms restricted to them ("seen:vector", ...) bring them in to be scored and counted.
SEEN_PREFIX = "seen:"
# Arms that only contribute when nothing else does (ordering of match types, first wins).
MATCH_ORDER = ("vector", "keyword", "metadata", "temporal", "priority", "trending", "anchor", "fallback")
_ARM_MATCH = {"priority": "priority_id", "fallback": "vector"}
LEAN = L.LEAN
_DEFAULT_MATCH_ARMS = frozenset({"anchor", "trending"})


@dataclass(slots=True)
class Hit:
    """One memory as the arms saw it, before it becomes a scoring Candidate."""

    id: str
    source: dict
    cosine: float | None = None
    bm25: float | None = None
    arms: set[str] = field(default_factory=set)
    # Its vector and version, when the page read brought them (access tracking rewrites it with them).
    version: Version | None = None

    @property
    def lean(self) -> bool:
        """Its source holds doc values only (service/recall/lean.py), not the stored memory."""
        return LEAN in self.source

    def absorb(self, hit: dict, arm: str) -> None:
        score = hit.get("_score")
        self.arms.add(arm)
        if "_source" in hit and self.lean:
            self.source = hit["_source"]  # another arm returned the stored memory: ranking reads that
        cosine = hit.get("fields", {}).get("cosine")
        if cosine and cosine[0] is not None:  # the arm's script field (filters.scripts.with_cosine)
            self.cosine = float(cosine[0])
        if arm in ("vector", "fallback") and score is not None:
            self.cosine = cosine_from_lucene(score)
        elif arm == "keyword" and score is not None:
            self.bm25 = float(score)

    @property
    def only_fallback(self) -> bool:
        return len(self.arms) == 1 and "fallback" in self.arms  # no set built per hit

    @property
    def only_anchor(self) -> bool:
        return len(self.arms) == 1 and "anchor" in self.arms

    def match_type(self, default: str) -> str:
        for arm in MATCH_ORDER:
            if arm in self.arms:
                return default if arm in _DEFAULT_MATCH_ARMS else _ARM_MATCH.get(arm, arm)
        return default

    def candidate(self, default_match: str, relation: float = 0.0) -> Candidate:
        s = self.source
        get = s.get
        arms = self.arms
        lean = LEAN in s
        # A lean hit's stems are the query's among them (lean.lean_source); a whole memory's, all of them.
        content_stems, context_stems = (read_stems(get(CONTENT_STEMS)), read_stems(get(CONTEXT_STEMS))) if lean else stored_stems(s)
        return Candidate(
            id=self.id,
            content="" if lean else get("content", ""),
            tags=tuple(get("tags") or ()),
            type=get("type"),
            importance=get("importance"),
            confidence=get("confidence"),
            relevance_score=get("relevance_score"),
            timestamp=stored_datetime(get("timestamp")),
            updated_at=stored_datetime(get("updated_at")),
            metadata={} if lean else (get("metadata") or {}),
            metadata_terms=tuple(get("metadata_terms") or ()) if lean else (),
            metadata_plain_terms=L.plain_terms(s) if lean else None,
            vector_cosine=self.cosine,
            bm25=self.bm25,
            in_vector_arm="vector" in arms or "fallback" in arms,
            in_keyword_arm="keyword" in arms,
            in_metadata_arm="metadata" in arms,
            match_type=self.match_type(default_match),
            relation=relation,
            thread_context="" if lean else (get("thread_context") or ""),
            date_terms=tuple(get("date_terms") or ()),
            content_stems=content_stems,
            context_stems=context_stems,
        )


@dataclass(frozen=True)
class LeanHits:
    """How a recall's main arms return their hits (service/recall/lean.py): the doc values its
    ranking reads."""

    fields: tuple[str, ...] = L.FIELDS
    stems: tuple[str, ...] = ()  # the query's stems, when the keyword share reads stored stems (lean.lean_body)


def fetch_k(limit: int, scoped: bool, overfetch: int, cap: int) -> int:
    """spec 000 "Vector Candidate Over-fetch": max(limit, min(limit x overfetch, cap)), widened when scoped."""
    k = max(limit, min(limit * overfetch, cap))
    if scoped:
        k = max(k, min(k * TAG_SCOPE_WIDEN, cap))
    return k


@dataclass(frozen=True)
class ArmOptions:
    """The settings the arms depend on (RECALL_VECTOR_OVERFETCH, RECALL_VECTOR_FETCH_CAP, ...)."""

    overfetch: int
    fetch_cap: int
    metadata_search: bool
    idf: bool  # the engram profile's IDF-weighted keyword share needs document counts
    thread_context_boost: float = 0.0  # BM25 also matches the thread context, at this boost (0: not)


def plan_arms(
    req: RecallRequest, flt_spec: C.RecallFilter, *, text: str | None, lexical: str | None, keywords: Sequence[str],
    vector: Sequence[float] | None, limit: int, profile: ContextProfile | None, options: ArmOptions,
    lean: LeanHits | None = None,
) -> list[tuple[str, dict]]:
    """With `lean`, the vector and keyword arms return lean hits (service/recall/lean.py); the other
    arms, a few hits each, whole stored memories."""
    flt = C.filter_clauses(flt_spec)
    scoped = bool(req.tags or req.tag_groups)
    arms: list[tuple[str, dict]] = []
    k = fetch_k(limit, scoped, options.overfetch, options.fetch_cap)
    seen = sorted(req.suppress_ids)
    # Session dedupe: the main arms leave already-recalled memories out; `seen:` twins fetch just them.
    for prefix, arm_flt in [("", C.excluding_ids(flt, seen) if seen else flt)] + ([(SEEN_PREFIX, C.only_ids(flt, seen))] if seen else []):
        if vector is not None:
            arms.append((f"{prefix}vector", Q.with_min_score(Q.knn_arm(vector, k, arm_flt), Q.knn_min_score(req.semantic_floor))))
        if text and lexical and req.keyword_search:
            keyword = Q.with_min_score(Q.keyword_arm(lexical, max(k, KEYWORD_ARM_MIN), arm_flt, options.thread_context_boost), req.keyword_floor)
            arms.append((f"{prefix}keyword", S.with_cosine(keyword, vector)))
        if vector is None and not text:
            arms.append((f"{prefix}trending", Q.trending_arm(max(limit, 1), arm_flt, req.sort)))
    if text and lexical and req.keyword_search and options.metadata_search:
        arms.append(("metadata", S.with_cosine(Q.metadata_arm(lexical, keywords, max(1, min(limit, 10)), flt), vector)))
    if req.temporal_window is not None and (req.temporal_window.start or req.temporal_window.end):
        arms.append(("temporal", Q.temporal_arm(req.temporal_window.start, req.temporal_window.end, max(limit, 1), flt, vector)))
    if req.priority_ids:
        arms.append(("priority", S.with_cosine(Q.ids_arm(req.priority_ids, flt), vector)))
    if profile is not None and profile.require_injection:
        anchor = Q.anchor_arm(max(1, min(limit, 3)), flt, [hierarchy_key(t) for t in profile.context_tags], profile.context_types)
        if anchor:
            arms.append(("anchor", S.with_cosine(anchor, vector)))
    if req.scope_fallback and scoped and vector is not None:
        arms.append(("fallback", Q.knn_arm(vector, max(limit, 1), C.fallback_filter(flt_spec))))
    # Arms that return hits need no total: counting every match up to 10,000 keeps Lucene from
    # skipping non-competitive documents (measured at 100k: the keyword arm alone 13.3 -> 9.7 ms p50).
    # Hits that are not lean bring their whole stored memory (filters.clauses.WHOLE_SOURCE).
    arms = [(name, {**body, "track_total_hits": False, **({"_source": C.WHOLE_SOURCE} if "_source" in body else {})}) for name, body in arms]
    if lean is not None:
        arms = [(name, L.lean_body(body, lean.fields, lean.stems) if name.removeprefix(SEEN_PREFIX) in LEAN_ARMS else body)
                for name, body in arms]
    if options.idf and text and keywords:
        arms.append((COUNT_ARM, Q.doc_counts_arm(flt, list(dict.fromkeys(topic_keywords(keywords))))))
    return arms


# The arms whose hits are lean: they return nearly every hit of a recall; the others return a few.
LEAN_ARMS = frozenset({"vector", "keyword"})


@dataclass
class Retrieved:
    hits: dict[str, Hit] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    pool_size: int | None = None  # vector candidates in scope (spec 000 tag_scope.pool_size_hint)

    @property
    def fallback_ids(self) -> set[str]:
        return {mid for mid, h in self.hits.items() if h.only_fallback}

    def idf(self, keywords: Sequence[str]) -> dict[str, float]:
        """BM25's IDF of each topic keyword in scope, from the count arms: log(1 + (N - df + 0.5) / (df + 0.5))."""
        n = self.counts.get(COUNT_ARM, 0)
        out = {}
        for kw in topic_keywords(keywords):
            df = self.counts.get(f"{DF_PREFIX}{kw}", 0)
            out[kw] = math.log(1.0 + (n - df + 0.5) / (df + 0.5)) if n else 0.0
        return out


def parse_responses(arms: Sequence[tuple[str, dict]], responses: Sequence[dict]) -> Retrieved:
    out = Retrieved()
    for (arm, _), resp in zip(arms, responses):
        if arm == COUNT_ARM:
            out.counts[arm] = int(resp["hits"]["total"]["value"])
            for kw, bucket in resp.get("aggregations", {}).get("df", {}).get("buckets", {}).items():
                out.counts[f"{DF_PREFIX}{kw}"] = int(bucket["doc_count"])
            continue
        if arm == "vector":
            out.pool_size = len(resp["hits"]["hits"])
        name = arm.removeprefix(SEEN_PREFIX)  # a suppressed memory is scored as its arm scores the others
        for h in resp["hits"]["hits"]:
            mid = h.get("_id")
            lean = mid is None  # doc values only, the memory's id among them
            if lean:
                ids = h.get("fields", {}).get("id")
                if not ids:
                    continue  # every memory is written with its id; nothing to rank without it
                mid = ids[0]
            hit = out.hits.get(mid)
            if hit is None:
                hit = out.hits[mid] = Hit(mid, L.lean_source(h["fields"], h.get("matched_queries", ())) if lean else (h.get("_source") or {}))
            hit.absorb(h, name)
    return out
