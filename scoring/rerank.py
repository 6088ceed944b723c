"""The hybrid re-ranker: ten weighted components plus the context bonus (spec 000/001).

final_score = vector·w_v + keyword·w_k + metadata·w_m + exact·w_e + importance·w_i
            + confidence·w_c + recency·w_r + tag·w_t + relation·w_rel + relevance·w_rv
            + context_bonus

Two profiles decide the query-dependent components:

* `automem` reproduces AutoMem: the vector component only for vector-arm candidates; keyword =
  share of keywords in the content for vector-arm candidates, else the keyword arm's
  normalised points; metadata only for sidecar candidates.
* `engram` gives every candidate with a known cosine its (non-negative) cosine, and a keyword
  component from IDF-weighted stemmed matches (`idf`) or normalised BM25 (`bm25`).

Everything else (tag, exact, importance, confidence, recency, relation, relevance, context,
the relevance gate) is identical in both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from operator import attrgetter
from datetime import datetime
from typing import Any

from scoring.components import (
    as_utc,
    bm25_normalized,
    date_match,
    keyword_points,
    keyword_share,
    metadata_score,
    recency_score,
    tag_score,
)
from scoring.context import ContextProfile, context_bonus
from scoring.idf_share import KeywordPlan, keyword_plan, plan_stems, planned_share_in_thread, planned_share_of_stems
from scoring.metadata_terms import metadata_term_sets
from scoring.keywords import topic_keywords
from scoring.weights import RecencyConfig, Weights

PROFILES = ("automem", "engram")
KEYWORD_MODES = ("idf", "bm25")
# Match types a candidate can carry (spec 000, "Result fields").
MATCH_TYPES = (
    "vector",
    "keyword",
    "trending",
    "metadata",
    "tag",
    "relation",
    "entity_expansion",
    "priority_id",
    "state_replacement",
)
# automem/search/runtime_recall_helpers.py `_graph_trending_results`: a trending result's
# match_score is its importance, which automem/utils/scoring.py counts as the keyword component.
TRENDING_MATCH_TYPE = "trending"
# automem/config.py RECALL_RELEVANCE_GATE is clamped into [0, 1].
MIN_RELEVANCE_GATE, MAX_RELEVANCE_GATE = 0.0, 1.0
# The components the relevance gate scales (automem/config.py RECALL_RELEVANCE_GATE comment and
# AutoMem's tests: importance, confidence, recency, tag overlap, and the stored relevance).
GATED_COMPONENTS = ("importance", "confidence", "recency", "tag", "relevance")
# Sort key for a missing timestamp: older than every real one.
_NO_TIMESTAMP = float("-inf")


# Candidates and scored candidates are plain slotted dataclasses: a recall builds ~150 of each, and a
# frozen dataclass's __init__ (object.__setattr__ per field) took 5.8 against 0.9 us for Candidate.
# Nothing mutates them: the stages make new ones (dataclasses.replace).
@dataclass(slots=True)
class Candidate:
    """One memory as the retrieval arms found it."""

    id: str
    content: str
    tags: tuple[str, ...] = ()
    type: str | None = None
    importance: float | None = None
    confidence: float | None = None
    relevance_score: float | None = None
    timestamp: datetime | None = None
    updated_at: datetime | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    metadata_terms: tuple[str, ...] = ()
    # Without `metadata`: the stored metadata terms without the generated entities (the tag
    # component's), when known; None reads them as `metadata_terms`.
    metadata_plain_terms: tuple[str, ...] | None = None
    vector_cosine: float | None = None  # cosine in [-1, 1]; None when unknown
    bm25: float | None = None  # raw BM25 of the keyword arm; None when not matched
    in_vector_arm: bool = False
    in_keyword_arm: bool = False
    in_metadata_arm: bool = False
    relation: float = 0.0  # filled by graph expansion later
    match_type: str = "vector"  # one of MATCH_TYPES
    thread_context: str = ""  # the text of the memory before it in its thread (engram profile keyword share)
    date_terms: tuple[str, ...] = ()  # the dates it speaks of and was written on (engram profile date component)
    # The stems of the content and of the thread context, when known (a lean hit carries them instead
    # of its texts, service/memory/stems.py); None: from `content` and `thread_context` themselves.
    content_stems: frozenset[str] | None = None
    context_stems: frozenset[str] | None = None


@dataclass(frozen=True)
class ScoringConstants:
    """The parts of a ScoringRequest every candidate's score reads (ScoringRequest.constants)."""

    now: datetime  # timezone-aware
    exact_query: str  # the query lowered and stripped (the exact component)
    dates: bool  # the date component is scored


@dataclass(frozen=True)
class ScoringRequest:
    """Everything about the request the scorer needs; validated once on construction."""

    query: str
    keywords: tuple[str, ...]
    now: datetime
    profile: str = "engram"  # "automem" or "engram"
    keyword_mode: str = "idf"  # engram only: "idf" | "bm25"
    idf: Mapping[str, float] = field(default_factory=dict)  # keyword -> IDF, engram profile
    max_bm25: float = 0.0
    weights: Weights = Weights()
    recency: RecencyConfig = RecencyConfig()
    context: ContextProfile | None = None
    relevance_gate: float = 0.0  # RECALL_RELEVANCE_GATE; 0 disables the gate
    tag_token_cap: int = 0  # SEARCH_TAG_SCORE_TOKEN_CAP (automem/config.py); 0 = full length
    # SEARCH_THREAD_CONTEXT_WEIGHT: engram profile (idf mode), what a keyword found only in the
    # candidate's thread context counts against one in its content; 0 ignores the context.
    thread_context_weight: float = 0.0
    # The query's dates (engram profile), each as the terms any one of which meets it; the date
    # component is scored, and shown, only when the query names a date.
    query_dates: tuple[tuple[str, ...], ...] = ()
    # SEARCH_WEIGHT_DATE (the service's default 0.1, as recency), the other time signal. On the 12 LoCoMo dev questions
    # that name a date it lifted the slice's recall@5 from 0.581 to 0.603 (0.05: 0.590, 0.2: 0.603,
    # 0.3: 0.600; bench/tune_locomo.py).
    date_weight: float = 0.0

    def __post_init__(self) -> None:
        if self.profile not in PROFILES:
            raise ValueError(f"profile must be one of {', '.join(PROFILES)}; got {self.profile!r}")
        if self.keyword_mode not in KEYWORD_MODES:
            raise ValueError(
                f"keyword_mode must be one of {', '.join(KEYWORD_MODES)}; "
                f"got {self.keyword_mode!r}"
            )
        gate = min(MAX_RELEVANCE_GATE, max(MIN_RELEVANCE_GATE, float(self.relevance_gate)))
        object.__setattr__(self, "relevance_gate", gate)
        object.__setattr__(self, "keywords", tuple(self.keywords))

    @cached_property
    def constants(self) -> ScoringConstants:
        """What every candidate's score reads of the request, worked out once."""
        return ScoringConstants(
            now=as_utc(self.now), exact_query=self.query.strip().lower() if self.query else "",
            dates=bool(self.query_dates) and self.profile == "engram",
        )

    @cached_property
    def keyword_plan(self) -> KeywordPlan:
        """The engram idf keyword share's query side (topic keywords, stems, IDF weights), once per
        request rather than once per candidate."""
        return keyword_plan(topic_keywords(self.keywords), self.idf)


def query_stems(keywords: Iterable[str]) -> tuple[str, ...]:
    """The stems the engram idf keyword share of a request with these keywords tests (its plan's)."""
    return plan_stems(topic_keywords(list(keywords)))


@dataclass(slots=True)
class ScoredCandidate:
    candidate: Candidate
    final_score: float
    # vector, keyword, metadata, relation, tag, importance, confidence, recency, exact,
    # relevance, context, evidence, relevance_gated (+ temporal after the recency re-rank).
    # A fresh dict per result: the caller may copy it into the response as is.
    components: Mapping[str, float | bool]


def _number(value: Any) -> float:
    """A numeric field, 0.0 when missing or not a number (spec 001 "When a field is missing")."""
    if type(value) is float:
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    return float(value)


def _terms(c: Candidate) -> tuple[frozenset[str], frozenset[str]]:
    """Metadata terms (all, and without the generated entities) from the metadata itself when
    present, else the stored terms. Sets: the components only test membership."""
    if not c.metadata:
        stored = frozenset(c.metadata_terms)
        return stored, (stored if c.metadata_plain_terms is None else frozenset(c.metadata_plain_terms))
    return metadata_term_sets(c.metadata)


def _query_dependent(c: Candidate, req: ScoringRequest) -> tuple[float, float, float]:
    """(vector, keyword, metadata) for the request's profile."""
    keywords = req.keywords
    if req.profile == "automem":
        vector = _number(c.vector_cosine) if c.in_vector_arm else 0.0
        if c.in_vector_arm:
            keyword = keyword_share(keywords, c.content)
        elif c.in_keyword_arm:
            keyword = keyword_points(keywords, req.query, c.content, c.tags)
        else:
            keyword = 0.0
    else:
        vector = max(0.0, float(c.vector_cosine)) if c.vector_cosine is not None else 0.0
        if req.keyword_mode == "bm25":
            keyword = bm25_normalized(c.bm25, req.max_bm25)
        elif c.content_stems is not None:
            keyword = planned_share_of_stems(req.keyword_plan, c.content_stems, c.context_stems, req.thread_context_weight)
        else:
            keyword = planned_share_in_thread(req.keyword_plan, c.content, c.thread_context, req.thread_context_weight)
    if c.match_type == TRENDING_MATCH_TYPE:
        keyword = _number(c.importance)
    metadata = metadata_score(keywords, req.query, c.metadata) if c.in_metadata_arm else 0.0
    return vector, keyword, metadata


def score_candidate(c: Candidate, req: ScoringRequest) -> ScoredCandidate:
    """Score one candidate; nothing is rounded. What is the same for every candidate (the aware
    `now`, the lowered query) is worked out once per request (`ScoringRequest.constants`): this runs
    for each of the ~135 candidates of a recall."""
    k = req.constants
    vector, keyword, metadata = _query_dependent(c, req)
    all_terms, non_entity_terms = _terms(c)
    # AutoMem leaves generated entities out of the tag component (its tests:
    # "ignores_generated_entities_for_generic_tag_score").
    tag = tag_score(req.keywords, c.tags, non_entity_terms, token_cap=req.tag_token_cap) if req.keywords else 0.0
    exact = 1.0 if k.exact_query and k.exact_query in all_terms else 0.0  # exact_from_terms, the query lowered once
    importance, confidence, relevance = _number(c.importance), _number(c.confidence), _number(c.relevance_score)
    recency = recency_score(c.timestamp, k.now, req.recency)
    context = 0.0 if req.context is None else context_bonus(
        req.context, memory_id=c.id, tags=c.tags, type=c.type, metadata_terms=all_terms, content=c.content,
    )
    # spec 000 "evidence (the strongest of the vector, keyword, metadata, and exact scores)".
    evidence = max(vector, keyword, metadata, exact)
    # automem/config.py RECALL_RELEVANCE_GATE: with query keywords and evidence below the gate,
    # scale the query-independent components by evidence / gate (a ramp, not a cliff); the
    # context bonus is never gated.
    gate = req.relevance_gate
    gated = gate > 0 and bool(req.keywords) and evidence < gate
    if gated:  # GATED_COMPONENTS
        scale = max(0.0, evidence) / gate
        importance, confidence, recency, tag, relevance = importance * scale, confidence * scale, recency * scale, tag * scale, relevance * scale
    components: dict[str, float | bool] = {
        "vector": vector, "keyword": keyword, "metadata": metadata, "relation": float(c.relation), "tag": tag,
        "importance": importance, "confidence": confidence, "recency": recency, "exact": exact, "relevance": relevance,
        "context": context, "evidence": evidence, "relevance_gated": gated,
    }
    date = 0.0
    if k.dates:
        date = components["date"] = date_match(req.query_dates, c.date_terms)
    w = req.weights
    final = (
        w.vector * vector
        + w.keyword * keyword
        + w.metadata * metadata
        + w.exact * exact
        + w.importance * importance
        + w.confidence * confidence
        + w.recency * recency
        + w.tag * tag
        + w.relation * components["relation"]
        + w.relevance * relevance
        + req.date_weight * date
        + context
    )
    return ScoredCandidate(c, final, components)


_final_score = attrgetter("final_score")


def _timestamp_key(c: Candidate) -> float:
    ts = c.timestamp
    if ts is None:
        return _NO_TIMESTAMP
    return (ts if ts.tzinfo is not None else as_utc(ts)).timestamp()


def rank_key(scored: ScoredCandidate) -> tuple[float, float, str]:
    """Score descending; exact ties newest first (AutoMem's `_score_sort_key` tiebreak), then
    id ascending so the order is total."""
    return (-scored.final_score, -_timestamp_key(scored.candidate), scored.candidate.id)


def sort_scored(scored: Iterable[ScoredCandidate]) -> list[ScoredCandidate]:
    """Sorted by `rank_key`, in two steps: by score alone, then each run of exactly equal scores (rare)
    by the whole key. The same order, without a tuple and a timestamp per candidate: a recall sorts
    its ~150 candidates two or three times (62 -> 15 us a sort)."""
    out = sorted(scored, key=_final_score, reverse=True)
    n, i = len(out), 0
    while i < n:
        score, j = out[i].final_score, i + 1
        while j < n and out[j].final_score == score:
            j += 1
        if j - i > 1:
            out[i:j] = sorted(out[i:j], key=rank_key)
        i = j
    return out


def rank(cands: Iterable[Candidate], req: ScoringRequest) -> list[ScoredCandidate]:
    """Score every candidate and sort them (see `rank_key`)."""
    return sort_scored(score_candidate(c, req) for c in cands)
