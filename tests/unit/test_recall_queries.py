"""The pure DSL builders of recall (service/recall/queries.py): tables of input -> expected DSL."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from service.recall import queries as Q


@pytest.mark.parametrize(
    ("tags", "mode", "match", "expected"),
    [
        ([], "any", "prefix", []),
        (["slack"], "any", "prefix", [{"terms": {"tag_prefixes": ["slack"]}}]),
        (["Auth/Login", "auth:login"], "any", "prefix", [{"terms": {"tag_prefixes": ["auth:login"]}}]),
        (["a", "b:c"], "all", "prefix", [{"term": {"tag_prefixes": "a"}}, {"term": {"tag_prefixes": "b:c"}}]),
        (["Foo", "bar/baz"], "any", "exact", [{"terms": {"tags_norm": ["foo", "bar/baz"]}}]),
        (["Foo", "bar"], "all", "exact", [{"term": {"tags_norm": "foo"}}, {"term": {"tags_norm": "bar"}}]),
    ],
)
def test_tag_clauses(tags, mode, match, expected):
    assert Q.tag_clauses(tags, mode, match) == expected


def test_filter_clauses_combines_scope_time_exclusions():
    f = Q.RecallFilter(
        bank="default", tags=("slack",), exclude_tags=("conversation_5", "tmp/x"),
        start=datetime(2024, 1, 1, tzinfo=timezone.utc), end=datetime(2024, 2, 1, tzinfo=timezone.utc),
        excluded_types=("MetaPattern",),
    )
    assert Q.filter_clauses(f) == {
        "bool": {
            "filter": [
                {"term": {"bank": "default"}},
                {"terms": {"tag_prefixes": ["slack"]}},
                {"range": {"timestamp": {"gte": "2024-01-01T00:00:00+00:00", "lte": "2024-02-01T00:00:00+00:00"}}},
            ],
            "must_not": [
                {"term": {"archived": True}},
                {"terms": {"tag_prefixes": ["conversation_5", "tmp:x"]}},
                {"terms": {"type": ["MetaPattern"]}},
            ],
        }
    }
    unscoped = Q.filter_clauses(f, scoped=False)
    assert {"terms": {"tag_prefixes": ["slack"]}} not in unscoped["bool"]["filter"]


def test_knn_arm_filters_inside_the_knn_query():
    flt = {"bool": {"filter": [{"term": {"bank": "default"}}]}}
    body = Q.knn_arm([0.1, 0.2], 40, flt)
    assert body["size"] == 40
    assert body["query"] == {"knn": {"embedding": {"vector": [0.1, 0.2], "k": 40, "filter": flt}}}
    assert "embedding" in body["_source"]["excludes"]


def test_with_cosine_adds_the_cosine_script_field_and_keeps_the_arm():
    arm = Q.keyword_arm("red car", 50, {"match_all": {}})
    with_cos = Q.with_cosine(arm, [1.0, 0.0])
    assert {k: v for k, v in with_cos.items() if k != "script_fields"} == arm
    script = with_cos["script_fields"]["cosine"]["script"]
    assert "cosineSimilarity" in script["source"] and script["params"]["query_value"] == [1.0, 0.0]
    assert Q.with_cosine(arm, None) is arm  # no query vector: nothing to add


def test_keyword_arm_has_phrase_boost_over_content_and_tags():
    should = Q.keyword_arm("red car", 10, {"match_all": {}})["query"]["bool"]["must"][0]["bool"]["should"]
    assert should == [
        {"match": {"content": {"query": "red car"}}},
        {"match": {"tags_text": {"query": "red car", "boost": 0.5}}},
        {"match_phrase": {"content.exact": {"query": "red car", "slop": 1, "boost": 2.0}}},
    ]


def test_keyword_arm_reads_the_thread_context_at_its_boost():
    should = Q.keyword_arm("red car", 10, {"match_all": {}}, 0.5)["query"]["bool"]["must"][0]["bool"]["should"]
    assert should[-1] == {"match": {"thread_context": {"query": "red car", "boost": 0.5}}} and len(should) == 4
    assert Q.keyword_arm("red car", 10, {"match_all": {}}, 0.0) == Q.keyword_arm("red car", 10, {"match_all": {}})


def test_trending_sorts_per_mode():
    assert Q.trending_arm(5, {"match_all": {}}, "score")["sort"][0] == {"importance": {"order": "desc", "missing": "_last"}}
    assert Q.trending_arm(5, {"match_all": {}}, "time_asc")["sort"][0] == {"updated_at": {"order": "asc", "missing": "_last"}}


FLT = {"bool": {"filter": [{"term": {"bank": "b"}}]}}
SOURCE = {"excludes": ["embedding", "tags_norm", "metadata_terms"]}


@pytest.mark.parametrize(
    ("built", "expected"),
    [
        (
            Q.metadata_arm("Acme Deploy", ["acme", "deploy"], 7, FLT),
            {"size": 7, "_source": SOURCE, "query": {"bool": {"must": [{"bool": {"should": [
                {"terms": {"metadata_terms": ["acme deploy", "acme", "deploy"], "boost": 2.0}},
                {"match": {"metadata_text": {"query": "Acme Deploy"}}},
            ], "minimum_should_match": 1}}], "filter": [FLT]}}},
        ),
        (Q.doc_count_arm(FLT, None), {"size": 0, "track_total_hits": True, "query": {"bool": {"filter": [FLT]}}}),
        (
            Q.doc_count_arm(FLT, "deploy"),
            {"size": 0, "track_total_hits": True, "query": {"bool": {"filter": [FLT], "must": [{"match": {"content": {"query": "deploy"}}}]}}},
        ),
        (
            Q.ids_arm(["m1", "m2"], FLT),
            {"size": 2, "_source": SOURCE, "query": {"bool": {"filter": [FLT, {"ids": {"values": ["m1", "m2"]}}]}}},
        ),
        (
            Q.anchor_arm(3, FLT, ["lang:python"], ["Style"]),
            {"size": 3, "_source": SOURCE, "query": {"bool": {"filter": [FLT, {"bool": {"should": [
                {"terms": {"tag_prefixes": ["lang:python"]}}, {"terms": {"type": ["Style"]}},
            ], "minimum_should_match": 1}}]}}, "sort": Q.IMPORTANCE_SORT},
        ),
        (Q.anchor_arm(3, FLT, [], []), None),
        (
            Q.heads_query(["h1"], "b", {"match_all": {}}, None),
            {"size": 1, "_source": SOURCE, "query": {"bool": {
                "filter": [{"term": {"bank": "b"}}, {"ids": {"values": ["h1"]}}],
                "should": [{"bool": {"filter": [{"match_all": {}}], "_name": "head"}}],
            }}},
        ),
    ],
    ids=["metadata", "count", "count-keyword", "ids", "anchor", "anchor-none", "heads"],
)
def test_arm_builders(built, expected):
    assert built == expected


def test_fallback_filter_lifts_the_scope_and_excludes_in_scope_memories():
    f = Q.RecallFilter(bank="b", tags=("proj",), tag_match="prefix")
    assert Q.fallback_filter(f) == {"bool": {
        "filter": [{"term": {"bank": "b"}}],
        "must_not": [{"term": {"archived": True}}, {"terms": {"tag_prefixes": ["proj"]}}],
    }}


def test_recall_filter_in_current_and_history_mode():
    from service.recall.request import RecallRequest

    at = datetime(2026, 1, 1, tzinfo=timezone.utc)
    current = Q.recall_filter(RecallRequest(bank="b", tags=["x"]), at, ["MetaPattern"])
    assert (current.bank, current.tags, current.excluded_types) == ("b", ("x",), ("MetaPattern",))
    assert {"range": {"t_valid": {"gt": at.isoformat()}}} in current.extra_must_not
    assert Q.recall_filter(RecallRequest(state_mode="history"), at, ()).extra_must_not == ()
    assert Q.recall_filter(RecallRequest(state_debug=True), at, ()).extra_must_not == ()  # rules run in Python


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("short question about deploys", "short question about deploys"),
        (" ".join(f"w{i}" for i in range(100)), " ".join(f"w{i}" for i in range(64))),
        ("a " * 200, "a"),  # 200 tokens, one distinct word
        ("x" * 100, "x" * 40),
    ],
    ids=["short", "many-words", "repeated", "one-long-token"],
)
def test_lexical_text_bounds_the_clauses(query, expected):
    assert Q.lexical_text(query) == expected
