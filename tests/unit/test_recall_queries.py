"""The pure DSL builders of recall (service/recall/queries.py): tables of input -> expected DSL."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from service.recall import queries as Q
from service.filters import clauses as C
from service.filters import scripts as S


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
    assert C.tag_clauses(tags, mode, match) == expected


def test_filter_clauses_combines_scope_time_exclusions():
    f = C.RecallFilter(
        bank="default", tags=("slack",), exclude_tags=("conversation_5", "tmp/x"),
        start=datetime(2024, 1, 1, tzinfo=timezone.utc), end=datetime(2024, 2, 1, tzinfo=timezone.utc),
        excluded_types=("MetaPattern",),
    )
    assert C.filter_clauses(f) == {
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
    unscoped = C.filter_clauses(f, scoped=False)
    assert {"terms": {"tag_prefixes": ["slack"]}} not in unscoped["bool"]["filter"]


def test_knn_arm_filters_inside_the_knn_query():
    flt = {"bool": {"filter": [{"term": {"bank": "default"}}]}}
    body = Q.knn_arm([0.1, 0.2], 40, flt)
    assert body["size"] == 40
    assert body["query"] == {"knn": {"embedding": {"vector": [0.1, 0.2], "k": 40, "filter": flt}}}
    assert "embedding" in body["_source"]["excludes"]


def test_with_cosine_adds_the_cosine_script_field_and_keeps_the_arm():
    arm = Q.keyword_arm("red car", 50, {"match_all": {}})
    with_cos = S.with_cosine(arm, [1.0, 0.0])
    assert {k: v for k, v in with_cos.items() if k != "script_fields"} == arm
    script = with_cos["script_fields"]["cosine"]["script"]
    assert "cosineSimilarity" in script["source"] and script["params"]["query_value"] == [1.0, 0.0]
    assert S.with_cosine(arm, None) is arm  # no query vector: nothing to add


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
SOURCE = {"excludes": ["embedding", "tags_norm", "metadata_terms", "metadata_terms_plain", "content_stems", "context_stems"]}


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
        (Q.doc_counts_arm(FLT, []), {"size": 0, "track_total_hits": True, "query": {"bool": {"filter": [FLT]}}}),
        (
            Q.doc_counts_arm(FLT, ["deploy", "acme"]),
            {"size": 0, "track_total_hits": True, "query": {"bool": {"filter": [FLT]}}, "aggs": {"df": {"filters": {"filters": {
                "deploy": {"match": {"content": {"query": "deploy"}}}, "acme": {"match": {"content": {"query": "acme"}}},
            }}}}},
        ),
        (
            Q.ids_arm(["m1", "m2"], FLT),
            {"size": 2, "_source": SOURCE, "query": {"bool": {"filter": [FLT, {"ids": {"values": ["m1", "m2"]}}]}}},
        ),
        (
            Q.anchor_arm(3, FLT, ["lang:python"], ["Style"]),
            {"size": 3, "_source": SOURCE, "query": {"bool": {"filter": [FLT, {"bool": {"should": [
                {"terms": {"tag_prefixes": ["lang:python"]}}, {"terms": {"type": ["Style"]}},
            ], "minimum_should_match": 1}}]}}, "sort": C.IMPORTANCE_SORT},
        ),
        (Q.anchor_arm(3, FLT, [], []), None),
        (
            Q.heads_query(["h1"], "b", {"match_all": {}}, None),
            {"size": 1, "_source": True, "query": {"bool": {
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
    f = C.RecallFilter(bank="b", tags=("proj",), tag_match="prefix")
    assert C.fallback_filter(f) == {"bool": {
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


# --- stored-field filters and temporal facets (Signet's recall surface) --------------------------------
D1, D2 = datetime(2026, 5, 13, 6, tzinfo=timezone.utc), datetime(2026, 5, 14, 6, tzinfo=timezone.utc)
S1, S2 = "2026-05-13T06:00:00+00:00", "2026-05-14T06:00:00+00:00"


@pytest.mark.parametrize(
    ("start", "end", "facets", "expected"),
    [
        # AutoMem: timestamp, both bounds inclusive (unchanged)
        (D1, D2, None, {"range": {"timestamp": {"gte": S1, "lte": S2}}}),
        (D1, None, None, {"range": {"timestamp": {"gte": S1}}}),
        # facets: half-open windows
        (D1, D2, ("captured",), {"range": {"timestamp": {"gte": S1, "lt": S2}}}),
        (D1, D2, ("valid",), {"bool": {"filter": [{"exists": {"field": "t_valid"}}, {"range": {"t_valid": {"lt": S2}}}],
                                       "must_not": [{"range": {"t_invalid": {"lte": S1}}}]}}),
        (None, D2, ("valid",), {"bool": {"filter": [{"exists": {"field": "t_valid"}}, {"range": {"t_valid": {"lt": S2}}}]}}),
        (D1, D2, ("session", "source", "occurred", "observed", "valid", "captured"), {"bool": {"should": [
            {"range": {"timestamp": {"gte": S1, "lt": S2}}},
            {"bool": {"filter": [{"exists": {"field": "t_valid"}}, {"range": {"t_valid": {"lt": S2}}}],
                      "must_not": [{"range": {"t_invalid": {"lte": S1}}}]}},
            {"terms": {"date_terms": ["d:2026-05-13"]}},
        ], "minimum_should_match": 1}}),
        # occurred: the dates a memory was written on or speaks of, at day resolution
        (D1, D2, ("session", "occurred"), {"terms": {"date_terms": ["d:2026-05-13"]}}),
        # ... of a bounded window only; facets with no stored time match nothing
        (D1, None, ("occurred",), {"bool": {"must_not": [{"match_all": {}}]}}),
        (D1, D2, ("session", "source", "observed"), {"bool": {"must_not": [{"match_all": {}}]}}),
    ],
)
def test_window_clause(start, end, facets, expected):
    assert C.window_clause(start, end, facets) == expected


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, []),
        ({"who": "claude-code"}, [{"term": {"who": "claude-code"}}]),
        ({"project": "ops"}, [{"term": {"project": "ops"}}]),
        ({"pinned": True}, [{"term": {"pinned": True}}]),
        ({"pinned": False}, []),  # Signet: `pinned: false` does not filter
        ({"types": ("preference", "Preference", "preference")}, [{"terms": {"type": ["preference", "Preference"]}}]),
        ({"importance_min": 0.5}, [{"range": {"importance": {"gte": 0.5}}}]),
        ({"importance_min": 0.0}, [{"range": {"importance": {"gte": 0.0}}}]),
        ({"since": D1}, [{"range": {"timestamp": {"gte": S1}}}]),
        ({"since": D1, "until": D2}, [{"range": {"timestamp": {"gte": S1, "lte": S2}}}]),
        ({"who": "a", "pinned": True, "importance_min": 0.9}, [
            {"term": {"who": "a"}}, {"term": {"pinned": True}}, {"range": {"importance": {"gte": 0.9}}},
        ]),
    ],
)
def test_attribute_clauses(fields, expected):
    assert C.attribute_clauses(C.RecallFilter(bank="b", **fields)) == expected


def test_filter_clauses_with_facets_and_fields():
    f = C.RecallFilter(bank="b", start=D1, end=D2, window_facets=("captured",), who="w", tags=("editor",))
    assert C.filter_clauses(f)["bool"]["filter"] == [
        {"term": {"bank": "b"}}, {"terms": {"tag_prefixes": ["editor"]}},
        {"range": {"timestamp": {"gte": S1, "lt": S2}}}, {"term": {"who": "w"}},
    ]


def test_recall_filter_carries_the_request_fields():
    from service.recall.request import RecallRequest

    req = RecallRequest(bank="b", who="w", project="p", pinned=True, types=["x"], importance_min=0.2, since=D1, until=D2, window_facets=("valid",))
    f = Q.recall_filter(req, D2, ["MetaPattern"])
    assert (f.who, f.project, f.pinned, f.types, f.importance_min, f.since, f.until, f.window_facets) == ("w", "p", True, ("x",), 0.2, D1, D2, ("valid",))
    assert Q.recall_filter(RecallRequest(bank="b"), D2, []).window_facets is None


@pytest.mark.parametrize(
    ("types", "expected"),
    [
        ((), None),
        (("world", "experience", "observation"), None),
        (("experience",), {"bool": {"should": [{"term": {"fact_type": "experience"}}], "minimum_should_match": 1}}),
        (("observation",), {"bool": {"should": [{"term": {"type": "MetaPattern"}}], "minimum_should_match": 1}}),
        (("world",), {"bool": {"should": [
            {"term": {"fact_type": "world"}},
            # a memory stored through AutoMem (no fact_type) that is not a MetaPattern counts as world
            {"bool": {"must_not": [{"exists": {"field": "fact_type"}}, {"term": {"type": "MetaPattern"}}]}},
        ], "minimum_should_match": 1}}),
    ],
)
def test_fact_type_clause(types, expected):
    assert C.fact_type_clause(types) == expected


@pytest.mark.parametrize(
    ("fact_types", "expected"),
    [((), ("MetaPattern", "X")), (("world",), ("MetaPattern", "X")), (("world", "observation"), ("X",))],
)
def test_observations_lift_the_metapattern_exclusion(fact_types, expected):
    assert Q.effective_excluded_types(("MetaPattern", "X"), fact_types) == expected


def test_recall_filter_puts_tag_groups_and_fact_types_in_the_hard_filter():
    from service.filters import tag_groups as G
    from service.recall.request import RecallRequest

    req = RecallRequest(tag_groups=(G.Leaf(("a",), "any_strict"),), fact_types=("experience",), state_mode="history")
    f = Q.recall_filter(req, datetime(2024, 1, 1, tzinfo=timezone.utc), ("MetaPattern",))
    assert f.extra == (G.caller_tag("a"), {"bool": {"should": [{"term": {"fact_type": "experience"}}], "minimum_should_match": 1}})
    assert f.excluded_types == ("MetaPattern",)
    # scoped=False (expansion, fallback) lifts AutoMem's tag scope, never a Hindsight tag group
    assert G.caller_tag("a") in C.filter_clauses(f, scoped=False)["bool"]["filter"]
    plain = Q.recall_filter(RecallRequest(state_mode="history"), datetime(2024, 1, 1, tzinfo=timezone.utc), ("MetaPattern",))
    assert plain.extra == ()


@pytest.mark.parametrize(("cosine", "expected"), [(None, None), (0.5, 0.75), (-1.0, 0.0), (1.0, 1.0)])
def test_knn_min_score(cosine, expected):
    assert Q.knn_min_score(cosine) == expected


def test_with_min_score():
    arm = {"size": 3, "query": {"match_all": {}}}
    assert Q.with_min_score(arm, None) is arm
    assert Q.with_min_score(arm, 1.5) == {"size": 3, "query": {"match_all": {}}, "min_score": 1.5}


def test_temporal_arm():
    flt = {"bool": {"filter": [{"term": {"bank": "b"}}]}}
    start, end = datetime(2024, 1, 1, tzinfo=timezone.utc), datetime(2024, 2, 1, tzinfo=timezone.utc)
    dated = {"bool": {"filter": [flt, {"range": {"timestamp": {"gte": "2024-01-01T00:00:00+00:00", "lte": "2024-02-01T00:00:00+00:00"}}}]}}
    assert Q.temporal_arm(start, end, 10, flt, None) == {
        "size": 10, "_source": C.SOURCE, "query": dated, "sort": [{"timestamp": {"order": "desc"}}, {"id": "asc"}],
    }
    body = Q.temporal_arm(start, end, 10, flt, [0.1, 0.2])
    assert body["query"] == {"script_score": {"query": dated, "script": {"source": S.TEMPORAL_SCORE_SCRIPT, "params": {"query_value": [0.1, 0.2]}}}}
    assert body["script_fields"] == S.cosine_fields([0.1, 0.2])
    assert Q.temporal_arm(None, end, 5, flt, None)["query"]["bool"]["filter"][1] == {"range": {"timestamp": {"lte": "2024-02-01T00:00:00+00:00"}}}


def test_observation_sources():
    meta = {"type": "MetaPattern", "metadata": {"consolidation": {"member_ids": ["a", "b"]}}}
    assert Q.observation_sources(meta) == ["a", "b"]
    assert Q.observation_sources({"type": "Context", "metadata": {"consolidation": {"member_ids": ["a"]}}}) == []
    assert Q.observation_sources({"type": "MetaPattern", "metadata": {"consolidation": "x"}}) == []


def test_plan_arms_floors_the_vector_and_keyword_arms_and_adds_the_temporal_arm():
    from service.recall import retrieval
    from service.filters import tag_groups as G
    from service.recall.request import RecallRequest
    from service.clock.expressions import TimeWindow

    opts = retrieval.ArmOptions(overfetch=4, fetch_cap=200, metadata_search=True, idf=False)
    window = TimeWindow(datetime(2024, 1, 1, tzinfo=timezone.utc), datetime(2024, 2, 1, tzinfo=timezone.utc))
    req = RecallRequest(query="red car", limit=10, semantic_floor=0.4, keyword_floor=2.0, temporal_window=window,
                        tag_groups=(G.Leaf(("a",)),), state_mode="history")
    flt = Q.recall_filter(req, datetime(2024, 3, 1, tzinfo=timezone.utc), ())
    arms = dict(retrieval.plan_arms(req, flt, text="red car", lexical="red car", keywords=["red", "car"], vector=[0.1], limit=10, profile=None, options=opts))
    assert list(arms) == ["vector", "keyword", "metadata", "temporal"]
    assert arms["vector"]["min_score"] == pytest.approx(0.7) and arms["vector"]["size"] == 80  # tag groups widen the pool
    assert arms["keyword"]["min_score"] == 2.0
    assert "min_score" not in arms["metadata"] and "min_score" not in arms["temporal"]
    no_text = RecallRequest(query="red car", keyword_search=False, state_mode="history")
    arms = dict(retrieval.plan_arms(no_text, Q.recall_filter(no_text, datetime(2024, 3, 1, tzinfo=timezone.utc), ()), text="red car", lexical="red car",
                                    keywords=["red"], vector=[0.1], limit=5, profile=None, options=opts))
    assert list(arms) == ["vector"]  # enable_text_search false: no keyword and metadata arms


@pytest.mark.parametrize("detail", [False, True])
def test_arms_that_are_not_lean_bring_whole_memories(detail):
    from service.recall import retrieval
    from service.recall.request import RecallRequest

    opts = retrieval.ArmOptions(overfetch=4, fetch_cap=200, metadata_search=True, idf=True)
    req = RecallRequest(query="red car", limit=10, detail=detail)
    flt = Q.recall_filter(req, datetime(2024, 3, 1, tzinfo=timezone.utc), ())
    arms = retrieval.plan_arms(req, flt, text="red car", lexical="red car", keywords=["red", "car"], vector=[0.1], limit=10, profile=None, options=opts)
    with_hits = {name: body["_source"] for name, body in arms if body.get("size")}
    # Whole: filtering costs the engine more than the bytes save, and the stored stems spare ranking
    # the stemming (filters.clauses.WHOLE_SOURCE); the views pick their fields, hidden ones never shown.
    assert set(with_hits) == {"vector", "keyword", "metadata"} and all(s is True for s in with_hits.values())
    assert all("_source" not in body for name, body in arms if not body.get("size"))  # the document counts


def test_caller_only_tag_scope_never_matches_a_derived_tag():
    """Signet's tag scope (caller_only): an exact tag is carried and not derived; a prefix is a caller
    tag's hierarchy key or below it (the script runs only for memories enrichment derived tags on)."""
    from service.filters import tag_groups as G

    assert C.tag_clauses(["Entity:People"], "all", "prefix", caller_only=True) == [G.caller_prefix("entity:people")]
    assert C.tag_clauses(["a", "b"], "any", "exact", caller_only=True) == [{"bool": {"should": [
        {"bool": {"filter": [{"term": {"tags_norm": "a"}}], "must_not": [{"term": {"enrichment.derived_tags": "a"}}]}},
        {"bool": {"filter": [{"term": {"tags_norm": "b"}}], "must_not": [{"term": {"enrichment.derived_tags": "b"}}]}},
    ], "minimum_should_match": 1}}]
    assert G.caller_prefix("x") == {"bool": {"filter": [{"term": {"tag_prefixes": "x"}}], "should": [
        {"bool": {"must_not": [{"exists": {"field": "enrichment.derived_tags"}}]}},
        {"script": {"script": {"lang": "painless", "source": G.CALLER_PREFIX_SCRIPT, "params": {"key": "x"}}}},
    ], "minimum_should_match": 1}}
    # AutoMem's scope (spec 001) is every tag, derived ones included
    assert C.tag_clauses(["entity:people"], "any", "prefix") == [{"terms": {"tag_prefixes": ["entity:people"]}}]


def test_every_sort_of_the_vocabulary_has_an_order():
    from service.filters.vocabulary import SORTS

    assert set(C.SORT_ORDERS) == set(SORTS)
