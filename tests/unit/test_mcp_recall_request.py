"""recall_memory's routing (service/mcp/recall_request.py): a table of arguments -> the one HTTP
request, the enumeration-mode rejections and offset rules of spec 000 "MCP Client Routing", and the
normalization of each route's answer."""

from __future__ import annotations

import math

import pytest

from service.mcp.recall_request import (
    RANKED_ONLY,
    ArgumentError,
    RecallRequest,
    from_by_tag,
    from_memory,
    from_recall,
    plan_recall,
)

# spec 000: "The following ranked-only parameters are rejected ... in this mode" (30 names).
SPEC_RANKED_ONLY = (
    "query queries embedding time_query start end exclude_tags expand_relations expand_entities auto_decompose "
    "expansion_limit relation_limit expand_min_importance expand_min_strength current_only state_debug state_mode "
    "recency_bias scope_fallback expand_respect_tags min_score adaptive_floor sort context language active_path "
    "context_tags context_types priority_ids per_query_limit"
).split()

SAMPLE = {
    "query": "x", "queries": ["a"], "embedding": [0.1], "time_query": "last week", "start": "2025-01-01", "end": "2025-02-01",
    "exclude_tags": ["t"], "expand_relations": True, "expand_entities": True, "auto_decompose": False, "expansion_limit": 5,
    "relation_limit": 2, "expand_min_importance": 0.5, "expand_min_strength": 0.5, "current_only": True, "state_debug": False,
    "state_mode": "current", "recency_bias": "off", "scope_fallback": False, "expand_respect_tags": True, "min_score": 0.1,
    "adaptive_floor": True, "sort": "score", "context": "c", "language": "python", "active_path": "a.py", "context_tags": ["c"],
    "context_types": ["Style"], "priority_ids": ["p"], "per_query_limit": 3,
}


def test_the_rejected_list_is_the_specs():
    assert sorted(RANKED_ONLY) == sorted(SPEC_RANKED_ONLY) and len(RANKED_ONLY) == 30


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        # 1. id fetch short-circuits: every other argument is ignored.
        ({"memory_id": "m-1", "query": "x", "exhaustive": True, "offset": 9}, RecallRequest("id_fetch", "/memory/m-1")),
        ({"memory_id": "a/b c", "format": "json"}, RecallRequest("id_fetch", "/memory/a%2Fb%20c", (), "json")),
        # 2. enumeration: tags, limit (clamped to 200), offset.
        ({"exhaustive": True, "tags": ["bulk", " ", "x"], "limit": 500, "offset": 40, "tag_mode": "any", "tag_match": "exact"},
         RecallRequest("enumeration", "/memory/by-tag", (("tags", "bulk"), ("tags", "x"), ("limit", "200"), ("offset", "40")))),
        ({"exhaustive": True, "tags": ["bulk"], "format": "items"}, RecallRequest("enumeration", "/memory/by-tag", (("tags", "bulk"),), "items")),
        # 3. ranked: every argument as a URL parameter; lists repeated; offset 0 is fine and not sent.
        ({"query": "db choice", "limit": 10.0, "tags": ["a", "b"], "tag_mode": "all", "expand_relations": True,
          "expand_min_strength": 0.5, "embedding": [0.25, 1.0, -2e-7], "offset": 0, "exhaustive": False},
         RecallRequest("ranked", "/recall", (("query", "db choice"), ("tag_mode", "all"), ("limit", "10"),
                                             ("expand_min_strength", "0.5"), ("expand_relations", "true"), ("tags", "a"),
                                             ("tags", "b"), ("embedding", "0.25,1,-2e-7")))),
        ({"queries": ["recent decisions", "user preferences"], "tags": ["preference"], "time_query": "last 30 days", "limit": 10},
         RecallRequest("ranked", "/recall", (("time_query", "last 30 days"), ("limit", "10"), ("queries", "recent decisions"),
                                             ("queries", "user preferences"), ("tags", "preference")))),
        ({"current_only": False, "state_debug": True, "sort": "time_desc", "query": "  "},
         RecallRequest("ranked", "/recall", (("sort", "time_desc"), ("current_only", "false"), ("state_debug", "true")))),
        ({}, RecallRequest("ranked", "/recall")),
        ({"memory_id": "  ", "query": "x"}, RecallRequest("ranked", "/recall", (("query", "x"),))),
    ],
)
def test_routing_table(args, expected):
    assert plan_recall(args) == expected


@pytest.mark.parametrize("name", SPEC_RANKED_ONLY)
def test_enumeration_rejects_each_ranked_only_parameter(name):
    with pytest.raises(ArgumentError) as err:
        plan_recall({"exhaustive": True, "tags": ["bulk"], name: SAMPLE[name]})
    assert f"does not accept {name};" in str(err.value)


def test_enumeration_rejects_all_of_them_at_once_and_says_what_it_accepts():
    with pytest.raises(ArgumentError) as err:
        plan_recall({"exhaustive": True, "tags": ["bulk"], "query": "x", "sort": "score", "tag_mode": "all", "tag_match": "prefix"})
    assert str(err.value) == (
        'exhaustive: true (tag enumeration) does not accept query, sort, tag_mode: "all", tag_match: "prefix"; it accepts only '
        'tags, limit, offset, tag_mode: "any", tag_match: "exact" and format. Drop exhaustive for ranked recall.'
    )


@pytest.mark.parametrize("tags", [None, [], ["", "  "]])
def test_enumeration_needs_tags(tags):
    with pytest.raises(ArgumentError, match="needs a non-empty tags list"):
        plan_recall({"exhaustive": True, "tags": tags})


def test_ranked_recall_pages_with_an_offset():
    # The service pages the ranked list (the same ranking, then the slice); mcp-automem forwards offset.
    assert plan_recall({"query": "x", "offset": 5}) == RecallRequest("ranked", "/recall", (("offset", "5"), ("query", "x")))


def test_unknown_format_is_rejected_by_the_planner():
    with pytest.raises(ArgumentError, match="format must be one of text, items, detailed, json"):
        plan_recall({"query": "x", "format": "xml"})


@pytest.mark.parametrize(
    ("args", "expected", "notes"),
    [
        ({"query": "x", "limit": 500}, {"query": "x", "limit": 200}, ["limit 500 is outside 1..200: used 200"]),
        ({"query": "x", "limit": 0}, {"query": "x", "limit": 1}, ["limit 0 is outside 1..200: used 1"]),
        ({"query": "x", "limit": 7.9}, {"query": "x", "limit": 7}, []),  # a fraction rounded down, as an integer
        ({"query": "x", "offset": -3}, {"query": "x", "offset": 0}, ["offset -3 is outside 0..: used 0"]),
        ({"tags": "project-a", "context_tags": "x"}, {"tags": ["project-a"], "context_tags": ["x"]}, []),
        ({"query": "x", "format": "xml"}, {"query": "x", "format": "text"}, ["format 'xml' is not one of text, items, detailed, json: used text"]),
        ({"query": "x", "limit": 5, "format": "json"}, {"query": "x", "limit": 5, "format": "json"}, []),
        # JSON's numbers are unbounded: 1e999 reads as an infinity, and an integer may have hundreds of digits.
        ({"query": "x", "limit": math.inf}, {"query": "x", "limit": 200}, ["limit inf is outside 1..200: used 200"]),
        ({"query": "x", "offset": -math.inf}, {"query": "x", "offset": 0}, ["offset -inf is outside 0..: used 0"]),
        ({"query": "x", "offset": math.inf}, {"query": "x", "offset": math.inf}, []),  # no bound: the schema check names it
        ({"query": "x", "limit": 10**400}, {"query": "x", "limit": 200}, ["limit 100000... (401 digits) is outside 1..200: used 200"]),
    ],
)
def test_arguments_are_taken_as_mcp_automem_takes_them(args, expected, notes):
    from service.mcp.recall_request import lenient_arguments

    assert lenient_arguments(args) == (expected, notes)


def test_recall_body_is_normalized_with_memory_id_and_created_at():
    body = {
        "status": "success", "query": "q", "count": 1, "dedup_removed": 0, "sort": "score", "keywords": ["q"], "tags": [],
        "state_filter": {"current_only": True, "suppressed_count": 0, "replacement_count": 0}, "timings": {"total": 1},
        "results": [{"id": "m-1", "final_score": 0.5, "score": 0.5, "match_type": "keyword", "score_components": {"keyword": 1.0},
                     "relations": [{"type": "RELATES_TO", "id": "m-2"}], "source": "opensearch", "original_score": 0.5,
                     "memory": {"content": "c", "tags": ["t"], "importance": 0.7, "timestamp": "2025-01-01T00:00:00Z",
                                "metadata": {"a": 1}, "archived": False}}],
    }
    out = from_recall(body)
    assert out["mode"] == "ranked" and out["count"] == 1 and "timings" not in out and "status" not in out
    assert out["state_filter"]["suppressed_count"] == 0 and out["query"] == "q"
    hit = out["results"][0]
    assert hit["final_score"] == 0.5 and hit["relations"] == [{"type": "RELATES_TO", "id": "m-2"}]
    assert hit["memory"]["memory_id"] == "m-1" and hit["memory"]["created_at"] == "2025-01-01T00:00:00Z"
    assert hit["memory"]["metadata"] == {"a": 1} and hit["memory"]["archived"] is False


def test_by_tag_and_memory_bodies_are_normalized():
    page = from_by_tag({"status": "success", "tags": ["b"], "count": 1, "limit": 1, "offset": 3, "has_more": True,
                        "memories": [{"id": "m-9", "content": "c", "tags": ["b"], "importance": 0.5, "timestamp": "t"}]})
    assert page == {"mode": "enumeration", "count": 1, "has_more": True, "limit": 1, "offset": 3, "tags": ["b"],
                    "results": [{"id": "m-9", "match_type": "direct", "final_score": 1, "score_components": {}, "relations": [],
                                 "memory": page["results"][0]["memory"]}]}
    assert page["results"][0]["memory"]["memory_id"] == "m-9"
    one = from_memory({"status": "success", "memory": {"id": "m-3", "content": "full", "t_invalid": "2026-01-01T00:00:00Z"}})
    assert one["mode"] == "id_fetch" and one["count"] == 1 and one["results"][0]["memory"]["t_invalid"] == "2026-01-01T00:00:00Z"
    assert (one["results"][0]["final_score"], one["results"][0]["match_type"]) == (1, "direct")
    assert from_memory(None) == {"mode": "id_fetch", "results": [], "count": 0}  # a 404: no memories found
