"""Hindsight's request and response models (spec 002; names, defaults and shapes as hindsight-client
1.1.0 sends and reads them). Every input is bounded; NaN and Infinity are refused."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator

from service.clock.instants import Instant, to_instant

TagsMatch = Literal["any", "all", "any_strict", "all_strict", "exact"]
FactType = Literal["world", "experience", "observation"]
# Bounds of a compound tag filter: each leaf is a filter clause.
MAX_TAG_GROUP_DEPTH = 8
MAX_TAG_GROUP_LEAVES = 100
MAX_TAGS = 200


class _In(BaseModel):
    model_config = ConfigDict(extra="ignore", allow_inf_nan=False, populate_by_name=True)


# --- tag groups -------------------------------------------------------------------------------
class TagGroupLeaf(_In):
    """A leaf tag filter: matches memories by tag list and match mode."""

    tags: list[str] = Field(..., max_length=MAX_TAGS)
    match: TagsMatch = "any_strict"
    resolve: Literal["exact", "fuzzy"] = Field("exact", description="fuzzy: the bank's tags similar to these (trigram similarity >= 0.3)")


class TagGroupAnd(_In):
    """Compound AND group: all child filters must match."""

    and_: list[TagGroup] = Field(..., alias="and", max_length=MAX_TAG_GROUP_LEAVES)


class TagGroupOr(_In):
    """Compound OR group: at least one child filter must match."""

    or_: list[TagGroup] = Field(..., alias="or", max_length=MAX_TAG_GROUP_LEAVES)


class TagGroupNot(_In):
    """Compound NOT group: child filter must NOT match."""

    not_: TagGroup = Field(..., alias="not")


def _group_kind(value: Any) -> str:
    if isinstance(value, dict):
        for key in ("and", "or", "not"):
            if key in value:
                return key
        return "leaf"
    for kind, cls in (("and", TagGroupAnd), ("or", TagGroupOr), ("not", TagGroupNot)):
        if isinstance(value, cls):
            return kind
    return "leaf"


TagGroup = Annotated[
    Union[Annotated[TagGroupLeaf, Tag("leaf")], Annotated[TagGroupAnd, Tag("and")], Annotated[TagGroupOr, Tag("or")], Annotated[TagGroupNot, Tag("not")]],
    Discriminator(_group_kind),
]
for _m in (TagGroupAnd, TagGroupOr, TagGroupNot):
    _m.model_rebuild()


# --- recall -----------------------------------------------------------------------------------
class EntityIncludeOptions(_In):
    max_tokens: int = Field(500, ge=0, le=1_000_000, description="Maximum tokens for entity observations")


class ChunkIncludeOptions(_In):
    max_tokens: int = Field(8192, ge=0, le=1_000_000, description="Maximum tokens for chunks (chunks may be truncated)")


class SourceFactsIncludeOptions(_In):
    max_tokens: int = Field(4096, ge=-1, le=1_000_000, description="Maximum total tokens for source facts across all observations (-1 = unlimited)")
    max_tokens_per_observation: int = Field(-1, ge=-1, le=1_000_000, description="Maximum tokens of source facts per observation (-1 = unlimited)")


class IncludeOptions(_In):
    entities: EntityIncludeOptions | None = Field(default_factory=EntityIncludeOptions, description="Entities of the results; null to leave out")
    chunks: ChunkIncludeOptions | None = Field(None, description="The chunks the results were stored as; {} to include")
    source_facts: SourceFactsIncludeOptions | None = Field(None, description="Source memories of observation results; {} to include")


class RerankOptions(_In):
    prune: bool | None = None
    dedup: bool | None = None


class MinScores(_In):
    semantic: float | None = Field(None, description="Vector arm only: minimum cosine (inclusive)")
    keyword: float | None = Field(None, ge=0, description="Keyword arm only: minimum BM25 score (inclusive)")
    reranker: float | None = Field(None, description="No reranker is configured here: refused with 400")
    final: float | None = Field(None, description="Post-filter: minimum final score of every returned result")


class TemporalWindow(_In):
    start: Instant = Field(..., description="Start of the window (inclusive)")
    end: Instant = Field(..., description="End of the window (inclusive)")


class HindsightRecallBody(_In):
    """Request model for recall endpoint (spec 002)."""

    query: str = Field(..., max_length=20_000)
    types: list[FactType] | None = Field(None, max_length=3, description="world, experience, observation; all when omitted")
    prefer_observations: bool | None = None
    rerank: RerankOptions | None = Field(None, description="Accepted; no decision model runs here, so it has no effect (reported in `warnings`)")
    budget: Literal["low", "mid", "high"] = "mid"
    max_tokens: int = Field(4096, ge=0, le=1_000_000)
    trace: bool = False
    query_timestamp: str | None = Field(None, max_length=64, description="ISO 8601: the anchor of relative dates and recency")
    include: IncludeOptions = Field(default_factory=IncludeOptions)
    tags: list[str] | None = Field(None, max_length=MAX_TAGS)
    tags_match: TagsMatch = "any"
    tag_groups: list[TagGroup] | None = Field(None, max_length=MAX_TAG_GROUP_LEAVES)
    min_scores: MinScores | None = None
    temporal_window: TemporalWindow | None = None

    @field_validator("tag_groups")
    @classmethod
    def _bounded(cls, groups: list | None) -> list | None:
        if groups:
            depth, leaves = _measure(groups)
            if depth > MAX_TAG_GROUP_DEPTH:
                raise ValueError(f"tag_groups nest {depth} levels deep; at most {MAX_TAG_GROUP_DEPTH}")
            if leaves > MAX_TAG_GROUP_LEAVES:
                raise ValueError(f"tag_groups hold {leaves} leaves; at most {MAX_TAG_GROUP_LEAVES}")
        return groups


def _measure(groups: list, level: int = 1) -> tuple[int, int]:
    depth, leaves = level, 0
    for g in groups:
        if isinstance(g, TagGroupLeaf):
            leaves += 1
            continue
        children = g.and_ if isinstance(g, TagGroupAnd) else g.or_ if isinstance(g, TagGroupOr) else [g.not_]
        d, n = _measure(children, level + 1)
        depth, leaves = max(depth, d), leaves + n
    return depth, leaves


class RecallScores(BaseModel):
    final: float = Field(..., description="The ranking score (the weighted components of AutoMem's recall)")
    reranker: float | None = Field(None, description="Always null: no cross-encoder runs here")
    semantic: float | None = Field(None, description="Cosine, when the vector arm surfaced the result")
    keyword: float | None = Field(None, description="BM25, when the keyword arm surfaced the result")


class HindsightRecallResult(BaseModel):
    id: str
    text: str
    type: str | None = None
    entities: list[str] | None = None
    context: str | None = None
    occurred_start: str | None = None
    occurred_end: str | None = None
    mentioned_at: str | None = None
    document_id: str | None = None
    metadata: dict[str, str] | None = None
    chunk_id: str | None = None
    tags: list[str] | None = None
    source_fact_ids: list[str] | None = None
    scores: RecallScores | None = None


class HindsightRecallResponse(BaseModel):
    results: list[HindsightRecallResult]
    trace: dict[str, Any] | None = None
    entities: dict[str, Any] | None = None
    chunks: dict[str, Any] | None = None
    source_facts: dict[str, HindsightRecallResult] | None = None
    source_facts_truncated: bool | None = None
    warnings: list[str] | None = Field(None, description="What was accepted but had no effect (rerank options, ...)")


# --- retain -----------------------------------------------------------------------------------
class EntityIn(_In):
    text: str = Field(..., min_length=1, max_length=256, description="The entity name/text")
    type: str | None = Field(None, max_length=64, description="e.g. PERSON, ORG, CONCEPT")


class MemoryItem(_In):
    content: str | list[dict[str, Any]] = Field(..., description="The text, or content blocks (text blocks only: no vision model here)")
    timestamp: datetime | Literal["unset"] | None = Field(None, description="When it happened (ISO 8601); omitted: now; 'unset': timeless")
    context: str | None = Field(None, max_length=2_000)
    metadata: dict[str, str] | None = None
    document_id: str | None = Field(None, min_length=1, max_length=512)
    entities: list[EntityIn] | None = Field(None, max_length=200)
    resolve_entities: bool = True
    tags: list[str] | None = Field(None, max_length=MAX_TAGS)
    observation_scopes: Any = None
    strategy: str | None = Field(None, max_length=200)
    update_mode: Literal["replace", "append"] | None = None

    @field_validator("timestamp", mode="before")
    @classmethod
    def _timestamp(cls, value: Any) -> Any:
        """Hindsight's rule: an ISO 8601 instant (service/clock/instants.py), or 'unset'; empty is
        omitted; anything else (a number too) is a validation error in Hindsight's words."""
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        if isinstance(value, str) and value.strip().lower() == "unset":
            return "unset"
        try:
            return to_instant(value)
        except ValueError:
            raise ValueError(
                f"Invalid timestamp/event_date format: {str(value)[:64]!r}. Expected ISO format like '2024-01-15T10:30:00' "
                "or '2024-01-15T10:30:00Z', or the special value 'unset' to store without a timestamp."
            ) from None


class RetainBody(_In):
    items: list[MemoryItem] = Field(..., max_length=1000)
    async_: bool = Field(False, alias="async", description="true: answered at once, stored in the background")
    document_tags: list[str] | None = Field(None, max_length=MAX_TAGS)
    operation_id: str | None = Field(None, max_length=200, description="Makes an async retry idempotent (the memories' ids derive from it)")


class RetainResponse(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    success: bool
    bank_id: str
    items_count: int
    async_: bool = Field(..., alias="async", serialization_alias="async")
    operation_id: str | None = None
    memory_ids: list[str] | None = Field(None, description="The stored memories' ids (synchronous retain)")


# --- banks ------------------------------------------------------------------------------------
class Disposition(BaseModel):
    skepticism: int = Field(3, ge=1, le=5)
    literalism: int = Field(3, ge=1, le=5)
    empathy: int = Field(3, ge=1, le=5)


class BankBody(_In):
    """Hindsight's CreateBankRequest: every field optional; only the ones given change."""

    name: str | None = Field(None, max_length=500)
    disposition: Disposition | None = None
    disposition_skepticism: int | None = Field(None, ge=1, le=5)
    disposition_literalism: int | None = Field(None, ge=1, le=5)
    disposition_empathy: int | None = Field(None, ge=1, le=5)
    mission: str | None = Field(None, max_length=20_000)
    background: str | None = Field(None, max_length=20_000)
    reflect_mission: str | None = Field(None, max_length=20_000)
    retain_mission: str | None = Field(None, max_length=20_000)
    retain_extraction_mode: str | None = Field(None, max_length=100)
    retain_custom_instructions: str | None = Field(None, max_length=20_000)
    retain_chunk_size: int | None = Field(None, ge=100, le=20_000, description="Characters per chunk of a long retained item")
    retain_structured_chunk_size: int | None = Field(None, ge=1, le=1_000_000)
    retain_max_attachments_per_chunk: int | None = Field(None, ge=0, le=1_000)
    enable_observations: bool | None = None
    observations_mission: str | None = Field(None, max_length=20_000)
    enable_text_search: bool | None = Field(None, description="false: recall runs without its keyword arms")
    enable_temporal_retrieval: bool | None = Field(None, description="false: recall runs without its temporal arm")
    enable_graph_retrieval: bool | None = Field(None, description="false: no graph expansion at any budget")
    enable_reranking: bool | None = Field(None, description="Accepted; no reranker runs here")


class BankProfileResponse(BaseModel):
    bank_id: str
    name: str
    disposition: Disposition
    mission: str
    background: str | None = None


class HindsightDeleteResponse(BaseModel):
    success: bool
    message: str | None = None
    deleted_count: int | None = None


class BankDeleteResponse(HindsightDeleteResponse):
    memories_deleted: int
    edges_deleted: int
    consolidation_records_deleted: int
    recall_ledger_deleted: int = Field(0, description="Signet session dedupe documents of the bank")
    recall_log_deleted: int = Field(0, description="Recall log documents of the bank (RECALL_LOG_ENABLED)")
    operations_deleted: int = Field(0, description="Async operations of the bank (async retains)")
    profile_deleted: bool
