"""The filter vocabulary: pure builders of the query clauses every index reader shares (banks, ids,
tags, time windows, stored attributes, fact types, current state), the recall filter they make up,
and the order of listings. Plain values in, DSL dicts out (STYLE.md practice 4)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from service.clock.terms import window_terms
from service.filters.tag_groups import caller_prefix
from service.memory import codec
from service.memory.tags import hierarchy_key, normalize_tag

SOURCE_EXCLUDES = list(codec.SOURCE_EXCLUDES)  # what no reader of _source needs (service/memory/codec.py)
SOURCE = {"excludes": SOURCE_EXCLUDES}
# A recall's reads of stored memories (its page, its arms' hits that are not lean, chain heads,
# expanded memories) take the whole stored source: filtering it makes the engine parse and rewrite
# every document, which costs more than the bytes it saves, and a whole memory brings its stored
# stems, which ranking would otherwise compute again (docs/perf/README.md); the readers pick their
# fields (shaping's MEMORY_FIELDS, codec.shown). Asked for outright: a body with script fields
# returns no `_source` by default.
WHOLE_SOURCE = True


# Consolidation's cluster summaries are Hindsight's observations.
OBSERVATION_TYPE = "MetaPattern"


MATCH_NOTHING = {"bool": {"must_not": [{"match_all": {}}]}}


def bank_term(bank: str) -> dict:
    return {"term": {"bank": bank}}


def by_tags_query(bank: str, tags: Sequence[str]) -> dict:
    """GET / DELETE /memory/by-tag: any of `tags`, exact and case-insensitive (AutoMem: toLower(tag) IN $tags)."""
    return {"bool": {"filter": [{"term": {"bank": bank}}, {"terms": {"tags_norm": sorted({t.strip().lower() for t in tags})}}]}}


def ids_query(bank: str, ids: Sequence[str]) -> dict:
    """These memories of this bank (the bank filter keeps other banks' ids out)."""
    return {"bool": {"filter": [{"term": {"bank": bank}}, {"ids": {"values": list(ids)}}]}}


# A memory with a vector. One without has lost it to an update made in the engine directly (the index
# keeps vectors out of `_source`): /health counts those, the drift repair and re-embedding find them.
HAS_VECTOR: dict = {"exists": {"field": "embedding"}}


def without_vector(excluded_types: Sequence[str] = ()) -> list[dict]:
    """`must_not` clauses: a memory without a vector, not of `excluded_types` (the drift repair's)."""
    return [HAS_VECTOR, *([{"terms": {"type": list(excluded_types)}}] if excluded_types else [])]


def count_query(bank: str, excluded_types: Sequence[str] = ()) -> dict:
    """The bank's memories, without internal artifact types (/health's memory_count)."""
    return {"bool": {"filter": [{"term": {"bank": bank}}], "must_not": [{"terms": {"type": list(excluded_types)}}] if excluded_types else []}}


# The one importance order (AutoMem memories_by_tag and get_related_memories: ORDER BY m.importance
# DESC, m.timestamp DESC); the id makes pages stable. Trending recall, anchors and entity expansion too.
IMPORTANCE_SORT: list[dict] = [
    {"importance": {"order": "desc", "missing": "_last"}},
    {"timestamp": {"order": "desc", "missing": "_last"}},
    {"id": "asc"},
]
BY_TAG_SORT = IMPORTANCE_SORT


SORT_ORDERS: dict[str, list[dict]] = {
    "time_desc": [{"updated_at": {"order": "desc", "missing": "_last"}}, {"timestamp": {"order": "desc", "missing": "_last"}}],
    "updated_desc": [{"updated_at": {"order": "desc", "missing": "_last"}}, {"timestamp": {"order": "desc", "missing": "_last"}}],
    "time_asc": [{"updated_at": {"order": "asc", "missing": "_last"}}, {"timestamp": {"order": "asc", "missing": "_last"}}],
    "updated_asc": [{"updated_at": {"order": "asc", "missing": "_last"}}, {"timestamp": {"order": "asc", "missing": "_last"}}],
    "score": IMPORTANCE_SORT,
}


# Temporal facets (spec 004 `time.facets`) and the stored times they read. `session`, `source`,
# `observed` and `occurred` name times Engram does not store: alone they match nothing.
TEMPORAL_FACETS = ("session", "source", "captured", "observed", "occurred", "valid")
FACET_FIELDS = {"captured": "timestamp", "valid": "t_valid..t_invalid"}


def window_clause(start: datetime | None, end: datetime | None, facets: Sequence[str] | None) -> dict:
    """The time window. Without facets: `timestamp`, both bounds inclusive (AutoMem's _result_passes_filters).
    With facets: any of them in [start, end) — `captured` is the timestamp, `valid` a validity interval
    [t_valid, t_invalid) that overlaps the window, `occurred` the dates the memory was written on or
    speaks of (`date_terms`, service/clock/terms.py; day resolution, bounded windows only)."""
    if facets is None:
        rng: dict = {}
        if start:
            rng["gte"] = start.isoformat()
        if end:
            rng["lte"] = end.isoformat()
        return {"range": {"timestamp": rng}}
    should: list[dict] = []
    if "captured" in facets:
        rng = {}
        if start:
            rng["gte"] = start.isoformat()
        if end:
            rng["lt"] = end.isoformat()
        should.append({"range": {"timestamp": rng}})
    if "valid" in facets:
        valid: dict = {"filter": [{"exists": {"field": "t_valid"}}]}
        if end:
            valid["filter"].append({"range": {"t_valid": {"lt": end.isoformat()}}})
        if start:
            valid["must_not"] = [{"range": {"t_invalid": {"lte": start.isoformat()}}}]
        should.append({"bool": valid})
    if "occurred" in facets and (terms := window_terms(start, end)):
        should.append({"terms": {"date_terms": terms}})
    if not should:
        return MATCH_NOTHING
    return should[0] if len(should) == 1 else {"bool": {"should": should, "minimum_should_match": 1}}


def attribute_clauses(f: RecallFilter) -> list[dict]:
    """Filters on stored fields: who, project, pinned, types, minimum importance, timestamp bounds."""
    out: list[dict] = []
    if f.who is not None:
        out.append({"term": {"who": f.who}})
    if f.project is not None:
        out.append({"term": {"project": f.project}})
    if f.pinned:
        out.append({"term": {"pinned": True}})
    if f.types:
        out.append({"terms": {"type": list(dict.fromkeys(f.types))}})
    if f.importance_min is not None:
        out.append({"range": {"importance": {"gte": f.importance_min}}})
    if f.since or f.until:
        rng: dict = {}
        if f.since:
            rng["gte"] = f.since.isoformat()
        if f.until:
            rng["lte"] = f.until.isoformat()
        out.append({"range": {"timestamp": rng}})
    return out


def tag_clauses(tags: Sequence[str], tag_mode: str, tag_match: str, *, caller_only: bool = False) -> list[dict]:
    """AutoMem's tag scope (spec 000): any / all of `tags`, exact or by hierarchy prefix, over every
    tag a memory carries. `caller_only`: over the caller's tags alone, never a tag enrichment derived
    (the scope of the surfaces that show caller tags only, Signet's)."""
    if not tags:
        return []
    if tag_match == "exact":
        field_name, values = "tags_norm", [normalize_tag(t) for t in tags]
    else:
        field_name, values = "tag_prefixes", [hierarchy_key(t) for t in tags]
    values = [v for v in dict.fromkeys(values) if v]
    if caller_only:
        # tags_norm is lowercased; a derived tag is recorded as enrichment wrote it (lowercase slugs).
        each = [caller_prefix(v) if field_name == "tag_prefixes" else
                {"bool": {"filter": [{"term": {"tags_norm": v}}], "must_not": [{"term": {"enrichment.derived_tags": v}}]}} for v in values]
        return each if tag_mode == "all" else [{"bool": {"should": each, "minimum_should_match": 1}}]
    if tag_mode == "all":
        return [{"term": {field_name: v}} for v in values]
    return [{"terms": {field_name: values}}]


def fact_type_clause(types: Sequence[str]) -> dict | None:
    """Hindsight's fact types. A memory stored through retain carries `fact_type`; one stored through
    AutoMem carries none and counts as `world`; consolidation's MetaPattern summaries are the
    `observation`s. None when every type (or none) is asked for."""
    wanted = set(types)
    if not wanted or wanted >= {"world", "experience", "observation"}:
        return None
    should: list[dict] = []
    if "world" in wanted:
        should.append({"term": {"fact_type": "world"}})
        should.append({"bool": {"must_not": [{"exists": {"field": "fact_type"}}, {"term": {"type": OBSERVATION_TYPE}}]}})
    if "experience" in wanted:
        should.append({"term": {"fact_type": "experience"}})
    if "observation" in wanted:
        should.append({"term": {"type": OBSERVATION_TYPE}})
    return {"bool": {"should": should, "minimum_should_match": 1}}


# --- current state ---------------------------------------------------------------------------
# What "valid at T" means (service/graph/current_state.py evaluates the same rules in Python for
# state_debug): valid from t_valid, not expired (t_invalid <= T), not superseded (superseded_at <= T).
# As of a past instant (`as_of`), a memory must also exist by then: without t_valid it is valid from
# its timestamp. Without as_of that clause is left out, as AutoMem leaves it out: a memory dated in the
# future (an event, a client clock ahead of ours) is current at once.
def not_yet_valid(at: datetime, *, as_of: bool = False) -> list[dict]:
    """Memories not yet valid at `at`: t_valid after it, or (as_of) no t_valid and a timestamp after it."""
    moment = at.isoformat()
    clauses: list[dict] = [{"range": {"t_valid": {"gt": moment}}}]
    if as_of:
        clauses.append({"bool": {"filter": [{"range": {"timestamp": {"gt": moment}}}], "must_not": [{"exists": {"field": "t_valid"}}]}})
    return clauses


def candidate_must_not(at: datetime, *, in_python: bool = False, as_of: bool = False) -> list[dict]:
    """must_not clauses of the candidate filter in current mode (archived is excluded in every mode).

    Not-yet-valid memories are dropped, and expired ones unless they are superseded (a superseded
    memory stays a candidate so its replacement can take its place). With `in_python` (state_debug)
    nothing is dropped here: the same rules run in `evaluate`, which can then name each suppression.
    """
    if in_python:
        return []
    moment = at.isoformat()
    return [
        *not_yet_valid(at, as_of=as_of),
        {"bool": {"filter": [{"range": {"t_invalid": {"lte": moment}}}], "must_not": [{"range": {"superseded_at": {"lte": moment}}}]}},
    ]


def active_must_not(at: datetime, *, as_of: bool = False) -> list[dict]:
    """Strictly current — valid, not expired, not superseded: expansion targets and chain heads."""
    moment = at.isoformat()
    return [
        *not_yet_valid(at, as_of=as_of),
        {"range": {"t_invalid": {"lte": moment}}},
        {"range": {"superseded_at": {"lte": moment}}},
    ]


def strictly_current(flt: dict, at: datetime, *, as_of: bool = False) -> dict:
    """`flt`, and valid, not expired, not superseded at `at`: chain heads and expanded memories."""
    return {"bool": {"filter": [flt], "must_not": active_must_not(at, as_of=as_of)}}


def excluding_ids(flt: dict, ids: Sequence[str]) -> dict:
    """`flt` without these memories (session dedupe: the arms fetch a full pool of the others)."""
    return {"bool": {"filter": [flt], "must_not": [{"ids": {"values": sorted(ids)}}]}}


def only_ids(flt: dict, ids: Sequence[str]) -> dict:
    """`flt` restricted to these memories (session dedupe: the suppressed ones, scored as the others are)."""
    return {"bool": {"filter": [flt, {"ids": {"values": sorted(ids)}}]}}


# --- the recall filter -------------------------------------------------------------------------
@dataclass(frozen=True)
class RecallFilter:
    bank: str
    tags: tuple[str, ...] = ()
    tag_mode: str = "any"  # any | all
    tag_match: str = "prefix"  # prefix | exact
    exclude_tags: tuple[str, ...] = ()
    start: datetime | None = None
    end: datetime | None = None
    excluded_types: tuple[str, ...] = ()
    extra: tuple[dict, ...] = field(default=())  # more filter clauses
    extra_must_not: tuple[dict, ...] = field(default=())
    window_facets: tuple[str, ...] | None = None  # see window_clause
    who: str | None = None
    project: str | None = None
    pinned: bool | None = None
    types: tuple[str, ...] = ()
    importance_min: float | None = None
    since: datetime | None = None
    until: datetime | None = None
    caller_tags: bool = False  # the tag scope reads caller tags only (tag_clauses caller_only)


def filter_clauses(f: RecallFilter, *, scoped: bool = True) -> dict:
    """The bool filter every arm shares. `scoped=False` lifts only the tag scope (scope_fallback, expansion)."""
    filters: list[dict] = [{"term": {"bank": f.bank}}]
    if scoped:
        filters += tag_clauses(f.tags, f.tag_mode, f.tag_match, caller_only=f.caller_tags)
    if f.start or f.end:
        filters.append(window_clause(f.start, f.end, f.window_facets))
    filters += attribute_clauses(f)
    filters += list(f.extra)
    must_not: list[dict] = [{"term": {"archived": True}}]
    if f.exclude_tags:
        # Hierarchy-aware (a deliberate fix of AutoMem's raw string prefix): excluding
        # conversation_5 drops conversation_5 and conversation_5:x but not conversation_50.
        must_not.append({"terms": {"tag_prefixes": [hierarchy_key(t) for t in f.exclude_tags]}})
    if f.excluded_types:
        must_not.append({"terms": {"type": list(f.excluded_types)}})
    must_not += list(f.extra_must_not)
    return {"bool": {"filter": filters, "must_not": must_not}}


def fallback_filter(f: RecallFilter) -> dict:
    """scope_fallback fills: every filter but the tag scope, and never an in-scope memory (those are in
    scope by definition: already returned, or dropped by a score filter)."""
    unscoped = filter_clauses(f, scoped=False)
    unscoped["bool"]["must_not"] = unscoped["bool"]["must_not"] + tag_clauses(f.tags, "any", f.tag_match, caller_only=f.caller_tags)
    return unscoped
