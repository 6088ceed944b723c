"""Lean hits: what a recall's main arms return of each memory is read from doc values, not `_source`.

A hit's `_source` (even its `_id`) is a stored-fields read: the engine decompresses the document's
block, which also holds the `_recovery_source` copy with its 384-float vector, and then parses and
filters the JSON. For the ~170 hits a recall's vector and keyword arms return, that was half the
engine's time (LoCoMo dev corpus: 20.5 -> 9.2 ms p50 per `_msearch`) and the largest response the
service decodes (220 -> 85 kB). So these arms ask for `stored_fields: _none_` and the few fields
ranking reads as `docvalue_fields`; the keyword component reads, instead of the content, which of
the query's stems the stems of the content and thread context hold (the write path stores them:
service/memory/stems.py), named by the engine (`stem_match_filter`): a memory has ~20 stems a
text, a query ~4, and every stem returned was one more string to decode and free. The memories that
reach the page, and any written before those fields existed, get their stored source afterwards
(`RecallService.hydrate`, one request). A lean hit's supersession summary (superseded_at,
superseded_by, supersede_type) tells whether it is current; the stored memory is read only when
its chain is resolved.

Pure: the arms' bodies and their hits read back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from service.filters.clauses import WHOLE_SOURCE
from service.memory.stems import CONTENT_STEMS, CONTEXT_STEMS

# What ranking reads of a lean hit, and `last_accessed`: access tracking knows from it, before the page
# is read, which of the page's memories it rewrites, and the page read brings their vectors
# (RecallService.hydrated_page). Dates come back in the mapping's format (ISO 8601, as stored
# documents are read); numbers as the index keeps them (float fields are single precision).
# `archived` is not among them: no recall returns an archived memory.
SCALAR_FIELDS: tuple[str, ...] = (
    "id", "type", "importance", "confidence", "relevance_score", "timestamp", "updated_at",
    "t_valid", "t_invalid", "superseded_at", "superseded_by", "supersede_type", "thread_prev", "last_accessed",
)
LIST_FIELDS: tuple[str, ...] = ("tags", "date_terms", "metadata_terms", "metadata_terms_plain")
FIELDS: tuple[str, ...] = (*SCALAR_FIELDS, *LIST_FIELDS)
# float fields are single precision in the index: 0.7 comes back as 0.699999988079071. Seven
# decimals give back what a client wrote with up to seven (a float32 is exact to ~7 digits).
FLOAT_FIELDS: frozenset[str] = frozenset({"importance", "confidence", "relevance_score"})
FLOAT_DECIMALS = 7
# round(v, 7) of the float fields' values, remembered (`_rounded`): a recall rounds ~480 of them,
# mostly the same few (0.5, 0.7, ...), and a dict lookup costs a tenth of round(). Bounded: clients
# may write any value.
_ROUNDED: dict[float, float] = {}
ROUNDED_KEPT = 4096
LEAN = "_lean"  # marks a source built from doc values (no content, no metadata)
NO_PLAIN_TERMS = [""]  # what writer.derived_fields stores for "no metadata terms without entities"
# The stems fields and the names of stem_match_filter's queries: per field, "<name>" when the memory has it and
# "<name>:<stem>" per query stem it holds. No arm names a query of its own.
STEM_NAMES: dict[str, str] = {CONTENT_STEMS: "c", CONTEXT_STEMS: "x"}
_STEM_FIELDS: dict[str, str] = {name: field for field, name in STEM_NAMES.items()}
_LIST_FIELDS: frozenset[str] = frozenset(LIST_FIELDS)


def _rounded(value: float) -> float:
    out = _ROUNDED.get(value)
    if out is None:
        out = round(value, FLOAT_DECIMALS)
        if len(_ROUNDED) < ROUNDED_KEPT:
            _ROUNDED[value] = out
    return out


def fields_for(*, dates: bool, times: bool, thread: bool) -> tuple[str, ...]:
    """The doc values a recall reads: date terms only when its query names a date, updated_at only for
    the time sorts, the thread predecessor only for the neighbour bonus."""
    skip = {name for name, needed in (("date_terms", dates), ("updated_at", times), ("thread_prev", thread)) if not needed}
    return tuple(f for f in FIELDS if f not in skip)


def lean_body(body: Mapping[str, Any], fields: Sequence[str] = FIELDS, stems: Sequence[str] = ()) -> dict:
    """An arm's body that returns doc values instead of `_source`; with `stems` (the IDF keyword share's,
    scoring.rerank.query_stems), also which of them each hit's stored stems hold."""
    out = {k: v for k, v in body.items() if k != "_source"}
    out["stored_fields"] = "_none_"
    out["docvalue_fields"] = list(fields)
    if stems:
        out["post_filter"] = stem_match_filter(stems, out.get("post_filter"))
    return out


def stem_match_filter(stems: Sequence[str], within: Mapping[str, Any] | None = None) -> dict:
    """A post filter that keeps every hit (or those of `within`) and names, in each hit's
    `matched_queries`, which of `stems` its stored stems hold (STEM_NAMES). Its named clauses are
    optional and unscored, so the search itself drops them: the engine tests them only on the hits it
    returns (the fetch phase's matched queries), and scores and order are the query's own. A painless
    script field that returned the same matches cost the engine ~2.5 ms of CPU an arm (docs/perf)."""
    should: list[dict] = []
    for field, name in STEM_NAMES.items():
        should.append({"exists": {"field": field, "_name": name}})
        should += [{"term": {field: {"value": stem, "_name": f"{name}:{stem}"}}} for stem in stems]
    return {"bool": {"filter": [dict(within) if within else {"match_all": {}}], "should": should}}


def stored_body(body: Mapping[str, Any]) -> dict:
    """A body whose few hits bring their whole stored memory (filters.clauses.WHOLE_SOURCE: ~0.1 ms a
    hit less for the engine here: 10 memories by id, 2.4 ms without a source, 2.6 with it whole, 3.8
    without recall's excluded fields); the readers of a recall's memories pick their fields themselves
    (shaping's MEMORY_FIELDS, codec.shown)."""
    return {**body, "_source": WHOLE_SOURCE}


def lean_source(fields: Mapping[str, list], matched: Sequence[str] = ()) -> dict[str, Any]:
    """A hit's doc values, and the names of the queries it matched (stem_match_filter), as the fields of
    a stored source (what ranking reads of it). One pass over each: a recall reads ~160 of these
    (4.3 -> 3.0 us a hit against a comprehension per kind of field)."""
    out: dict[str, Any] = {}
    for name, values in fields.items():
        if name in _LIST_FIELDS:
            out[name] = values
        elif name in FLOAT_FIELDS:
            out[name] = _rounded(values[0])
        else:
            out[name] = values[0]
    # The stems fields as ranking reads them: the query's stems among them ("c:stem"); a memory with
    # none stored matches no "c" and has no field.
    for m in matched:
        field = _STEM_FIELDS.get(m[0]) if len(m) == 1 or m[1] == ":" else None
        if field is not None:
            stems = out.setdefault(field, [])
            if len(m) > 2:
                stems.append(m[2:])
    out[LEAN] = True
    return out


def is_lean(source: Mapping[str, Any]) -> bool:
    return LEAN in source


def plain_terms(source: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The metadata terms without entities a lean hit carries; None when its document predates the
    field (written as [""] when empty, so that its presence says it was derived)."""
    terms = source.get("metadata_terms_plain")
    if terms is None:
        return None
    return () if terms == NO_PLAIN_TERMS else tuple(terms)


def predates(source: Mapping[str, Any], stems: bool) -> bool:
    """A lean hit of a memory written before the fields ranking reads existed: its stored memory is
    read before scoring (its metadata for the tag component, its content for the keyword share)."""
    if stems and CONTENT_STEMS not in source:
        return True
    return plain_terms(source) is None and bool(source.get("metadata_terms"))
