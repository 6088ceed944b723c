"""RecallRequest: the one internal recall request every API surface builds and the pipeline takes.

Fully resolved: defaults from Settings applied, the time window parsed, limits clamped, the bank
chosen. AutoMem's `GET /recall` builds it from `schemas.recall.RecallQuery`; other surfaces build it
from their own request shapes. The pipeline never sees a query string.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from service.filters.tag_groups import Group
from service.filters.vocabulary import FactType, RecencyBias, ScoringProfile, Sort, StateMode, TagMatch, TagMode
from service.clock.expressions import TimeWindow



@dataclass
class RecallRequest:
    bank: str = "default"
    query: str | None = None
    queries: list[str] = field(default_factory=list)
    embedding: list[float] | None = None
    limit: int = 5
    offset: int = 0  # results of the ranked list skipped before the page (its first `offset` + `limit` are ranked)
    per_query_limit: int | None = None
    sort: Sort = "score"
    sort_given: bool = False
    tags: list[str] = field(default_factory=list)
    exclude_tags: list[str] = field(default_factory=list)
    tag_mode: TagMode = "any"
    tag_match: TagMatch = "prefix"
    # The tag scope reads the caller's tags only, never the `entity:` tags enrichment derives (Signet's
    # surface, which shows caller tags only; AutoMem's scope includes them, spec 001 "Tag prefix system").
    caller_tags_only: bool = False
    window: TimeWindow | None = None
    context: str | None = None
    language: str | None = None
    active_path: str | None = None
    context_tags: list[str] = field(default_factory=list)
    context_types: list[str] = field(default_factory=list)
    priority_ids: list[str] = field(default_factory=list)
    expand_relations: bool = False
    expand_entities: bool = False
    relation_limit: int = 5
    expansion_limit: int = 25
    expand_min_importance: float = 0.0
    expand_min_strength: float = 0.0
    expand_respect_tags: bool = False
    state_mode: StateMode = "current"
    state_debug: bool = False
    as_of: datetime | None = None
    recency_bias: RecencyBias = "off"
    scope_fallback: bool = False
    min_score: float = 0.0
    adaptive_floor: bool = True
    auto_decompose: bool = False
    scoring_profile: ScoringProfile = "engram"
    # Stored-field filters (who, project, pinned: settable on every write; Signet's recall filters them).
    who: str | None = None
    project: str | None = None
    pinned: bool | None = None  # True: pinned memories only; False / None: no filter
    types: list[str] = field(default_factory=list)  # memory types, any of them
    importance_min: float | None = None
    since: datetime | None = None  # timestamp bounds besides the window, both inclusive
    until: datetime | None = None
    # Which stored times `window` applies to (filters.clauses.FACET_FIELDS), half-open [start, end); None: `timestamp`
    # with both bounds inclusive (AutoMem).
    window_facets: tuple[str, ...] | None = None
    # Session dedupe: memories already returned in this context. The arms leave them out (so they never
    # shorten the page), same-shaped arms fetch them, and the response counts those that would have
    # been on the page (`suppressed`).
    suppress_ids: frozenset[str] = frozenset()
    # Request problems that are not errors (unknown parameters), echoed as the response's `warnings`.
    warnings: list[str] = field(default_factory=list)
    # --- what other surfaces express (Hindsight, spec 002); the defaults leave AutoMem's recall as it is.
    # Boolean tag filters, AND-ed; a hard filter on every arm and on graph expansion (visibility scopes).
    tag_groups: tuple[Group, ...] = ()
    # Hindsight fact types (world / experience / observation); empty: no type filter.
    fact_types: tuple[FactType, ...] = ()
    # Floors inside the vector arm (cosine) and the keyword arm (BM25), and on the final score after
    # every stage (expansion included); None: no floor.
    semantic_floor: float | None = None
    keyword_floor: float | None = None
    final_floor: float | None = None
    # A fourth arm: memories dated in this window become candidates (not a filter).
    temporal_window: TimeWindow | None = None
    # The instant recency is scored against (Hindsight's query_timestamp); None: now.
    query_time: datetime | None = None
    keyword_search: bool = True  # the BM25 and metadata arms (Hindsight's enable_text_search)
    # Drop raw memories an observation (MetaPattern) on the page summarises; the next ones move up.
    prefer_observations: bool = False
    # Each result also carries its whole stored memory and what its arms saw (`retrieval`).
    detail: bool = False

    def __post_init__(self) -> None:
        if self.window and not (self.query or self.queries or self.embedding) and not self.sort_given:
            self.sort = "time_desc"  # spec 000: a time window without a query sorts newest first

    @classmethod
    def from_settings(cls, settings, *, bank: str, **values) -> "RecallRequest":
        """A request with the service's configured defaults; `values` (None = default) override them.
        `limit` and `per_query_limit` are clamped to RECALL_MAX_LIMIT (spec 000: clamped, not refused).
        The bank has no default: it is the request's scope (service/api/scope.py), always given."""
        base: dict = {
            "bank": bank, "relation_limit": settings.recall_relation_limit,
            "expansion_limit": settings.recall_expansion_limit, "recency_bias": settings.recall_recency_bias,
            "min_score": settings.recall_min_score, "adaptive_floor": settings.recall_adaptive_floor,
            "scoring_profile": settings.search_scoring_profile,
        }
        base.update({k: v for k, v in values.items() if v is not None})
        req = cls(**base)
        req.limit = min(req.limit, settings.recall_max_limit)
        if req.offset + req.limit > settings.recall_max_limit:
            req.warnings = [*req.warnings, f"offset {req.offset} + limit {req.limit} passes RECALL_MAX_LIMIT ({settings.recall_max_limit}): the ranked list ends there"]
            req.offset = min(req.offset, settings.recall_max_limit)
            req.limit = settings.recall_max_limit - req.offset
        if req.per_query_limit:
            req.per_query_limit = min(req.per_query_limit, settings.recall_max_limit)
        return req
