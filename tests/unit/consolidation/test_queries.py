"""Consolidation and history DSL builders: tables of (input, expected DSL)."""

from __future__ import annotations

import pytest

from service.consolidation import scheduler as S
from service.storage import history as H
from service.consolidation import queries as Q

BANK = {"term": {"bank": "default"}}
NOT_ARCHIVED = {"term": {"archived": True}}


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, {"bool": {"filter": [BANK], "must_not": [NOT_ARCHIVED]}}),
        ({"include_archived": True}, {"bool": {"filter": [BANK]}}),
        ({"min_importance": 0.3}, {"bool": {"filter": [BANK, {"range": {"importance": {"gte": 0.3}}}], "must_not": [NOT_ARCHIVED]}}),
        (
            {"excluded_types": ["MetaPattern"], "min_relevance": 0.3},
            {"bool": {
                "filter": [BANK, {"bool": {"should": [
                    {"range": {"relevance_score": {"gt": 0.3}}},
                    {"bool": {"must_not": [{"exists": {"field": "relevance_score"}}]}},
                ], "minimum_should_match": 1}}],
                "must_not": [NOT_ARCHIVED, {"terms": {"type": ["MetaPattern"]}}],
            }},
        ),
    ],
)
def test_memories_query(kwargs, expected):
    assert Q.memories_query("default", **kwargs) == expected


def test_scan_body_pages_in_id_order():
    q = {"match_all": {}}
    first = Q.scan_body(q, 500)
    assert first == {"query": q, "size": 500, "sort": [{"id": "asc"}], "track_total_hits": False, "_source": {"includes": list(Q.SCAN_FIELDS)}}
    assert Q.scan_body(q, 10, ["m-9"], fields=("content",)) == {
        "query": q, "size": 10, "sort": [{"id": "asc"}], "track_total_hits": False, "_source": {"includes": ["content"]}, "search_after": ["m-9"],
    }


def test_relationship_counts_body_and_parser():
    body = Q.relationship_counts_body("default", ["a", "b"])
    assert body == {
        "size": 0,
        "query": {"bool": {"filter": [BANK, {"bool": {"should": [{"terms": {"source_id": ["a", "b"]}}, {"terms": {"target_id": ["a", "b"]}}], "minimum_should_match": 1}}]}},
        "aggs": {
            "as_source": {"terms": {"field": "source_id", "include": ["a", "b"], "size": 2}},
            "as_target": {"terms": {"field": "target_id", "include": ["a", "b"], "size": 2}},
        },
    }
    resp = {"aggregations": {"as_source": {"buckets": [{"key": "a", "doc_count": 2}]}, "as_target": {"buckets": [{"key": "a", "doc_count": 1}, {"key": "z", "doc_count": 5}]}}}
    assert Q.parse_relationship_counts(resp, ["a", "b"]) == {"a": 3, "b": 0}


def test_neighbour_and_edge_bodies():
    flt = {"term": {"bank": "default"}}
    assert Q.neighbours_body((0.1, 0.2), 11, flt) == {"size": 11, "_source": False, "query": {"knn": {"embedding": {"vector": [0.1, 0.2], "k": 11, "filter": flt}}}}
    assert Q.edges_among_body("default", ["a", "b"], 100) == {
        "size": 100, "_source": ["source_id", "target_id", "type"],
        "query": {"bool": {"filter": [BANK, {"terms": {"source_id": ["a", "b"]}}, {"terms": {"target_id": ["a", "b"]}}]}},
    }


def test_history_bodies():
    assert H.recent_runs_body("default", 20) == {
        "query": {"bool": {"filter": [{"term": {"kind": "run"}}, BANK]}}, "from": 0, "size": 20, "_source": True,
        "sort": [{"started_at": {"order": "desc"}}, {"id": "desc"}],
    }
    assert H.recent_runs_body("b2", 500, 20, source=False)["from"] == 20
    assert S.tasks_for_mode("full") == ["decay", "creative", "cluster", "forget", "full"]
    assert S.tasks_for_mode("cluster") == ["cluster"]
