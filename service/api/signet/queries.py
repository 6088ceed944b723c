"""Pure DSL builders of Signet's legacy search and similarity routes (STYLE.md practice 4).

Each takes the filter recall uses (service/recall/queries.py: bank, tags, type, who, ..., current
state) and returns one search body for MemoryStore.search.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from service.recall.queries import bm25_query, knn_arm, lexical_text
from service.filters.clauses import SOURCE

# Distinct authors returned by `distinct=who` at most (a terms aggregation is bounded).
MAX_DISTINCT = 10_000
# spec 004 (Signet's filter-only listing): pinned first (1.0), else importance x max(0.1, 0.95^days old).
FILTER_SCORE = (
    "if (doc['pinned'].size() > 0 && doc['pinned'].value) { return 1.0; } "
    "double imp = doc['importance'].size() == 0 ? 0.5 : doc['importance'].value; "
    "long days = doc['timestamp'].size() == 0 ? 0 : (params.now - doc['timestamp'].value.toInstant().toEpochMilli()) / 86400000L; "
    "return imp * Math.max(0.1, Math.pow(0.95, days));"
)


def keyword_search(flt: dict, query: str, size: int) -> dict:
    """BM25 over content and tags inside the filter (Signet's FTS5 path); the score is BM25's."""
    return {"size": size, "_source": SOURCE, "query": {"bool": {"must": [bm25_query(lexical_text(query))], "filter": [flt]}}}


def filter_listing(flt: dict, size: int, now: datetime) -> dict:
    """The filter alone, scored as Signet lists it: pinned first, then importance decayed by age."""
    script = {"source": FILTER_SCORE, "params": {"now": int(now.timestamp() * 1000)}}
    return {
        "size": size, "_source": SOURCE,
        "query": {"script_score": {"query": {"bool": {"filter": [flt]}}, "script": script}},
        "sort": [{"_score": "desc"}, {"timestamp": {"order": "desc", "missing": "_last"}}, {"id": "asc"}],
    }


def distinct_who(bank: str) -> dict:
    """The bank's distinct authors, in order."""
    return {
        "size": 0, "query": {"term": {"bank": bank}},
        "aggs": {"who": {"terms": {"field": "who", "size": MAX_DISTINCT, "order": {"_key": "asc"}}}},
    }


def similar(flt: dict, vector: Sequence[float], anchor_id: str, k: int) -> dict:
    """One filtered kNN query from the anchor's vector; the anchor itself is not a result."""
    return knn_arm(vector, k, {"bool": {"filter": [flt], "must_not": [{"ids": {"values": [anchor_id]}}]}})
