"""The bank registry's pure parts (service/storage/bank_queries.py, service/bank_registry.merged_profile)."""

from __future__ import annotations

import pytest

from service.storage import bank_queries as BQ
from service.banks.profiles import DEFAULT_DISPOSITION, merged_profile


def test_bank_counts():
    assert BQ.bank_counts_body(7) == {"size": 0, "aggs": {"banks": {
        "terms": {"field": "bank", "size": 7, "order": {"_key": "asc"}}, "aggs": {"last_write": {"max": {"field": "updated_at"}}}}}}
    resp = {"aggregations": {"banks": {"buckets": [{"key": "a", "doc_count": 3, "last_write": {"value_as_string": "2024-01-01T00:00:00.000Z"}},
                                                    {"key": "b", "doc_count": 1, "last_write": {}}]}}}
    assert BQ.parse_bank_counts(resp) == {"a": {"fact_count": 3, "last_write_at": "2024-01-01T00:00:00.000Z"}, "b": {"fact_count": 1, "last_write_at": None}}


def test_memory_stats_body_and_parse():
    body = BQ.memory_stats_body("b", tags=5)
    assert body["query"] == {"term": {"bank": "b"}} and body["track_total_hits"] is True
    assert set(body["aggs"]["fact_types"]["filters"]["filters"]) == {"world", "experience", "observation"}
    assert body["aggs"]["tags"] == {"terms": {"field": "tags", "size": 5}}
    assert body["aggs"]["derived_tags"] == {"terms": {"field": "enrichment.derived_tags", "size": 5}}
    resp = {"hits": {"total": {"value": 9}}, "aggregations": {
        "fact_types": {"buckets": {"world": {"doc_count": 5}, "experience": {"doc_count": 3}, "observation": {"doc_count": 1}}},
        "types": {"buckets": [{"key": "Context", "doc_count": 8}, {"key": "MetaPattern", "doc_count": 1}]},
        "documents": {"value": 2},
        "tags": {"buckets": [{"key": "entity:people:bob", "doc_count": 4}, {"key": "user_a", "doc_count": 3}, {"key": "x", "doc_count": 3}]},
        "derived_tags": {"buckets": [{"key": "entity:people:bob", "doc_count": 3}]},
        "last_write": {"value_as_string": "2024-05-01T00:00:00.000Z"},
    }}
    assert BQ.parse_memory_stats(resp) == {
        "memory_count": 9, "nodes_by_fact_type": {"world": 5, "experience": 3, "observation": 1},
        "types": {"Context": 8, "MetaPattern": 1}, "total_documents": 2,
        # a caller's count: the memories carrying the tag less those enrichment derived it on
        "tags": [{"tag": "user_a", "count": 3}, {"tag": "x", "count": 3}, {"tag": "entity:people:bob", "count": 1}],
        "last_memory_write_at": "2024-05-01T00:00:00.000Z",
    }


def test_edge_stats_and_last_run():
    assert BQ.edge_stats_body("b") == {"size": 0, "track_total_hits": True, "query": {"term": {"bank": "b"}}, "aggs": {"types": {"terms": {"field": "type", "size": 100}}}}
    resp = {"hits": {"total": {"value": 4}}, "aggregations": {"types": {"buckets": [{"key": "RELATES_TO", "doc_count": 4}]}}}
    assert BQ.parse_edge_stats(resp) == {"edge_count": 4, "links_by_link_type": {"RELATES_TO": 4}}
    assert BQ.last_run_body("b")["query"] == {"bool": {"filter": [{"term": {"kind": "run"}}, {"term": {"bank": "b"}}, {"term": {"success": True}}]}}


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [(None, ["user:alice", "user:bob", "role-admin", "a[1]?"]), ("user:*", ["user:alice", "user:bob"]), ("*-ADMIN", ["role-admin"]),
     ("a[1]?", ["a[1]?"]), ("a?1", [])],  # `*` is the only wildcard
)
def test_tag_wildcards(pattern, expected):
    buckets = [{"tag": t, "count": 1} for t in ("user:alice", "user:bob", "role-admin", "a[1]?")]
    items, total = BQ.bank_tags_page(buckets, pattern, 10, 0)
    assert [i["tag"] for i in items] == expected and total == len(expected)
    assert BQ.bank_tags_page(buckets, None, 1, 1) == ([{"tag": "user:bob", "count": 1}], 4)


def test_merged_profile_follows_hindsights_precedence():
    p = merged_profile({}, {"name": "Alice", "background": "bg", "mission": "m", "disposition_empathy": 5, "retain_chunk_size": 500})
    assert p == {"name": "Alice", "mission": "m", "disposition": {**DEFAULT_DISPOSITION, "empathy": 5}, "retain_chunk_size": 500}
    p2 = merged_profile(p, {"reflect_mission": "r", "disposition": {"skepticism": 1, "literalism": 2, "empathy": 2}, "disposition_literalism": 4})
    assert p2 == {"name": "Alice", "mission": "r", "disposition": {"skepticism": 1, "literalism": 4, "empathy": 2}, "retain_chunk_size": 500}
    assert merged_profile(p2, {}) == p2  # a PATCH with nothing changes nothing
