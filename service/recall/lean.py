"""Lean hits: what a recall's main arms return of each memory is read from doc values, not `_source`.

A hit's `_source` (even its `_id`) is a stored-fields read: the engine decompresses the document's
block, which also holds the `_recovery_source` copy with its 384-float vector, and then parses and
filters the JSON. For the ~170 hits a recall's vector and keyword arms return, that was half the
engine's time (LoCoMo dev corpus: 20.5 -> 9.2 ms p50 per `_msearch`) and the largest response the
service decodes (220 -> 85 kB). So these arms ask for `stored_fields: _none_` and the few fields
ranking reads as `docvalue_fields`; the engine also says, through named queries, which planned
keywords each hit's content (and thread context) holds, since the keyword component would otherwise
need the content. The memories that reach the page, and any whose supersession state must be read,
get their stored source afterwards (`RecallService.hydrate`, one request). A lean hit's supersession
summary (superseded_at, superseded_by, supersede_type) tells whether it is current; the stored
memory is read only when its chain is resolved.

Pure: building the arms' extra clauses and reading their hits back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scoring.idf_share import BOTH_MATCH, OWN_MATCH

# What ranking reads of a lean hit. Dates come back in the mapping's format (ISO 8601, as stored
# documents are read); numbers as the index keeps them (float fields are single precision).
# `archived` is not among them (no recall returns an archived memory), nor `last_accessed` (access
# tracking reads the page, whose stored memories are read anyway).
SCALAR_FIELDS: tuple[str, ...] = (
    "id", "type", "importance", "confidence", "relevance_score", "timestamp", "updated_at",
    "t_valid", "t_invalid", "superseded_at", "superseded_by", "supersede_type", "thread_prev",
)
LIST_FIELDS: tuple[str, ...] = ("tags", "date_terms", "metadata_terms", "metadata_terms_plain")
FIELDS: tuple[str, ...] = (*SCALAR_FIELDS, *LIST_FIELDS)


def fields_for(*, dates: bool, times: bool, thread: bool) -> tuple[str, ...]:
    """The doc values a recall reads: date terms only when its query names a date, updated_at only for
    the time sorts, the thread predecessor only for the neighbour bonus (a quarter of the bytes)."""
    skip = {name for name, needed in (("date_terms", dates), ("updated_at", times), ("thread_prev", thread)) if not needed}
    return tuple(f for f in FIELDS if f not in skip)
# float fields are single precision in the index: 0.7 comes back as 0.699999988079071. Seven
# decimals give back what a client wrote with up to seven (a float32 is exact to ~7 digits).
FLOAT_FIELDS: frozenset[str] = frozenset({"importance", "confidence", "relevance_score"})
FLOAT_DECIMALS = 7
LEAN = "_lean"  # marks a source built from doc values (no content, no metadata)
NO_PLAIN_TERMS = [""]  # what writer.derived_fields stores for "no metadata terms without entities"


def keyword_clauses(keywords: Sequence[str], with_context: bool) -> list[dict]:
    """Zero-boost named clauses (they never change a score) for each planned keyword: the engine's
    own analysis answers whether the content (and content with thread context) holds every term of it."""
    out: list[dict] = []
    for kw in keywords:
        out.append({"match": {"content": {"query": kw, "operator": "and", "boost": 0.0, "_name": OWN_MATCH + kw}}})
        if with_context:
            out.append({"multi_match": {
                "query": kw, "type": "cross_fields", "fields": ["content", "thread_context"], "operator": "and",
                "boost": 0.0, "_name": BOTH_MATCH + kw,
            }})
    return out


def lean_body(body: Mapping[str, Any], clauses: Sequence[dict], fields: Sequence[str] = FIELDS) -> dict:
    """An arm's body that returns doc values instead of `_source`, and says which clauses matched."""
    out = {k: v for k, v in body.items() if k != "_source"}
    out["stored_fields"] = "_none_"
    out["docvalue_fields"] = list(fields)
    if clauses:
        out["query"] = {"bool": {"must": [body["query"]], "should": list(clauses)}}
    return out


def stored_body(body: Mapping[str, Any]) -> dict:
    """A body whose few hits bring their whole stored memory: filtering `_source` in the request makes
    the engine parse and rewrite each document (~0.1 ms a hit here: 10 memories by id, 2.4 ms
    without a source, 2.6 with it whole, 3.8 without recall's excluded fields); the readers of a
    recall's memories pick their fields themselves (shaping's MEMORY_FIELDS, codec.shown). Asked for
    outright: a body with script fields returns no `_source` by default."""
    return {**body, "_source": True}


def lean_source(fields: Mapping[str, list]) -> dict[str, Any]:
    """A hit's doc values as the fields of a stored source (what ranking reads of it)."""
    out: dict[str, Any] = {name: values[0] for name, values in fields.items()}
    for name in LIST_FIELDS:
        if name in fields:
            out[name] = fields[name]
    for name in FLOAT_FIELDS:
        value = out.get(name)
        if value is not None:
            out[name] = round(value, FLOAT_DECIMALS)
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
