"""Query DSL for consolidation: pure builders, tested by tables of (input, expected DSL)."""

from __future__ import annotations

from collections.abc import Sequence

# What a consolidation pass reads of a memory (never the vector: that comes from doc values).
SCAN_FIELDS = (
    "content", "type", "tags", "importance", "confidence", "relevance_score", "timestamp",
    "last_accessed", "archived", "metadata",
)
# AutoMem clusters and samples only memories with relevance_score > 0.3; never-scored memories
# (no decay run yet) take part too.
ACTIVE_RELEVANCE = 0.3
SUMMARIZES = "SUMMARIZES"  # MetaPattern -> member (AutoMem's edge name)
DISCOVERED = "DISCOVERED"


def memories_query(
    bank: str, *, excluded_types: Sequence[str] = (), min_importance: float | None = None,
    min_relevance: float | None = None, include_archived: bool = False,
) -> dict:
    """The memories a pass works on: this bank's, not archived, optionally important enough
    (scheduled decay's CONSOLIDATION_DECAY_IMPORTANCE_THRESHOLD) or still relevant."""
    filters: list[dict] = [{"term": {"bank": bank}}]
    if min_importance is not None:
        filters.append({"range": {"importance": {"gte": min_importance}}})
    if min_relevance is not None:
        filters.append({"bool": {"should": [
            {"range": {"relevance_score": {"gt": min_relevance}}},
            {"bool": {"must_not": [{"exists": {"field": "relevance_score"}}]}},
        ], "minimum_should_match": 1}})
    must_not: list[dict] = [] if include_archived else [{"term": {"archived": True}}]
    if excluded_types:
        must_not.append({"terms": {"type": list(excluded_types)}})
    out: dict = {"bool": {"filter": filters}}
    if must_not:
        out["bool"]["must_not"] = must_not
    return out


def scan_body(query: dict, size: int, after: list | None = None, fields: Sequence[str] = SCAN_FIELDS) -> dict:
    """One page of a full scan, in id order (search_after: no 10,000 result window)."""
    body: dict = {
        "query": query, "size": size, "sort": [{"id": "asc"}], "track_total_hits": False,
        "_source": {"includes": list(fields)},
    }
    if after is not None:
        body["search_after"] = after
    return body


def relationship_counts_body(bank: str, ids: Sequence[str]) -> dict:
    """Edges touching each id, counted by the engine: one terms bucket per end."""
    ids = list(ids)
    return {
        "size": 0,
        "query": {"bool": {"filter": [
            {"term": {"bank": bank}},
            {"bool": {"should": [{"terms": {"source_id": ids}}, {"terms": {"target_id": ids}}], "minimum_should_match": 1}},
        ]}},
        "aggs": {
            "as_source": {"terms": {"field": "source_id", "include": ids, "size": len(ids)}},
            "as_target": {"terms": {"field": "target_id", "include": ids, "size": len(ids)}},
        },
    }


def parse_relationship_counts(resp: dict, ids: Sequence[str]) -> dict[str, int]:
    counts = {i: 0 for i in ids}
    for name in ("as_source", "as_target"):
        for b in resp.get("aggregations", {}).get(name, {}).get("buckets", []):
            if b["key"] in counts:
                counts[b["key"]] += int(b["doc_count"])
    return counts


def neighbours_body(vector: Sequence[float], k: int, flt: dict) -> dict:
    """The k nearest memories passing `flt` (the memory itself comes back first; drop it)."""
    return {"size": k, "_source": False, "query": {"knn": {"embedding": {"vector": list(vector), "k": k, "filter": flt}}}}


def edges_among_body(bank: str, ids: Sequence[str], size: int) -> dict:
    """Edges whose two ends are both in `ids` (any type, either direction)."""
    return {
        "size": size, "_source": ["source_id", "target_id", "type"],
        "query": {"bool": {"filter": [{"term": {"bank": bank}}, {"terms": {"source_id": list(ids)}}, {"terms": {"target_id": list(ids)}}]}},
    }
