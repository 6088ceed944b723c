"""Lean hits (service/recall/lean.py): the main arms' doc values and named queries, read back into
the same candidates and the same scores as the stored memories would give."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.idf_share import BOTH_MATCH, OWN_MATCH, keyword_plan, planned_keywords, planned_share_in_thread, shares_from_matches
from scoring.keywords import keyword_stems, stemmed_words
from scoring.metadata_terms import metadata_terms
from scoring.rerank import ScoringRequest, score_candidate
from service.filters import clauses as C
from service.recall import lean as L
from service.recall import queries as Q
from service.recall import retrieval
from service.recall.request import RecallRequest
from service.writes.writer import derived_fields

NOW = datetime(2024, 3, 1, tzinfo=timezone.utc)


def test_doc_values_read_back_as_stored_fields():
    source = L.lean_source({
        "id": ["m1"], "importance": [0.699999988079071], "confidence": [0.8999999761581421], "type": ["Context"],
        "tags": ["b", "a"], "date_terms": ["d:2024-01-02"], "metadata_terms": ["x"], "metadata_terms_plain": [""],
        "timestamp": ["2024-01-02T03:04:05.000Z"], "archived": [False], "cosine": [0.5],
    })
    assert source["importance"] == 0.7 and source["confidence"] == 0.9  # float32 doc values, as written
    assert source["tags"] == ["b", "a"] and source["date_terms"] == ["d:2024-01-02"]
    assert source["id"] == "m1" and source["type"] == "Context" and source["archived"] is False
    assert L.is_lean(source) and L.plain_terms(source) == ()
    assert L.plain_terms({L.LEAN: True, "metadata_terms_plain": ["repo", "x"]}) == ("repo", "x")
    assert L.plain_terms({L.LEAN: True}) is None  # written before the field existed


def test_writer_stores_the_plain_terms_or_the_marker():
    with_entities = derived_fields(["t"], {"source": "Slack", "entities": {"people": ["Ann"]}})
    assert with_entities["metadata_terms"] == ["slack", "ann"]
    assert with_entities["metadata_terms_plain"] == ["slack"]
    assert derived_fields(["t"], {"entities": {"people": ["Ann"]}})["metadata_terms_plain"] == L.NO_PLAIN_TERMS


def test_lean_body_swaps_the_source_for_doc_values_and_names_the_keyword_clauses():
    body = {"size": 80, "_source": C.RECALL_SOURCE, "query": {"match_all": {}}, "track_total_hits": False}
    clauses = L.keyword_clauses(["caroline", "group"], with_context=True)
    lean = L.lean_body(body, clauses)
    assert "_source" not in lean and lean["stored_fields"] == "_none_" and lean["docvalue_fields"] == list(L.FIELDS)
    assert L.lean_body(body, clauses, ("id", "tags"))["docvalue_fields"] == ["id", "tags"]
    assert lean["query"] == {"bool": {"must": [{"match_all": {}}], "should": clauses}}
    inner = [c["match"]["content"] if "match" in c else c["multi_match"] for c in clauses]
    assert [q["_name"] for q in inner] == ["own:caroline", "both:caroline", "own:group", "both:group"]
    assert all(q["boost"] == 0.0 and q["operator"] == "and" for q in inner)  # scores unchanged; every term of the keyword
    assert L.lean_body(body, [])["query"] == {"match_all": {}}
    assert [c["match"]["content"]["_name"] for c in L.keyword_clauses(["group"], with_context=False)] == ["own:group"]


def test_plan_arms_makes_the_main_arms_lean_and_asks_every_arm_for_the_keywords():
    opts = retrieval.ArmOptions(overfetch=4, fetch_cap=200, metadata_search=True, idf=True, thread_context_boost=0.5)
    req = RecallRequest(query="red car", limit=10)
    flt = Q.recall_filter(req, NOW, ())
    matching = retrieval.LeanHits(keywords=("red", "car"), with_context=True)
    arms = dict(retrieval.plan_arms(req, flt, text="red car", lexical="red car", keywords=["red", "car"], vector=[0.1], limit=10,
                                    profile=None, options=opts, lean=matching))
    assert {n for n, b in arms.items() if "stored_fields" in b} == {"vector", "keyword"}
    assert arms["metadata"]["_source"] is True and "stored_fields" not in arms["metadata"]  # a few hits: whole stored memories
    named = L.keyword_clauses(["red", "car"], True)
    assert all(arms[n]["query"]["bool"]["should"] == named for n in ("vector", "keyword", "metadata"))
    counts = {n: b for n, b in arms.items() if not b.get("size")}
    assert counts == {retrieval.COUNT_ARM: Q.doc_counts_arm(C.filter_clauses(flt), ["red", "car"])}  # the document counts are as they were
    unlean = dict(retrieval.plan_arms(req, flt, text="red car", lexical="red car", keywords=["red", "car"], vector=[0.1], limit=10,
                                      profile=None, options=opts))
    assert all("stored_fields" not in b for b in unlean.values())


@pytest.mark.parametrize(("dates", "times", "thread", "left_out"), [
    (True, True, True, set()),
    (False, False, True, {"date_terms", "updated_at"}),
    (True, False, False, {"updated_at", "thread_prev"}),
])
def test_a_recall_reads_only_the_doc_values_its_ranking_needs(dates, times, thread, left_out):
    fields = L.fields_for(dates=dates, times=times, thread=thread)
    assert set(L.FIELDS) - set(fields) == left_out and "id" in fields
    assert not {"archived", "last_accessed"} & set(L.FIELDS)  # never returned to a recall / read from the page


def lean_hit(mid: str, score: float, matched: list[str] | None = None, **fields) -> dict:
    hit = {"_index": "i", "_score": score, "fields": {"id": [mid], **{k: v if isinstance(v, list) else [v] for k, v in fields.items()}}}
    if matched:
        hit["matched_queries"] = matched
    return hit


def test_parse_responses_reads_lean_hits_and_keeps_a_stored_memory_another_arm_returned():
    arms = [("vector", {}), ("keyword", {}), ("metadata", {})]
    stored = {"content": "red car", "metadata": {"source": "x"}, "tags": ["t"]}
    responses = [
        {"hits": {"hits": [lean_hit("a", 0.9, ["own:red"], tags=["t"]), lean_hit("b", 0.8)]}},
        {"hits": {"hits": [lean_hit("a", 3.0, ["own:red", "own:car"])]}},
        {"hits": {"hits": [{"_id": "b", "_score": 1.0, "_source": stored, "matched_queries": ["own:car"]}]}},
        {"hits": {"hits": [{"_score": 1.0, "fields": {}}]}},  # no id: never a candidate
    ]
    out = retrieval.parse_responses(arms + [("vector", {})], responses)
    a, b = out.hits["a"], out.hits["b"]
    assert a.lean and a.arms == {"vector", "keyword"} and a.matched == {"own:red", "own:car"} and a.bm25 == 3.0
    assert not b.lean and b.source is stored and b.matched == {"own:car"}
    matching = retrieval.LeanHits(("red", "car"), with_context=False)
    assert a.candidate("vector", matching).keyword_matches == {"own:red", "own:car"}
    assert b.candidate("vector", matching).keyword_matches == {"own:car"}
    assert out.hits.keys() == {"a", "b"}
    assert b.candidate("vector").keyword_matches is None  # no arm asked: the content is read


words = st.sampled_from(["group", "groups", "support", "caroline", "painting", "painted", "the", "lgbtq", "went", "e-mail", "mail"])


@settings(max_examples=200, deadline=None)
@given(keywords=st.lists(words, min_size=1, max_size=5, unique=True), content=st.lists(words, max_size=8),
       context=st.lists(words, max_size=6), weight=st.sampled_from([0.0, 0.3, 1.0]),
       idf=st.dictionaries(words, st.floats(0, 5), max_size=4))
def test_the_engines_answers_give_the_share_the_content_gives(keywords, content, context, weight, idf):
    """When the engine finds what the stemmer finds, the two ways of computing the share agree exactly."""
    plan = keyword_plan(keywords, idf)
    text, ctx = " ".join(content), " ".join(context)
    own_words, both_words = stemmed_words(text), stemmed_words(text) | stemmed_words(ctx)
    matched = frozenset(
        [OWN_MATCH + k for k in planned_keywords(keywords) if set(keyword_stems(k)) <= own_words]
        + [BOTH_MATCH + k for k in planned_keywords(keywords) if set(keyword_stems(k)) <= both_words]
    )
    assert shares_from_matches(plan, matched, weight) == pytest.approx(planned_share_in_thread(plan, text, ctx or None, weight), abs=1e-12)


def test_a_lean_hit_scores_as_its_stored_memory():
    metadata = {"source": "slack", "entities": {"people": ["Caroline"]}}
    stored = {"content": "Caroline went to the support group", "tags": ["Locomo:conv-26", "entity:people:caroline"],
              "importance": 0.7, "confidence": 0.9, "type": "Context", "timestamp": "2024-02-01T10:00:00+00:00",
              "metadata": metadata, "date_terms": ["d:2024-02-01"], "thread_context": "she painted"}
    doc_values = {"id": ["m"], "importance": [0.699999988079071], "confidence": [0.8999999761581421], "type": ["Context"],
                  "timestamp": ["2024-02-01T10:00:00.000Z"], "tags": sorted(stored["tags"]), "date_terms": ["d:2024-02-01"],
                  "metadata_terms": metadata_terms(metadata), "metadata_terms_plain": metadata_terms(metadata, include_entities=False)}
    keywords = ("caroline", "support", "group", "slack", "painted")
    matched = ["own:caroline", "own:support", "own:group", "both:caroline", "both:support", "both:group", "both:painted"]
    full = retrieval.Hit("m", stored, cosine=0.6, arms={"vector"})
    lean = retrieval.Hit("m", L.lean_source(doc_values), cosine=0.6, arms={"vector"}, matched=frozenset(matched))
    req = ScoringRequest(query="did caroline go to the slack support group she painted", keywords=keywords, now=NOW,
                         idf={"caroline": 2.0, "support": 1.0}, thread_context_weight=0.5, relevance_gate=0.3)
    matching = retrieval.LeanHits(tuple(planned_keywords(keywords)), with_context=True)
    a, b = score_candidate(full.candidate("vector"), req), score_candidate(lean.candidate("vector", matching), req)
    assert b.components == pytest.approx(a.components) and b.final_score == pytest.approx(a.final_score)
    assert a.components["tag"] > 0  # "slack" is a plain metadata term; "caroline" only an entity's
