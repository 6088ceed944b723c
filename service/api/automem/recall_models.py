"""GET /recall's parameters as one model (spec 000 "Request Parameters"), and the response models.

The route receives `RecallQuery` through `query_params` (service/api/query_model.py: the query string
in one validation), and the OpenAPI page lists every parameter with its description, bounds and
allowed values. Query-string habits of
AutoMem clients keep working: lists repeated or comma-separated (`tags=a,b&tags=c`, also `tags[]=`),
aliases (`order_by`, `time`, `entity_expansion`), case-insensitive choices, empty values meaning
"not given". Unknown parameters are accepted and named in the response's `warnings`.
`to_request` resolves the rest (Settings defaults, the time window, limits) into the pipeline's
`RecallRequest`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from service.clock.expressions import TimeWindow, resolve_time_window
from service.clock.instants import Instant
from service.clock.phrases import extract_date_phrase
from service.errors import BadRequest
from service.filters.vocabulary import RecencyBias, ScoringProfile, Sort, StateMode, TagMatch, TagMode
from service.recall.request import RecallRequest
from service.api.query_model import QueryModel, list_aliases
from service.memory.limits import check_vector

# Bounds on list parameters: each item is a filter clause, an arm or a whole extra query.
MAX_QUERIES = 20
MAX_LIST_ITEMS = 200
# Alternative spellings clients send, folded onto the field they mean.
ALIASES = {
    "order_by": "sort", "time": "time_query", "entity_expansion": "expand_entities",
    **list_aliases("tags", "exclude_tags", "queries"),
}
LIST_FIELDS = ("tags", "exclude_tags", "context_tags", "context_types", "priority_ids")
CHOICE_FIELDS = ("sort", "tag_mode", "tag_match", "state_mode", "recency_bias", "scoring_profile")


class RecallQuery(QueryModel):
    """Every GET /recall parameter. Omitted values take the service's defaults (named in each description)."""

    aliases: ClassVar[dict[str, str]] = ALIASES
    list_fields: ClassVar[tuple[str, ...]] = LIST_FIELDS
    plain_list_fields: ClassVar[tuple[str, ...]] = ("queries",)
    vector_fields: ClassVar[tuple[str, ...]] = ("embedding",)
    choice_fields: ClassVar[tuple[str, ...]] = CHOICE_FIELDS

    query: str | None = Field(None, description="Natural-language query, or `*` for no query (trending memories)")
    queries: list[str] = Field(default_factory=list, max_length=MAX_QUERIES, description="Several queries at once; results merged and deduplicated")
    embedding: list[float] = Field(default_factory=list, description="A precomputed query vector (comma-separated; its size must equal the model's)")
    limit: int = Field(5, ge=1, description="Results to return; above RECALL_MAX_LIMIT (100) it is clamped, not refused")
    offset: str | None = Field(None, description="Results of the ranked list to skip: the same ranking, then the page (offset + limit at most RECALL_MAX_LIMIT); "
                               "anything but a whole number >= 0 is ignored with a warning, as AutoMem ignores it")
    per_query_limit: int | None = Field(None, ge=1, le=50, description="Results per query when `queries` holds several (default: `limit`)")
    sort: Sort | None = Field(
        None, description="Order (alias `order_by`): score, or by updated_at/timestamp; default score, time_desc for a time window without a query"
    )
    tags: list[str] = Field(default_factory=list, max_length=MAX_LIST_ITEMS, description="Scope: memories carrying any (or all, see tag_mode) of these tags")
    exclude_tags: list[str] = Field(default_factory=list, max_length=MAX_LIST_ITEMS, description="Drop memories carrying any of these tags (hierarchy-aware)")
    tag_mode: TagMode = Field("any", description="Whether a memory needs any or all of `tags`")
    tag_match: TagMatch = Field("prefix", description="prefix: `slack` matches `slack:channel:x`; exact: whole tags only")
    time_query: str | None = Field(None, max_length=200, description="A natural time expression (alias `time`): today, yesterday, last week, last 30 days, before 2025-03-01, between 2025-01-01 and 2025-01-31; days in RECALL_DATE_TIMEZONE")
    start: Instant | None = Field(None, description="ISO 8601 start of the time window (inclusive)")
    end: Instant | None = Field(None, description="ISO 8601 end of the time window (inclusive)")
    context: str | None = Field(None, max_length=500, description="Context label for boosting (e.g. coding-style)")
    language: str | None = Field(None, max_length=100, description="Programming language hint")
    active_path: str | None = Field(None, max_length=1000, description="Current file path, for language detection")
    context_tags: list[str] = Field(default_factory=list, max_length=MAX_LIST_ITEMS, description="Tags to boost (never excludes)")
    context_types: list[str] = Field(default_factory=list, max_length=MAX_LIST_ITEMS, description="Memory types to boost")
    priority_ids: list[str] = Field(default_factory=list, max_length=MAX_LIST_ITEMS, description="Memory ids to boost and fetch when the search missed them (filters still apply)")
    expand_relations: bool = Field(False, description="Follow graph edges from the results to related memories")
    expand_entities: bool = Field(False, description="Multi-hop through entities of the results (alias `entity_expansion`)")
    relation_limit: int | None = Field(None, ge=1, le=200, description="Relations followed per result (default RECALL_RELATION_LIMIT, 5)")
    expansion_limit: int | None = Field(None, ge=1, le=500, description="Expanded memories at most (default RECALL_EXPANSION_LIMIT, 25)")
    expand_min_importance: float = Field(0.0, ge=0.0, le=1.0, description="Minimum importance of expanded memories")
    expand_min_strength: float = Field(0.0, ge=0.0, le=1.0, description="Minimum strength of the edges followed")
    expand_respect_tags: bool = Field(False, description="Keep expanded memories inside the `tags` scope")
    state_mode: StateMode = Field("current", description="current: only what is valid now (superseded memories replaced by their chain's head); history: everything")
    current_only: bool | None = Field(None, description="Legacy form of state_mode; wins over it when given")
    state_debug: bool = Field(False, description="Report each suppression and replacement under state_filter")
    as_of: Instant | None = Field(
        None, description="ISO 8601 instant at which the state is evaluated: memories valid then (t_valid, else their timestamp, "
        "not after it; not expired or superseded by then)",
    )
    recency_bias: RecencyBias | None = Field(None, description="Relative-recency re-rank (default RECALL_RECENCY_BIAS, off)")
    scope_fallback: bool = Field(False, description="Fill a short tag-scoped page from an unscoped vector search")
    min_score: float | None = Field(None, ge=0.0, description="Minimum final score (default RECALL_MIN_SCORE, 0)")
    adaptive_floor: bool | None = Field(None, description="Adaptive score floor (default RECALL_ADAPTIVE_FLOOR, true)")
    auto_decompose: bool = Field(False, description="Add supplementary queries from the query's names and topics")
    scoring_profile: ScoringProfile | None = Field(None, description="Scoring definitions (default SEARCH_SCORING_PROFILE, engram)")
    parse_dates: bool = Field(
        False, description="Take an exact date in `query` (2026-05-13, 2026/05/13, May 13 2026, yesterday) as the time window "
        "(that day in RECALL_DATE_TIMEZONE) and the rest as the query; only without time_query/start/end. Off by default (AutoMem's behaviour)",
    )

    @field_validator("query")
    @classmethod
    def _strip(cls, value: str | None) -> str | None:
        return value.strip() or None if value is not None else None

    def page_offset(self) -> tuple[int, list[str]]:
        """`offset` as a whole number >= 0; anything else is ignored, with a warning."""
        raw = (self.offset or "").strip()
        if not raw:
            return 0, []
        if raw.isdigit() and int(raw) <= 1_000_000:
            return int(raw), []
        return 0, [f"offset {raw[:40]!r} is not a whole number >= 0: ignored"]

    def to_request(self, settings, *, dimension: int, now: datetime, bank: str) -> RecallRequest:
        """Resolve into the pipeline's request: Settings defaults, clamps, the time window, the vector."""
        try:
            window = resolve_time_window(start=self.start, end=self.end, time_query=self.time_query, now=now, tz=settings.date_zone)
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        query = self.query
        phrase = None
        if self.parse_dates and window is None and query:
            phrase = extract_date_phrase(query, now, settings.date_zone)
        if phrase is not None:
            # AutoMem's window semantics (both bounds inclusive), as for time_query=today.
            window, query = TimeWindow(phrase.start, phrase.end, phrase.phrase), phrase.content_query or None
        state_mode = self.state_mode if self.current_only is None else ("current" if self.current_only else "history")
        offset, offset_warnings = self.page_offset()
        return RecallRequest.from_settings(
            settings, bank=bank,
            query=query, queries=list(self.queries),
            embedding=check_vector(self.embedding, dimension, "Invalid embedding:") if self.embedding else None,
            limit=self.limit, offset=offset, per_query_limit=self.per_query_limit,
            sort=self.sort or "score", sort_given=self.sort is not None,
            tags=list(self.tags), exclude_tags=list(self.exclude_tags), tag_mode=self.tag_mode, tag_match=self.tag_match,
            window=window, context=self.context, language=self.language, active_path=self.active_path,
            context_tags=list(self.context_tags), context_types=list(self.context_types), priority_ids=list(self.priority_ids),
            expand_relations=self.expand_relations, expand_entities=self.expand_entities,
            relation_limit=self.relation_limit, expansion_limit=self.expansion_limit,
            expand_min_importance=self.expand_min_importance, expand_min_strength=self.expand_min_strength,
            expand_respect_tags=self.expand_respect_tags, state_mode=state_mode, state_debug=self.state_debug, as_of=self.as_of,
            recency_bias=self.recency_bias, scope_fallback=self.scope_fallback, min_score=self.min_score,
            adaptive_floor=self.adaptive_floor, auto_decompose=self.auto_decompose, scoring_profile=self.scoring_profile,
            warnings=self.warnings + offset_warnings,
        )


class RecallResult(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str
    memory: dict[str, Any] = Field(..., description="The stored memory (content, tags, importance, timestamp, type, metadata, ...), without its id")
    final_score: float = Field(..., description="The ranking score: the weighted components plus the context bonus")
    score: float = Field(..., description="Same as final_score (AutoMem clients read either)")
    match_type: str = Field(..., description="vector, keyword, metadata, priority_id, trending, tag, relation, entity_expansion or state_replacement")
    score_components: dict[str, Any] = Field(..., description="vector, keyword, metadata, exact, tag, importance, confidence, recency, relation, relevance, context, evidence, relevance_gated, ...")
    relations: list[dict[str, Any]] = Field(default_factory=list)
    source: str = "opensearch"
    match_score: float | None = Field(None, description="The raw retrieval score: cosine for vector hits, else the keyword score")
    original_score: float | None = Field(None, description="The score before the relative-recency re-rank")
    outside_tag_scope: bool | None = Field(None, description="A scope_fallback fill")
    deduped_from: list[str] | None = None
    state_replaces: str | None = Field(None, description="The superseded memory this chain head stands in for")
    expanded_from_entity: str | None = None


class RecallResponse(BaseModel):
    model_config = ConfigDict(extra="allow")

    status: str = "success"
    query: str | None
    results: list[RecallResult]
    count: int
    dedup_removed: int = 0
    sort: str
    state_mode: str
    keywords: list[str]
    vector_search: dict[str, Any]
    tag_mode: str
    tag_match: str
    tags: list[str]
    exclude_tags: list[str]
    scoring_profile: str
    queries: list[str] | None = None
    state_filter: dict[str, Any] | None = None
    tag_scope: dict[str, Any] | None = None
    scope_fallback: bool | None = None
    score_filter: dict[str, Any] | None = None
    context_priority: dict[str, Any] | None = None
    time_window: dict[str, Any] | None = None
    recency_bias: str | None = None
    expansion: dict[str, Any] | None = None
    entity_expansion: dict[str, Any] | None = None
    timings: dict[str, float] = Field(..., description="Milliseconds per stage")
    query_time_ms: float
    warnings: list[str] | None = Field(None, description="Unknown parameters that were ignored, and similar notes")
