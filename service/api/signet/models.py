"""Request and response models of Signet's recall surface (spec 004), and their translation into the
one internal RecallRequest.

Wire names are Signet's (camelCase); the snake_case spellings its clients also send are accepted
(`include_recalled`, `session_key`, `aggregate_budget`, ...). Every input is bounded: strings by
length and valid Unicode (service/memory/limits.py), numbers finite and in range, lists short.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from service.errors import BadRequest
from service.memory.types import canonical_type
from service.recall.request import RecallRequest
from service.api.query_model import QueryModel
from service.memory.tags import clean_tags, split_list_param
from service.clock.instants import InstantOrBlank
from service.memory.limits import check_tags, check_text

# spec 004: "Canonical clients serialize an omitted limit as 10 and bound request values to 1..100".
DEFAULT_LIMIT, MAX_LIMIT = 10, 100
MAX_QUERY_CHARS = 10_000
NAME_CHARS = 256  # who, project, agentId, type: keyword values
SESSION_KEY_CHARS = 512
MAX_TAGS = 200
BUDGETS = ("small", "medium", "large")
MAX_WARNINGS = 20  # unknown fields named one by one; the rest counted
Facet = Literal["session", "source", "captured", "observed", "occurred", "valid"]


def _aliases(*names: str) -> AliasChoices:
    return AliasChoices(*names)


class SignetBody(BaseModel):
    """A Signet request body: unknown fields are accepted (clients send extras) and named by
    `warnings`, nested ones by their path (`time.zone`)."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False, populate_by_name=True)

    _unknown: list[str] = PrivateAttr(default_factory=list)

    @model_validator(mode="after")
    def _collect_unknown(self):
        extra = self.__pydantic_extra__ or {}
        self._unknown = sorted(extra)
        extra.clear()
        return self

    def unknown_fields(self) -> list[str]:
        names = list(self._unknown)
        for name in type(self).model_fields:
            value = getattr(self, name)
            if isinstance(value, SignetBody):
                names += [f"{name}.{inner}" for inner in value.unknown_fields()]
        return names

    @property
    def warnings(self) -> list[str]:
        names = self.unknown_fields()
        out = [f"Unknown field '{name[:100]}' ignored" for name in names[:MAX_WARNINGS]]
        return out + ([f"... and {len(names) - MAX_WARNINGS} more unknown fields ignored"] if len(names) > MAX_WARNINGS else [])


class TimeOptions(SignetBody):
    start: InstantOrBlank = Field(None, description="ISO 8601 start of the window (inclusive)")
    end: InstantOrBlank = Field(None, description="ISO 8601 end of the window (exclusive)")
    facets: list[Facet] | None = Field(None, max_length=12, description="Which times must fall in the window (default: all six)")
    mode: Literal["auto", "timeline", "filter"] = Field("auto", description="timeline: the window in time order; filter: the query ranked inside it; auto: timeline without a content query")


class SignetRecallBody(SignetBody):
    """POST /api/memory/recall. Only `query` is required."""

    query: str | None = Field(None, description="What to recall (required); exact dates in it (2026/05/13, May 13 2026, yesterday) become a time window")
    limit: int | None = Field(None, description="Results (omitted: 10; bounded to 1..100)")
    type: str | None = Field(None, max_length=NAME_CHARS, description="Memory type (preference, decision, ... or an Engram type)")
    tags: str | list[str] | None = Field(None, description="Comma-separated tags, all required")
    who: str | None = Field(None, max_length=NAME_CHARS, description="Only memories written by this author")
    project: str | None = Field(None, max_length=NAME_CHARS, description="Only memories of this project")
    pinned: bool | None = Field(None, description="true: pinned memories only")
    importance_min: float | None = Field(None, ge=0.0, le=1.0, validation_alias=_aliases("importance_min", "importanceMin"))
    since: InstantOrBlank = Field(None, description="ISO 8601: created at or after")
    until: InstantOrBlank = Field(None, description="ISO 8601: created at or before")
    time: TimeOptions | None = Field(None, description="An explicit time window (wins over dates in the query)")
    aggregate: bool = Field(False, description="Aggregate recall; without a language model the evidence comes back with aggregate.partial")
    aggregateBudget: Literal["small", "medium", "large"] | None = Field(None, validation_alias=_aliases("aggregateBudget", "aggregate_budget"))
    saveAggregate: bool | None = Field(None, validation_alias=_aliases("saveAggregate", "save_aggregate"))
    agentId: str | None = Field(None, max_length=NAME_CHARS, validation_alias=_aliases("agentId", "agent_id"))
    sessionKey: str | None = Field(None, max_length=SESSION_KEY_CHARS, validation_alias=_aliases("sessionKey", "session_key"), description="Session dedupe: what this session was shown in its context epoch is not shown again")
    includeRecalled: bool = Field(False, validation_alias=_aliases("includeRecalled", "include_recalled"), description="Return repeats too, marked already_recalled")
    scope: str | None = Field(None, max_length=200, description="A memory scope: the bank to read (as X-Bank)")

    @field_validator("query", mode="before")
    @classmethod
    def _query_is_text(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, str):
            raise ValueError("query must be a string")
        return value

    @field_validator("aggregateBudget", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value


class SearchQuery(QueryModel):
    """GET /api/memory/search: POST /api/memory/recall's fields as a query string."""

    aliases: ClassVar[dict[str, str]] = {
        "session_key": "sessionKey", "include_recalled": "includeRecalled", "agent_id": "agentId", "importanceMin": "importance_min",
    }
    list_fields: ClassVar[tuple[str, ...]] = ("tags",)
    read_elsewhere: ClassVar[tuple[str, ...]] = ("scope",)

    q: str | None = Field(None, description="Search query (required)")
    limit: int | None = Field(None, description="Max results (default 10; bounded to 1..100)")
    type: str | None = Field(None, max_length=NAME_CHARS)
    tags: list[str] = Field(default_factory=list, max_length=MAX_TAGS, description="Comma-separated tags, all required")
    who: str | None = Field(None, max_length=NAME_CHARS)
    project: str | None = Field(None, max_length=NAME_CHARS)
    pinned: bool | None = Field(None, description="`1` or `true`: pinned memories only")
    importance_min: float | None = Field(None, ge=0.0, le=1.0)
    since: InstantOrBlank = Field(None, description="ISO timestamp lower bound")
    until: InstantOrBlank = Field(None, description="ISO timestamp upper bound")
    sessionKey: str | None = Field(None, max_length=SESSION_KEY_CHARS, description="Session key for context dedupe (also session_key)")
    agentId: str | None = Field(None, max_length=NAME_CHARS, description="Agent of the session (also agent_id)")
    includeRecalled: bool = Field(False, description="`1` or `true` to return repeats (also include_recalled)")


class LegacySearchQuery(QueryModel):
    """GET /memory/search: keyword search, or filters alone."""

    list_fields: ClassVar[tuple[str, ...]] = ("tags",)
    read_elsewhere: ClassVar[tuple[str, ...]] = ("scope",)

    q: str | None = Field(None, max_length=MAX_QUERY_CHARS, description="Keyword query (optional)")
    distinct: str | None = Field(None, max_length=32, description="`who`: the distinct authors instead (other parameters ignored)")
    limit: int | None = Field(None, description="Max results (default 20 with a query, 50 without; at most 1000)")
    type: str | None = Field(None, max_length=NAME_CHARS)
    tags: list[str] = Field(default_factory=list, max_length=MAX_TAGS)
    who: str | None = Field(None, max_length=NAME_CHARS)
    pinned: bool | None = None
    importance_min: float | None = Field(None, ge=0.0, le=1.0)
    since: InstantOrBlank = Field(None)


class SimilarQuery(QueryModel):
    read_elsewhere: ClassVar[tuple[str, ...]] = ("scope",)

    id: str | None = Field(None, max_length=200, description="The memory whose vector anchors the search (required)")
    k: int | None = Field(None, description="Results (default 10; bounded to 1..100)")
    type: str | None = Field(None, max_length=NAME_CHARS)


class CompactionComplete(SignetBody):
    """POST /api/hooks/compaction-complete: the harness compacted its context into `summary`."""

    harness: str = Field(..., max_length=NAME_CHARS)
    summary: str = Field(..., description="The compaction summary, stored as a session_summary memory")
    sessionKey: str | None = Field(None, max_length=SESSION_KEY_CHARS, validation_alias=_aliases("sessionKey", "session_key"))
    agentId: str | None = Field(None, max_length=NAME_CHARS, validation_alias=_aliases("agentId", "agent_id"))
    project: str | None = Field(None, max_length=NAME_CHARS)
    scope: str | None = Field(None, max_length=200, description="A memory scope: the bank to write (as X-Bank)")


# --- responses (documentation; the routes send plain dicts) ---------------------------------------
class RecallRow(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str
    content: str
    score: float = Field(..., ge=0.0, le=1.0, description="The ranking score in 0..1 (above 0.95 compressed towards 1, order kept; 4 decimals)")
    source: str = Field(..., description="hybrid (lexical and semantic evidence), vector, keyword or graph")
    type: str | None = Field(None, description="The memory type, lowercased")
    tags: str = Field(..., description="Comma-separated")
    pinned: bool
    importance: float | None
    who: str | None
    project: str | None
    created_at: str | None
    temporal_facet: str | None = None
    temporal_start_at: str | None = None
    temporal_end_at: str | None = None
    subject_type: str = "memory"
    subject_id: str
    supplementary: bool = False
    already_recalled: bool = False


class RecallMeta(BaseModel):
    model_config = ConfigDict(extra="allow")

    totalReturned: int
    hasSupplementary: bool
    noHits: bool
    timings: dict[str, Any] = Field(..., description="totalMs and stages [{name, durationMs}]")
    dedupe: dict[str, Any] = Field(..., description="enabled, contextEpoch, suppressed, repeatedReturned")
    temporal: dict[str, Any] | None = Field(None, description="mode, source, originalQuery, contentQuery, start, end, facets")


class SignetRecallResponse(BaseModel):
    model_config = ConfigDict(extra="allow")

    results: list[RecallRow]
    query: str
    method: Literal["hybrid", "keyword"]
    meta: RecallMeta
    aggregate: dict[str, Any] | None = None
    warnings: list[str] | None = Field(None, description="The request's unknown fields or parameters, ignored")


# --- translation ---------------------------------------------------------------------------------
def bounded_limit(value: int | None, default: int, maximum: int) -> int:
    return default if value is None else max(1, min(int(value), maximum))


def checked(value: str | None, field: str, max_chars: int) -> str | None:
    """A client string: stripped, valid Unicode, bounded; empty means not given."""
    if value is None:
        return None
    check_text(value, field, max_chars=max_chars)
    return value.strip() or None


def tag_list(value: str | list[str] | None, limits) -> list[str]:
    tags = clean_tags(split_list_param(value if isinstance(value, (str, list)) else None))
    if len(tags) > MAX_TAGS:
        raise BadRequest(f"tags holds {len(tags)} tags; the maximum is {MAX_TAGS}")
    check_tags(tags, limits)
    return tags


def type_filter(value: str | None) -> list[str]:
    """Signet's lowercase types match Engram's canonical ones (`preference` = Preference); others as given."""
    if not value:
        return []
    canonical, _ = canonical_type(value)
    return list(dict.fromkeys([value, canonical]))


def filters(settings, *, type_: str | None, tags, who: str | None, project: str | None, pinned: bool | None,
            importance_min: float | None, since: datetime | None, until: datetime | None) -> dict[str, Any]:
    """The RecallRequest values of Signet's filters, every string checked."""
    return {
        "types": type_filter(checked(type_, "type", NAME_CHARS)),
        "tags": tag_list(tags, settings.limits), "tag_mode": "all", "caller_tags_only": True,
        "who": checked(who, "who", NAME_CHARS), "project": checked(project, "project", NAME_CHARS),
        "pinned": True if pinned else None, "importance_min": importance_min,
        "since": since, "until": until,
    }


def recall_request(settings, *, bank: str, query: str | None, limit: int, values: dict[str, Any], **more: Any) -> RecallRequest:
    return RecallRequest.from_settings(settings, bank=bank, query=query, limit=limit, **values, **more)
