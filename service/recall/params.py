"""GET /recall parameters: parsed from the query string, validated once, defaults from settings.

List parameters accept repeated parameters and comma-separated values alike. Every invalid
value is a 400 with the error shape; a limit above RECALL_MAX_LIMIT is clamped, not refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime

from starlette.datastructures import QueryParams

from service.config import Settings
from service.errors import BadRequest
from service.tags import split_list_param
from service.timeparse import TimeWindow, parse_iso_datetime, resolve_time_window
from service.validation import check_vector

SORTS = ("score", "time_desc", "time_asc", "updated_desc", "updated_asc")
TAG_MODES = ("any", "all")
TAG_MATCHES = ("prefix", "exact")
STATE_MODES = ("current", "history")
RECENCY_BIAS = ("off", "on", "auto")
PROFILES = ("engram", "automem")
_TRUE = {"1", "true", "yes", "on", "y", "t"}
_FALSE = {"0", "false", "no", "off", "n", "f"}


@dataclass
class RecallParams:
    query: str | None = None
    queries: list[str] = field(default_factory=list)
    embedding: list[float] | None = None
    limit: int = 5
    per_query_limit: int | None = None
    sort: str = "score"
    sort_given: bool = False
    tags: list[str] = field(default_factory=list)
    exclude_tags: list[str] = field(default_factory=list)
    tag_mode: str = "any"
    tag_match: str = "prefix"
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
    state_mode: str = "current"
    state_debug: bool = False
    as_of: datetime | None = None
    recency_bias: str = "off"
    scope_fallback: bool = False
    min_score: float = 0.0
    adaptive_floor: bool = True
    auto_decompose: bool = False
    scoring_profile: str = "engram"


def _bool(qp: QueryParams, name: str, default: bool) -> bool:
    raw = qp.get(name)
    if raw is None or raw == "":
        return default
    low = raw.strip().lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise BadRequest(f"Invalid {name}: expected true or false, got {raw!r}")


def _num(qp: QueryParams, name: str, default, *, kind=float, lo=None, hi=None):
    raw = qp.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = kind(raw.strip())
    except ValueError:
        raise BadRequest(f"Invalid {name}: expected a{'n integer' if kind is int else ' number'}, got {raw!r}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise BadRequest(f"Invalid {name}: must be a finite number")
    if lo is not None and value < lo:
        raise BadRequest(f"Invalid {name}: must be >= {lo}, got {raw!r}")
    if hi is not None and value > hi:
        raise BadRequest(f"Invalid {name}: must be <= {hi}, got {raw!r}")
    return value


def _choice(qp: QueryParams, name: str, choices: tuple[str, ...], default: str, *, alias: str | None = None) -> str:
    raw = qp.get(name)
    if (raw is None or raw == "") and alias:
        raw = qp.get(alias)
        name = alias if raw else name
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value not in choices:
        raise BadRequest(f"Invalid {name}: {raw!r}; expected one of {', '.join(choices)}")
    return value


def _embedding(qp: QueryParams, dimension: int) -> list[float] | None:
    raw = [v for v in qp.getlist("embedding") if v.strip()]
    if not raw:
        return None
    parts = [p for v in raw for p in v.replace("[", "").replace("]", "").split(",") if p.strip()]
    try:
        vector = [float(p) for p in parts]
    except ValueError:
        raise BadRequest("Invalid embedding: expected comma-separated numbers") from None
    return check_vector(vector, dimension, "Invalid embedding:")


# Bounds on list parameters: each item is a filter clause, an arm or a whole extra query.
MAX_QUERIES = 20
MAX_LIST_ITEMS = 200


def _bounded(name: str, values: list[str], cap: int = MAX_LIST_ITEMS) -> list[str]:
    if len(values) > cap:
        raise BadRequest(f"Invalid {name}: at most {cap} values, got {len(values)}")
    return values


def parse_recall_params(qp: QueryParams, settings: Settings, *, dimension: int, now: datetime) -> RecallParams:
    p = RecallParams()
    query = qp.get("query")
    p.query = query.strip() if query and query.strip() else None
    p.queries = _bounded("queries", [q.strip() for q in qp.getlist("queries") + qp.getlist("queries[]") if q.strip()], MAX_QUERIES)
    p.embedding = _embedding(qp, dimension)
    limit = _num(qp, "limit", 5, kind=int, lo=1)
    p.limit = min(limit, settings.recall_max_limit)  # spec 000: clamped, not an error
    if _num(qp, "offset", 0, kind=int, lo=0) > 0:
        raise BadRequest("offset > 0 is not supported by ranked recall: raise limit instead (or use GET /memory/by-tag)")
    per_query = _num(qp, "per_query_limit", None, kind=int, lo=1, hi=50)
    p.per_query_limit = min(per_query, settings.recall_max_limit) if per_query else None
    p.sort = _choice(qp, "sort", SORTS, "score", alias="order_by")
    p.sort_given = bool(qp.get("sort") or qp.get("order_by"))
    p.tags = _bounded("tags", split_list_param(qp.getlist("tags") + qp.getlist("tags[]")))
    p.exclude_tags = _bounded("exclude_tags", split_list_param(qp.getlist("exclude_tags") + qp.getlist("exclude_tags[]")))
    p.tag_mode = _choice(qp, "tag_mode", TAG_MODES, "any")
    p.tag_match = _choice(qp, "tag_match", TAG_MATCHES, "prefix")
    try:
        p.window = resolve_time_window(
            start=qp.get("start") or None, end=qp.get("end") or None, time_query=qp.get("time_query") or qp.get("time") or None, now=now
        )
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
    p.context = qp.get("context") or None
    p.language = qp.get("language") or None
    p.active_path = qp.get("active_path") or None
    p.context_tags = _bounded("context_tags", split_list_param(qp.getlist("context_tags")))
    p.context_types = _bounded("context_types", split_list_param(qp.getlist("context_types")))
    p.priority_ids = _bounded("priority_ids", split_list_param(qp.getlist("priority_ids")))
    p.expand_relations = _bool(qp, "expand_relations", False)
    p.expand_entities = _bool(qp, "expand_entities", False) or _bool(qp, "entity_expansion", False)
    p.relation_limit = _num(qp, "relation_limit", settings.recall_relation_limit, kind=int, lo=1, hi=200)
    p.expansion_limit = _num(qp, "expansion_limit", settings.recall_expansion_limit, kind=int, lo=1, hi=500)
    p.expand_min_importance = _num(qp, "expand_min_importance", 0.0, lo=0.0, hi=1.0)
    p.expand_min_strength = _num(qp, "expand_min_strength", 0.0, lo=0.0, hi=1.0)
    p.expand_respect_tags = _bool(qp, "expand_respect_tags", False)
    # state_mode is validated before current_only precedence (spec 003).
    p.state_mode = _choice(qp, "state_mode", STATE_MODES, "current")
    if qp.get("current_only") not in (None, ""):
        p.state_mode = "current" if _bool(qp, "current_only", True) else "history"
    p.state_debug = _bool(qp, "state_debug", False)
    if qp.get("as_of"):
        try:
            p.as_of = parse_iso_datetime(qp["as_of"])
        except ValueError as exc:
            raise BadRequest(f"Invalid as_of: {exc}") from None
    p.recency_bias = _choice(qp, "recency_bias", RECENCY_BIAS, settings.recall_recency_bias)
    p.scope_fallback = _bool(qp, "scope_fallback", False)
    p.min_score = _num(qp, "min_score", settings.recall_min_score, lo=0.0)
    p.adaptive_floor = _bool(qp, "adaptive_floor", settings.recall_adaptive_floor)
    p.auto_decompose = _bool(qp, "auto_decompose", False)
    p.scoring_profile = _choice(qp, "scoring_profile", PROFILES, settings.search_scoring_profile)
    if p.window and not (p.query or p.queries or p.embedding) and not p.sort_given:
        p.sort = "time_desc"  # spec 000: a time window without a query sorts newest first
    return p
