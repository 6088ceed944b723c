"""Pure DSL builders and parsers for the bank registry (service/storage/banks.py): tables of
input -> expected DSL in tests/unit/test_bank_queries.py."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from service.filters.clauses import fact_type_clause
from service.filters.vocabulary import FACT_TYPES

# The registry lists at most this many banks (a terms aggregation over the memories' `bank` field
# and one search of profiles); more would need composite-aggregation paging.
MAX_BANKS = 10_000
# GET /v1/default/banks/{bank_id}[/stats] reports the bank's most used tags, at most this many.
STATS_TAGS = 50


def bank_term(bank: str) -> dict:
    return {"term": {"bank": bank}}


def bank_counts_body(size: int = MAX_BANKS) -> dict:
    """Every bank that holds memories: its memory count and newest write (one aggregation)."""
    return {"size": 0, "aggs": {"banks": {
        "terms": {"field": "bank", "size": size, "order": {"_key": "asc"}},
        "aggs": {"last_write": {"max": {"field": "updated_at"}}},
    }}}


def parse_bank_counts(resp: dict) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for b in resp.get("aggregations", {}).get("banks", {}).get("buckets", []):
        last = b.get("last_write", {}).get("value_as_string")
        out[str(b["key"])] = {"fact_count": int(b["doc_count"]), "last_write_at": last}
    return out


def profiles_body(size: int = MAX_BANKS) -> dict:
    return {"size": size, "query": {"match_all": {}}, "sort": [{"bank": "asc"}]}


def memory_stats_body(bank: str, tags: int = STATS_TAGS) -> dict:
    """One request for a bank's memory statistics: memories per Hindsight fact type and per AutoMem
    type, distinct documents, the most used tags (and how often enrichment derived each, so caller
    tags can be counted apart), the newest write."""
    by_fact = {name: fact_type_clause([name]) for name in FACT_TYPES}
    return {
        "size": 0, "track_total_hits": True, "query": bank_term(bank),
        "aggs": {
            "fact_types": {"filters": {"filters": by_fact}},
            "types": {"terms": {"field": "type", "size": 100}},
            "documents": {"cardinality": {"field": "document_id"}},
            "tags": {"terms": {"field": "tags", "size": tags}},
            "derived_tags": {"terms": {"field": "enrichment.derived_tags", "size": tags}},
            "last_write": {"max": {"field": "updated_at"}},
        },
    }


def caller_tag_counts(resp: dict) -> list[dict[str, Any]]:
    """[{tag, count}] of caller tags, most used first: a tag's count less the memories it was derived on."""
    aggs = resp.get("aggregations", {})
    derived = {b["key"]: int(b["doc_count"]) for b in aggs.get("derived_tags", {}).get("buckets", [])}
    counts = [(str(b["key"]), int(b["doc_count"]) - derived.get(b["key"], 0)) for b in aggs.get("tags", {}).get("buckets", [])]
    return [{"tag": t, "count": n} for t, n in sorted(counts, key=lambda x: (-x[1], x[0])) if n > 0]


def parse_memory_stats(resp: dict) -> dict[str, Any]:
    aggs = resp.get("aggregations", {})
    facts = {k: int(v["doc_count"]) for k, v in aggs.get("fact_types", {}).get("buckets", {}).items()}
    return {
        "memory_count": int(resp["hits"]["total"]["value"]),
        "nodes_by_fact_type": {k: facts.get(k, 0) for k in FACT_TYPES},
        "types": {str(b["key"]): int(b["doc_count"]) for b in aggs.get("types", {}).get("buckets", [])},
        "total_documents": int(aggs.get("documents", {}).get("value", 0)),
        "tags": caller_tag_counts(resp),
        "last_memory_write_at": aggs.get("last_write", {}).get("value_as_string"),
    }


def edge_stats_body(bank: str) -> dict:
    return {"size": 0, "track_total_hits": True, "query": bank_term(bank), "aggs": {"types": {"terms": {"field": "type", "size": 100}}}}


def parse_edge_stats(resp: dict) -> dict[str, Any]:
    buckets = resp.get("aggregations", {}).get("types", {}).get("buckets", [])
    return {"edge_count": int(resp["hits"]["total"]["value"]), "links_by_link_type": {str(b["key"]): int(b["doc_count"]) for b in buckets}}


def last_run_body(bank: str) -> dict:
    """The bank's newest successful consolidation run."""
    return {
        "size": 1, "_source": ["completed_at"],
        "query": {"bool": {"filter": [{"term": {"kind": "run"}}, bank_term(bank), {"term": {"success": True}}]}},
        "sort": [{"started_at": {"order": "desc"}}],
    }


def bank_tags_page(buckets: Sequence[dict[str, Any]], pattern: str | None, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
    """GET .../tags: Hindsight's case-insensitive `*` wildcard over the bank's tags, paged."""
    import fnmatch

    wanted = pattern.lower().replace("[", "[[]") if pattern else None  # `*` is the only wildcard: [ ] ? are literal
    if wanted is not None:
        wanted = wanted.replace("?", "[?]")
    matched = [b for b in buckets if wanted is None or fnmatch.fnmatchcase(b["tag"].lower(), wanted)]
    return list(matched[offset : offset + limit]), len(matched)
