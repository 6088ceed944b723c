"""service.graph.expansion and service.graph.walk: selection rules and query builders (pure)."""

import pytest

from service.graph.expansion import (
    SEED_SCORE_BOOST,
    Reach,
    candidate_edges,
    collect_entities,
    entity_key,
    entity_query,
    entity_spellings,
    relation_targets_query,
    select_entity_hits,
    select_relation_targets,
)
from service.graph.walk import Walk, walk_level

pytestmark = pytest.mark.unit


def edge(source, target, strength=0.5, type_="RELATES_TO"):
    return {"id": f"{source}|{type_}|{target}", "source_id": source, "target_id": target, "type": type_, "strength": strength}


def test_candidate_edges_walk_seeds_by_rank_and_skip_the_seed_set():
    seeds = [("s1", 0.8), ("s2", 0.6)]
    edges = {"s1": [edge("s1", "t1"), edge("t2", "s1"), edge("s1", "s2")], "s2": [edge("s2", "t1")]}
    assert [(sid, other) for sid, _, other, _ in candidate_edges(seeds, edges)] == [("s1", "t1"), ("s1", "t2"), ("s2", "t1")]


def test_bridges_sum_their_strengths_and_the_seed_term_is_a_quarter_of_the_best_seed():
    order = candidate_edges(
        [("s1", 0.8), ("s2", 0.6)],
        {"s1": [edge("s1", "t", 0.5), edge("t", "s1", 0.9, "LEADS_TO")], "s2": [edge("s2", "t", 0.3)]},
    )
    reach = select_relation_targets(order, {"t"}, limit=5)["t"]
    # Per seed its strongest edge (0.9 from s1, 0.3 from s2), summed, + 0.25 x 0.8.
    assert reach.relation_score == pytest.approx(0.9 + 0.3 + SEED_SCORE_BOOST * 0.8)
    assert [(r["from"], r["type"], r["direction"]) for r in reach.relations] == [
        ("s1", "RELATES_TO", "outgoing"), ("s1", "LEADS_TO", "incoming"), ("s2", "RELATES_TO", "outgoing"),
    ]
    assert Reach("x", best_by_seed={"s": 0.4}, best_seed_score=-1.0).relation_score == pytest.approx(0.4)  # no negative boost


def test_total_cap_counts_only_targets_that_passed_and_keeps_bridges_after_the_cap():
    order = candidate_edges(
        [("s1", 1.0), ("s2", 0.5)],
        {"s1": [edge("s1", "a"), edge("s1", "filtered"), edge("s1", "b")], "s2": [edge("s2", "c"), edge("s2", "a", 0.7)]},
    )
    chosen = select_relation_targets(order, {"a", "b", "c"}, limit=2)
    assert list(chosen) == ["a", "b"]  # "filtered" failed the filters and used no slot; "c" came too late
    assert chosen["a"].best_by_seed == {"s1": 0.5, "s2": 0.7}  # the edge from s2 still makes "a" a bridge


def test_relation_targets_query():
    flt = {"bool": {"filter": [{"term": {"bank": "default"}}]}}
    assert relation_targets_query(["a", "b"], flt, 0.0) == {
        "size": 2, "_source": True,  # whole: filtering costs the engine more than the bytes save (filters.clauses.WHOLE_SOURCE)
        "query": {"bool": {"filter": [flt, {"ids": {"values": ["a", "b"]}}]}},
    }
    # With a query vector each target's cosine comes back as a script field, never the vector itself.
    with_vector = relation_targets_query(["a"], flt, 0.0, [1.0, 0.0])
    assert with_vector["script_fields"]["cosine"]["script"]["params"]["query_value"] == [1.0, 0.0]
    assert relation_targets_query(["a"], flt, 0.6)["query"]["bool"]["filter"][-1] == {"range": {"importance": {"gte": 0.6}}}


@pytest.mark.parametrize(
    ("name", "key"),
    [("rachel", "rachel"), ("Rachel-Green", "rachel green"), ("rachel_green", "rachel green"), ("  Platform   Team ", "platform team")],
)
def test_entity_key(name, key):
    assert entity_key(name) == key


def test_entity_spellings_cover_names_and_slugs():
    assert entity_spellings("rachel green") == ["rachel green", "rachel-green", "rachel_green"]
    assert entity_spellings("rachel") == ["rachel"]


def test_collect_entities_in_result_order_all_types():
    sources = [
        {"entities": ["sarah", "rachel"]},
        {"entities": ["rachel-green", "acme corp", "Rachel"]},
        {},
    ]
    assert collect_entities(sources) == {"sarah": ["sarah"], "rachel": ["rachel"], "rachel green": ["rachel green"], "acme corp": ["acme corp"]}


def test_a_name_with_and_without_its_accents_is_one_entity():
    # An enriched memory stores the tag's slug ("jurgen") and the metadata's name ("Jürgen"): one person,
    # searched by both spellings, listed once (it took two of the five entity slots) and named as written.
    sources = [{"entities": ["giulia", "jurgen", "siemens", "jürgen"]}, {"entities": ["Jürgen", "zoë"]}]
    found = collect_entities(sources)
    assert found == {"giulia": ["giulia"], "jürgen": ["jurgen", "jürgen"], "siemens": ["siemens"], "zoë": ["zoë"]}
    assert list(found) == ["giulia", "jürgen", "siemens", "zoë"]
    assert entity_spellings(*found["jürgen"]) == ["jurgen", "jürgen"]
    assert entity_spellings("zoë") == ["zoë", "zoe"]
    assert entity_spellings("jürgen müller") == ["jürgen müller", "jürgen-müller", "jürgen_müller", "jurgen muller", "jurgen-muller", "jurgen_muller"]
    flt = {"match_all": {}}
    body = entity_query({"jürgen": found["jürgen"]}, flt, [], None, 5)
    assert body["aggs"]["per_entity"]["filters"]["filters"] == {"jürgen": {"terms": {"entities": ["jurgen", "jürgen"]}}}


def test_entity_query_is_one_search_with_a_bucket_per_entity():
    flt = {"bool": {"filter": [{"term": {"bank": "default"}}]}}
    body = entity_query({"rachel": ["rachel"], "platform team": ["platform team"]}, flt, ["s1"], "what is her job", 5)
    assert body["size"] == 0
    assert body["query"] == {"bool": {
        "filter": [flt, {"terms": {"entities": ["rachel", "platform team", "platform-team", "platform_team"]}}],
        "must_not": [{"ids": {"values": ["s1"]}}],
        "should": [{"match": {"content": {"query": "what is her job"}}}],
    }}
    agg = body["aggs"]["per_entity"]
    assert agg["filters"]["filters"] == {
        "rachel": {"terms": {"entities": ["rachel"]}},
        "platform team": {"terms": {"entities": ["platform team", "platform-team", "platform_team"]}},
    }
    top = agg["aggs"]["top"]["top_hits"]
    assert top["size"] == 5 and top["sort"][0] == "_score"
    assert entity_query({"x": ["x"]}, flt, [], None, 5)["aggs"]["per_entity"]["aggs"]["top"]["top_hits"]["sort"][0] == {
        "importance": {"order": "desc", "missing": "_last"}
    }


def test_select_entity_hits_first_entity_wins_and_cap():
    buckets = {"rachel": [{"_id": "m1", "_source": {}}, {"_id": "m2", "_source": {}}], "sarah": [{"_id": "m2", "_source": {}}, {"_id": "m3", "_source": {}}]}
    assert [(m, e) for m, _, e in select_entity_hits(["rachel", "sarah"], buckets, {"m1"}, 10)] == [("m2", "rachel"), ("m3", "sarah")]
    assert len(select_entity_hits(["rachel", "sarah"], buckets, set(), 2)) == 2


def test_related_walk_breadth_first_both_directions():
    walk = Walk("a")
    level1 = walk_level(walk, ["a"], [edge("a", "b", type_="LEADS_TO"), edge("c", "a"), edge("b", "a")], 1)
    assert level1 == ["b", "c"]
    assert walk.reached["c"].relation == {"type": "RELATES_TO", "strength": 0.5, "source_id": "c", "target_id": "a", "direction": "incoming"}
    level2 = walk_level(walk, level1, [edge("b", "d"), edge("c", "d"), edge("d", "a")], 2)
    assert level2 == ["d"]  # reached once, through the newest edge; a and the frontier are never revisited
    assert (walk.reached["d"].depth, walk.reached["d"].path) == (2, ["a", "b", "d"])


def test_entity_names_keep_document_order():
    from service.memory.tags import entity_names

    metadata = {"entities": {"organizations": ["Acme Corp"], "people": ["Bo", "Al"], "place": "Lyon"}}
    assert entity_names(["entity:people:zed", "x"], metadata) == ["zed", "acme corp", "bo", "al", "lyon"]
