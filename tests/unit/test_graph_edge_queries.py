"""service.storage.edges: the pure query builders and the parser (tables of input -> DSL)."""

import pytest

from service.storage.edges import EDGE_SORT, edge_id, edges_query, parse_per_memory, per_memory_edges_query

pytestmark = pytest.mark.unit

BOTH = {"bool": {"should": [{"terms": {"source_id": ["a", "b"]}}, {"terms": {"target_id": ["a", "b"]}}], "minimum_should_match": 1}}


def test_edge_id_is_source_type_target():
    assert edge_id("m1", "RELATES_TO", "m2") == "m1|RELATES_TO|m2"


def test_per_memory_query_is_one_terms_query_with_a_bucket_per_memory():
    body = per_memory_edges_query("default", ["a", "b"], ["RELATES_TO", "LEADS_TO"], per_id=3, min_strength=0.4)
    assert body["size"] == 0
    assert body["query"] == {"bool": {"filter": [
        {"term": {"bank": "default"}}, BOTH, {"terms": {"type": ["RELATES_TO", "LEADS_TO"]}}, {"range": {"strength": {"gte": 0.4}}},
    ]}}
    agg = body["aggs"]["per_memory"]
    assert agg["filters"]["filters"] == {
        "a": {"bool": {"should": [{"term": {"source_id": "a"}}, {"term": {"target_id": "a"}}], "minimum_should_match": 1}},
        "b": {"bool": {"should": [{"term": {"source_id": "b"}}, {"term": {"target_id": "b"}}], "minimum_should_match": 1}},
    }
    assert agg["aggs"]["newest"]["top_hits"] == {"size": 3, "sort": EDGE_SORT, "_source": {"excludes": ["bank"]}}
    assert EDGE_SORT[0] == {"updated_at": {"order": "desc", "missing": "_last"}}


@pytest.mark.parametrize(
    ("types", "min_strength", "extra"),
    [
        (None, 0.0, []),  # every type (hydration), no floor
        (["PART_OF"], 0.0, [{"terms": {"type": ["PART_OF"]}}]),
    ],
)
def test_edges_query_filters(types, min_strength, extra):
    body = per_memory_edges_query("bank1", ["a", "b"], types, per_id=1, min_strength=min_strength)
    assert body["query"]["bool"]["filter"] == [{"term": {"bank": "bank1"}}, BOTH, *extra]


def test_flat_edges_query_newest_first():
    assert edges_query("default", ["a", "b"], ["RELATES_TO"], size=7) == {
        "size": 7,
        "query": {"bool": {"filter": [{"term": {"bank": "default"}}, BOTH, {"terms": {"type": ["RELATES_TO"]}}]}},
        "sort": EDGE_SORT,
        "_source": {"excludes": ["bank"]},
    }


def test_parse_per_memory_keeps_the_requested_order_and_fills_gaps():
    resp = {"aggregations": {"per_memory": {"buckets": {
        "a": {"newest": {"hits": {"hits": [{"_id": "a|RELATES_TO|x", "_source": {"source_id": "a", "target_id": "x", "type": "RELATES_TO"}}]}}},
    }}}}
    assert parse_per_memory(resp, ["a", "b"]) == {
        "a": [{"id": "a|RELATES_TO|x", "source_id": "a", "target_id": "x", "type": "RELATES_TO"}],
        "b": [],
    }


def test_per_memory_query_of_a_kind_reads_both_in_one_search():
    # Every type for the seeds' own relations, and the expandable kind within them (its own buckets).
    body = per_memory_edges_query("default", ["a", "b"], None, per_id=2, of_kind=(["RELATES_TO"], 0.3))
    assert body["query"] == {"bool": {"filter": [{"term": {"bank": "default"}}, BOTH]}}
    kind = body["aggs"]["of_kind"]
    assert kind["filter"] == {"bool": {"filter": [{"terms": {"type": ["RELATES_TO"]}}, {"range": {"strength": {"gte": 0.3}}}]}}
    assert kind["aggs"]["per_memory"] == body["aggs"]["per_memory"]
    assert body["aggs"]["per_memory"]["aggs"]["newest"]["top_hits"]["size"] == 2


def test_parse_per_memory_within_the_kind():
    def bucket(*edge_ids):
        return {"newest": {"hits": {"hits": [{"_id": e, "_source": {"type": e.split("|")[1]}} for e in edge_ids]}}}

    resp = {"aggregations": {
        "per_memory": {"buckets": {"a": bucket("a|PRECEDED_BY|y", "a|RELATES_TO|x"), "b": bucket()}},
        "of_kind": {"per_memory": {"buckets": {"a": bucket("a|RELATES_TO|x"), "b": bucket()}}},
    }}
    assert parse_per_memory(resp, ["a", "b"], within="of_kind") == {"a": [{"id": "a|RELATES_TO|x", "type": "RELATES_TO"}], "b": []}
    assert [e["id"] for e in parse_per_memory(resp, ["a"])["a"]] == ["a|PRECEDED_BY|y", "a|RELATES_TO|x"]
