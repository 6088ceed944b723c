"""Enrichment planning is pure: derived fields, scopes, system edges, sequence links, query DSL."""

from __future__ import annotations

import copy
import json

import pytest

from service.enrichment import plan
from service.enrichment.extractor import EXTRACTION_RULES
from service.enrichment.plan import Member, Subject


@pytest.mark.parametrize("tags, metadata, expected", [
    ([], {"session_id": "abc"}, "session:abc"),
    (["session:zzz"], {"conversation_id": 7}, "conversation:7"),
    ([], {"thread_id": " t1 "}, "thread:t1"),
    ([], {"session_id": True, "thread_id": "t"}, "thread:t"),
    ([], {"session_id": {"nested": 1}, "session": "x"}, "tags:"),
    (["project-x", "Session/ABC"], {}, "session:abc"),
    (["conversation:9:turn"], {}, "conversation:9:turn"),
    (["session"], {}, plan.scope_key(["session"], {})),
    ([], {}, "tags:"),
])
def test_scope_key(tags, metadata, expected):
    assert plan.scope_key(tags, metadata) == expected


def test_tag_scopes_are_the_exact_tag_set():
    a = plan.scope_key(["B", "a"], {})
    assert a == plan.scope_key(["a", "b"], {}) and a.startswith("tags:") and len(a) == 25
    assert a != plan.scope_key(["a"], {})
    assert len(plan.scope_key([], {"session_id": "x" * 1000})) == plan.MAX_SCOPE


def subject(source, vector=None):
    return Subject("m1", source, vector, 3, 1)


def test_enriched_document_keeps_caller_fields_and_records_derived_ones():
    source = {"id": "m1", "content": "c", "tags": ["entity:people:rachel", "keep"], "metadata": {"source": "chat"},
              "importance": 0.7, "timestamp": "2024-01-01T00:00:00+00:00", "updated_at": "2024-01-02T00:00:00+00:00"}
    before = copy.deepcopy(source)
    entities = {"people": ["Rachel", "Sarah"], "places": ["Oslo"]}
    doc = plan.enriched_document(subject(source), entities, now="NOW", attempts=1, forced=False, similar=2, preceded_by="m0")
    assert source == before  # input not mutated
    assert doc["tags"] == ["entity:people:rachel", "keep", "entity:people:sarah", "entity:places:oslo"]
    assert doc["metadata"] == {"source": "chat", "entities": entities}
    assert doc["importance"] == 0.7 and doc["content"] == "c"
    assert doc["tags_norm"] == sorted(t.lower() for t in doc["tags"])
    assert "entity:places" in doc["tag_prefixes"] and "sarah" in doc["entities"]
    e = doc["enrichment"]
    assert e["derived_tags"] == ["entity:people:sarah", "entity:places:oslo"]
    assert e["derived_metadata_keys"] == ["entities"] and e["derived_metadata"] == {"entities": entities}
    assert (e["status"], e["attempts"], e["similar_count"], e["preceded_by"], e["source_updated_at"]) == ("done", 1, 2, "m0", "2024-01-02T00:00:00+00:00")
    assert e["scope"] == plan.scope_key(["entity:people:rachel", "keep"], {"source": "chat"})


def test_a_rerun_replaces_only_its_own_fields():
    first = plan.enriched_document(subject({"content": "c", "tags": ["a"], "metadata": {}}), {"people": ["Sarah"]},
                                   now="1", attempts=1, forced=False, similar=0, preceded_by=None)
    rerun = plan.enriched_document(subject(first), {"places": ["Oslo"]}, now="2", attempts=1, forced=True, similar=0, preceded_by=None)
    assert rerun["tags"] == ["a", "entity:places:oslo"]
    assert rerun["metadata"] == {"entities": {"places": ["Oslo"]}}
    caller_owned = {**first, "metadata": {"entities": ["mine"]}}  # the caller PATCHed the key since
    kept = plan.enriched_document(subject(caller_owned), {"places": ["Oslo"]}, now="2", attempts=1, forced=False, similar=0, preceded_by=None)
    assert kept["metadata"] == {"entities": ["mine"]} and kept["enrichment"]["derived_metadata_keys"] == []
    nothing = plan.enriched_document(subject(first), {}, now="2", attempts=1, forced=False, similar=0, preceded_by=None)
    assert nothing["tags"] == ["a"] and nothing["metadata"] == {}


def test_up_to_date_needs_same_inputs_and_derived_fields_present():
    done = plan.enriched_document(subject({"content": "c", "tags": ["a"], "metadata": {}, "timestamp": "t"}), {"people": ["Sarah"]},
                                  now="1", attempts=1, forced=False, similar=0, preceded_by=None)
    assert subject(done).up_to_date()
    assert not subject({**done, "content": "other"}).up_to_date()
    assert not subject({**done, "timestamp": "t2"}).up_to_date()
    assert not subject({**done, "tags": ["a"]}).up_to_date()  # a PATCH dropped the derived tag
    assert not subject({**done, "metadata": {}}).up_to_date()
    assert not subject({**done, "enrichment": {**done["enrichment"], "status": "pending"}}).up_to_date()
    assert not subject({"content": "c"}).up_to_date()


def test_input_hash_handles_lone_surrogates():
    assert plan.input_hash("a\ud800", ["t\udfff"], "tags:", None) != plan.input_hash("a", ["t"], "tags:", None)


@pytest.mark.parametrize("score, cos", [(1.0, 1.0), (0.9, 0.8), (0.5, 0.0), (0.0, -1.0), (1.2, 1.0)])
def test_cosine_from_lucene_score(score, cos):
    assert plan.cosine(score) == pytest.approx(cos)


def test_similar_edges_threshold_limit_and_both_directions():
    hits = [{"_id": "m1", "_score": 1.0}, {"_id": "a", "_score": 0.95}, {"_id": "b", "_score": 0.91}, {"_id": "c", "_score": 0.85}]
    edges = plan.similar_edges("m1", hits, 0.8, 5)
    assert [(e["source_id"], e["target_id"], e["strength"]) for e in edges] == [
        ("m1", "a", 0.9), ("a", "m1", 0.9), ("m1", "b", 0.82), ("b", "m1", 0.82)]
    assert all(e["type"] == "SIMILAR_TO" and e["properties"] == {"score": e["strength"]} for e in edges)
    assert [e["target_id"] for e in plan.similar_edges("m1", hits, 0.0, 1)] == ["a", "m1"]
    assert plan.similar_edges("m1", [], 0.8, 5) == []


def m(mid, day, scope="s"):
    return Member(mid, scope, f"2024-01-0{day}T00:00:00+00:00")


def test_sequences_in_order_batch():
    batch = [m("b", 2), m("a", 1), m("c", 3)]
    links, repoint = plan.plan_sequences(batch, {"a": None}, {"c": None})
    assert links == [("b", "a"), ("c", "b")] and repoint == []


def test_sequences_join_enriched_neighbours_and_repoint_later_ones():
    # enriched before: p (day 1), s (day 5); the batch brings x (day 3)
    links, repoint = plan.plan_sequences([m("x", 3)], {"x": m("p", 1)}, {"x": m("s", 5)})
    assert links == [("s", "x"), ("x", "p")] and repoint == ["s"]


def test_sequences_keep_scopes_apart_and_break_ties_by_id():
    batch = [m("b", 1), m("a", 1), m("k", 2, scope="other")]
    links, _ = plan.plan_sequences(batch, {}, {})
    assert links == [("b", "a")]


def test_sequences_skip_timestamps_they_cannot_read():
    links, _ = plan.plan_sequences([Member("a", "s", None), m("b", 1)], {}, {})
    assert links == [("b", "a")]  # an unreadable time sorts first


def test_preceded_edges_shape():
    assert plan.preceded_edges([("b", "a")]) == [{"source_id": "b", "target_id": "a", "type": "PRECEDED_BY", "strength": 1.0, "properties": {"count": 1}}]


def test_neighbour_body_dsl():
    assert plan.neighbour_body("default", "session:x", "2024-01-02T00:00:00+00:00", "m5", ["m5", "m6"], before=True) == {
        "size": 1, "_source": ["timestamp"],
        "query": {"bool": {
            "filter": [{"term": {"bank": "default"}}, {"term": {"enrichment.scope": "session:x"}}],
            "must_not": [{"ids": {"values": ["m5", "m6"]}}],
            "should": [{"range": {"timestamp": {"lt": "2024-01-02T00:00:00+00:00"}}},
                       {"bool": {"filter": [{"term": {"timestamp": "2024-01-02T00:00:00+00:00"}}, {"range": {"id": {"lt": "m5"}}}]}}],
            "minimum_should_match": 1,
        }},
        "sort": [{"timestamp": "desc"}, {"id": "desc"}],
    }
    after = plan.neighbour_body("default", "s", "t", "m5", [], before=False)
    assert after["sort"] == [{"timestamp": "asc"}, {"id": "asc"}] and after["query"]["bool"]["should"][0] == {"range": {"timestamp": {"gt": "t"}}}


def test_knn_body_dsl():
    assert plan.knn_body("default", "m1", [0.1, 0.2], 6, ["MetaPattern"]) == {
        "size": 6, "_source": False,
        "query": {"knn": {"embedding": {"vector": [0.1, 0.2], "k": 6, "filter": {"bool": {
            "filter": [{"term": {"bank": "default"}}],
            "must_not": [{"ids": {"values": ["m1"]}}, {"terms": {"type": ["MetaPattern"]}}]}}}}},
    }


def test_stale_edges_query_dsl():
    assert plan.stale_edges_query([], []) is None
    assert plan.stale_edges_query(["a"], ["a", "s"]) == {"bool": {"should": [
        {"bool": {"filter": [{"term": {"type": "SIMILAR_TO"}}], "should": [{"terms": {"source_id": ["a"]}}, {"terms": {"target_id": ["a"]}}], "minimum_should_match": 1}},
        {"bool": {"filter": [{"term": {"type": "PRECEDED_BY"}}, {"terms": {"source_id": ["a", "s"]}}]}},
    ], "minimum_should_match": 1}}


@pytest.mark.parametrize("bank", ["default", None])
def test_pending_query_is_never_enriched_or_marked_pending_with_no_script(bank):
    # The idle worker's look every few seconds, GET /enrichment/status, `engram reenrich --wait`: term lookups only.
    q = plan.pending_query(bank)
    assert q == {"bool": {"filter": [] if bank is None else [{"term": {"bank": bank}}], "should": [
        {"bool": {"must_not": [{"exists": {"field": "enrichment.status"}}]}},
        {"term": {"enrichment.status": "pending"}},
    ], "minimum_should_match": 1}}
    assert "script" not in json.dumps(q)


def test_marked_query_is_the_banks_memories_marked_pending_only():
    assert plan.marked_query("b") == {"bool": {"filter": [{"term": {"bank": "b"}}, {"term": {"enrichment.status": "pending"}}]}}


def test_start_query_also_finds_enriched_memories_edited_since_their_run():
    q, pending = plan.start_query(None), plan.pending_query(None)
    should = q["bool"]["should"]
    assert q["bool"]["filter"] == [] and q["bool"]["minimum_should_match"] == 1 and should[:2] == pending["bool"]["should"]
    assert should[2]["bool"]["filter"][0] == {"term": {"enrichment.status": "done"}}
    assert "enrichment.source_updated_at" in should[2]["bool"]["filter"][1]["script"]["script"]["source"]


@pytest.mark.parametrize("bank, filters", [
    ("default", [{"term": {"bank": "default"}}, {"term": {"enrichment.status": "done"}}]),
    (None, [{"term": {"enrichment.status": "done"}}]),  # every bank: the start-up check
])
def test_older_rules_query_finds_done_memories_of_an_older_or_no_edition(bank, filters):
    assert plan.older_rules_query(bank) == {"bool": {"filter": filters, "must_not": [{"range": {"enrichment.rules": {"gte": EXTRACTION_RULES}}}]}}


def test_enriched_document_and_the_marks_record_the_edition_and_the_request():
    doc = plan.enriched_document(subject({"id": "m1", "content": "c"}), {}, now="N", attempts=1, forced=True, similar=0, preceded_by=None)
    assert doc["enrichment"]["rules"] == EXTRACTION_RULES and doc["enrichment"]["forced"] is True
    assert plan.reprocess_mark() == {"enrichment": {"status": "pending", "forced": True}}
    assert plan.reprocess_mark() is not plan.reprocess_mark()  # each bulk action gets its own


def test_status_counts_body_counts_states_and_older_editions():
    aggs = plan.status_counts_body("b")["aggs"]
    assert list(aggs["state"]["filters"]["filters"]) == ["pending", "done", "failed"]
    assert aggs["older_rules"] == {"filter": plan.older_rules_query("b")}
    resp = {"aggregations": {"state": {"buckets": {"pending": {"doc_count": 1}, "done": {"doc_count": 5}, "failed": {"doc_count": 0}}},
                             "older_rules": {"doc_count": 2}}}
    assert plan.status_counts(resp) == {"stored": {"pending": 1, "done": 5, "failed": 0}, "older_rules": 2}


def test_failure_state_keeps_derived_records():
    prior = {"status": "done", "derived_tags": ["entity:people:x"], "attempts": 1}
    assert plan.failure_state(prior, attempts=2, error="boom" * 200, now="N", final=False) == {
        "status": "pending", "derived_tags": ["entity:people:x"], "attempts": 2, "last_error": ("boom" * 200)[:500], "last_error_at": "N"}
    assert plan.failure_state(None, attempts=3, error="x", now="N", final=True)["status"] == "failed"
