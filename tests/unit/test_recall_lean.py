"""Lean hits (service/recall/lean.py): the main arms' doc values, read back into the same candidates
and the same scores as the stored memories would give; the stems the write path stores for them
(service/memory/stems.py)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.idf_share import keyword_plan, planned_share_in_thread, planned_share_of_stems
from scoring.keywords import stemmed_words
from scoring.metadata_terms import metadata_terms
from scoring.rerank import ScoringRequest, query_stems, score_candidate
from service.filters import clauses as C
from service.filters import scripts as S
from service.recall import lean as L
from service.recall import queries as Q
from service.recall import retrieval
from service.memory import stems as M
from service.recall.request import RecallRequest
from service.storage.memories import _stemmed
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


@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=32), min_size=1, max_size=50))
def test_float_doc_values_read_back_as_round_gives_them_whatever_was_remembered(values):
    for v in values:  # twice: the second read is the remembered one
        for _ in range(2):
            assert L.lean_source({"importance": [v]})["importance"] == round(v, L.FLOAT_DECIMALS)
    assert len(L._ROUNDED) <= L.ROUNDED_KEPT


def test_writer_stores_the_plain_terms_or_the_marker():
    with_entities = derived_fields(["t"], {"source": "Slack", "entities": {"people": ["Ann"]}})
    assert with_entities["metadata_terms"] == ["slack", "ann"]
    assert with_entities["metadata_terms_plain"] == ["slack"]
    assert derived_fields(["t"], {"entities": {"people": ["Ann"]}})["metadata_terms_plain"] == L.NO_PLAIN_TERMS


def test_lean_body_swaps_the_source_for_doc_values():
    body = {"size": 80, "_source": C.SOURCE, "query": {"match_all": {}}, "track_total_hits": False}
    lean = L.lean_body(body)
    assert "_source" not in lean and lean["stored_fields"] == "_none_" and lean["docvalue_fields"] == list(L.FIELDS)
    assert lean["query"] == {"match_all": {}} and lean["size"] == 80
    assert L.lean_body(body, ("id", "tags"))["docvalue_fields"] == ["id", "tags"]
    assert L.stored_body(body)["_source"] is True  # a few hits: whole memories, even beside script fields


def test_plan_arms_makes_the_main_arms_lean():
    opts = retrieval.ArmOptions(overfetch=4, fetch_cap=200, metadata_search=True, idf=True, thread_context_boost=0.5)
    req = RecallRequest(query="red car", limit=10)
    flt = Q.recall_filter(req, NOW, ())
    lean = retrieval.LeanHits(("id", "tags"))
    arms = dict(retrieval.plan_arms(req, flt, text="red car", lexical="red car", keywords=["red", "car"], vector=[0.1], limit=10,
                                    profile=None, options=opts, lean=lean))
    assert {n for n, b in arms.items() if "stored_fields" in b} == {"vector", "keyword"}
    assert arms["vector"]["docvalue_fields"] == ["id", "tags"] and "script_fields" in arms["keyword"]  # the cosine stays
    assert arms["metadata"]["_source"] is True and "stored_fields" not in arms["metadata"]  # a few hits: whole stored memories
    counts = {n: b for n, b in arms.items() if not b.get("size")}
    assert counts == {retrieval.COUNT_ARM: Q.doc_counts_arm(C.filter_clauses(flt), ["red", "car"])}  # the document counts are as they were
    unlean = dict(retrieval.plan_arms(req, flt, text="red car", lexical="red car", keywords=["red", "car"], vector=[0.1], limit=10,
                                      profile=None, options=opts))
    assert all("stored_fields" not in b for b in unlean.values()) and arms.keys() == unlean.keys()


@pytest.mark.parametrize(("dates", "times", "thread", "left_out"), [
    (True, True, True, set()),
    (False, False, True, {"date_terms", "updated_at"}),
    (True, False, False, {"updated_at", "thread_prev"}),
])
def test_a_recall_reads_only_the_doc_values_its_ranking_needs(dates, times, thread, left_out):
    fields = L.fields_for(dates=dates, times=times, thread=thread)
    assert set(L.FIELDS) - set(fields) == left_out and "id" in fields
    assert "archived" not in L.FIELDS  # no recall returns an archived memory
    assert "last_accessed" in fields  # access tracking: which of the page's memories the page read brings versions of
    assert not set(L.STEM_NAMES) & set(L.FIELDS)  # stems: only the query's, named by the post filter


def test_the_stems_asked_for_are_the_ones_the_keyword_share_tests():
    body = S.with_cosine({"size": 50, "query": {"match_all": {}}}, [0.1])
    lean = L.lean_body(body, ("id",), ("carolin", "group"))
    assert lean["script_fields"] == body["script_fields"]  # the keyword arm keeps its cosine, and no other script
    assert lean["query"] == body["query"] and lean["post_filter"] == L.stem_match_filter(("carolin", "group"))
    assert "post_filter" not in L.lean_body({"size": 5}, ("id",))  # no stems: nothing to name


@pytest.mark.parametrize("stems, within, names", [
    (("carolin",), None, ["c", "c:carolin", "x", "x:carolin"]),
    (("a", "b:c"), None, ["c", "c:a", "c:b:c", "x", "x:a", "x:b:c"]),
    (("a",), {"term": {"bank": "b"}}, ["c", "c:a", "x", "x:a"]),
])
def test_the_stem_filter_keeps_every_hit_and_names_each_stem_per_field(stems, within, names):
    f = L.stem_match_filter(stems, within)["bool"]
    assert f["filter"] == [within or {"match_all": {}}]  # filters nothing the arm (or its own post filter) kept
    assert "must" not in f and "minimum_should_match" not in f  # the named clauses are optional
    got = []
    for clause in f["should"]:
        (kind, spec), = clause.items()
        if kind == "exists":
            name = spec["_name"]
            assert spec == {"field": {"c": "content_stems", "x": "context_stems"}[name], "_name": name}
        else:
            (field, term), = spec.items()
            name = term["_name"]
            assert kind == "term" and L.STEM_NAMES[field] == name[0] and term == {"value": name[2:], "_name": name}
        got.append(name)
    assert got == names


@settings(max_examples=300, deadline=None)
@given(stored=st.tuples(*[st.none() | st.lists(st.sampled_from(["", "a", "b:c", "c", "x:y", "carolin"]), unique=True, min_size=1)] * 2),
       query=st.lists(st.sampled_from(["a", "b:c", "c", "x:y", "carolin", "group"]), unique=True, max_size=4))
def test_the_named_matches_read_back_as_the_stored_stems_the_query_holds(stored, query):
    """What the engine names for a memory (an `exists` per stems field it has, a `term` per query stem
    that field holds) reads back as those stems; a field it lacks stays absent (read whole: predates).
    A stored field is never empty: the write path writes [""] for a text without stems."""
    matched = []
    for field, values in zip(L.STEM_NAMES, stored):
        if values is not None:
            name = L.STEM_NAMES[field]
            matched += [name] + [f"{name}:{q}" for q in query if q in values]
    source = L.lean_source({"id": ["m"]}, matched)
    for field, values in zip(L.STEM_NAMES, stored):
        got = M.read_stems(source.get(field))
        assert got == (None if values is None else frozenset(values) & frozenset(query))


@settings(max_examples=200, deadline=None)
@given(keywords=st.lists(st.sampled_from(["what", "did", "groups", "support", "caroline", "e-mail", "the", "painting", "x"]), max_size=5, unique=True),
       idf=st.dictionaries(st.sampled_from(["groups", "support", "caroline"]), st.floats(0, 5), max_size=3))
def test_query_stems_are_every_stem_the_plan_tests(keywords, idf):
    req = ScoringRequest(query=" ".join(keywords), keywords=tuple(keywords), now=NOW, idf=idf)
    tested = {s for stems, _ in req.keyword_plan.keywords for s in stems}
    assert set(query_stems(keywords)) == tested and list(query_stems(keywords)) == sorted(tested)


def lean_hit(mid: str, score: float, matched: list[str] | None = None, **fields) -> dict:
    hit = {"_index": "i", "_score": score, "fields": {"id": [mid], **{k: v if isinstance(v, list) else [v] for k, v in fields.items()}}}
    return hit if matched is None else {**hit, "matched_queries": matched}


def test_parse_responses_reads_lean_hits_and_keeps_a_stored_memory_another_arm_returned():
    arms = [("vector", {}), ("keyword", {}), ("metadata", {})]
    stored = {"content": "red car", "metadata": {"source": "x"}, "tags": ["t"]}
    matched = ["c", "c:car", "c:red", "x"]  # the post filter's names: content holds car and red; a context, none of them
    responses = [
        {"hits": {"hits": [lean_hit("a", 0.9, matched, tags=["t"]), lean_hit("b", 0.8)]}},
        {"hits": {"hits": [lean_hit("a", 3.0, matched)]}},
        {"hits": {"hits": [{"_id": "b", "_score": 1.0, "_source": stored}]}},
        {"hits": {"hits": [{"_score": 1.0, "fields": {}}]}},  # no id: never a candidate
    ]
    out = retrieval.parse_responses(arms + [("vector", {})], responses)
    a, b = out.hits["a"], out.hits["b"]
    assert a.lean and a.arms == {"vector", "keyword"} and a.bm25 == 3.0
    assert not b.lean and b.source is stored and out.hits.keys() == {"a", "b"}
    ca, cb = a.candidate("vector"), b.candidate("vector")
    assert (ca.content_stems, ca.context_stems, ca.content) == ({"car", "red"}, frozenset(), "")
    assert (cb.content_stems, cb.content) == (None, "red car")  # the stored memory: read from its content


def test_a_memory_written_before_the_fields_is_read_whole():
    assert L.predates({L.LEAN: True, "id": "m"}, stems=True)  # no content_stems
    assert L.predates(L.lean_source({"id": ["m"]}, []), stems=True)  # neither stems field named
    assert not L.predates(L.lean_source({"id": ["m"]}, ["c"]), stems=True)  # stored, none of the query's
    assert L.predates(L.lean_source({"id": ["m"]}, ["cosine", "head", "xc"]), stems=True)  # other names: not ours
    assert L.lean_source({"id": ["m"]}, ["c:paint", "c", "x"]) == {"id": "m", "content_stems": ["paint"], "context_stems": [], L.LEAN: True}
    assert not L.predates({L.LEAN: True, "id": "m", "content_stems": [""]}, stems=True)
    assert not L.predates({L.LEAN: True, "id": "m"}, stems=False)
    assert L.predates({L.LEAN: True, "content_stems": ["x"], "metadata_terms": ["slack"]}, stems=True)  # no plain terms
    assert not L.predates({L.LEAN: True, "content_stems": ["x"], "metadata_terms": ["slack"], "metadata_terms_plain": [""]}, stems=True)


def test_every_write_carries_the_stems_of_the_texts_it_sets():
    whole = M.with_stems({"content": "The groups painted", "thread_context": "the and of"})
    assert whole["content_stems"] == sorted(stemmed_words("The groups painted")) and whole["context_stems"] == M.NO_STEMS
    assert M.with_stems({"thread_context": "Caroline went"}) == {"thread_context": "Caroline went", "context_stems": ["carolin", "went"]}
    assert M.with_stems({"thread_context": None})["context_stems"] is None  # cleared, as a restore leaves it
    assert M.with_stems({"thread_context": ""})["context_stems"] == M.NO_STEMS
    assert M.with_stems({"last_accessed": "x"}) == {"last_accessed": "x"}  # nothing to derive
    assert M.read_stems(None) is None and M.read_stems([""]) == frozenset() and M.read_stems(["a"]) == {"a"}
    # The store's bulk actions: whole documents and partial updates alike; scripts untouched.
    assert _stemmed({"_op_type": "index", "_id": "m", "_source": {"content": "red"}})["_source"]["content_stems"] == ["red"]
    assert _stemmed({"_op_type": "update", "_id": "m", "doc": {"thread_context": "red"}})["doc"]["context_stems"] == ["red"]
    script = {"_op_type": "update", "_id": "m", "script": {"source": "x"}}
    assert _stemmed(script) is script


words = st.sampled_from(["group", "groups", "support", "caroline", "painting", "painted", "the", "lgbtq", "went", "e-mail", "mail", ""])


@settings(max_examples=200, deadline=None)
@given(keywords=st.lists(words, min_size=1, max_size=5, unique=True), content=st.lists(words, max_size=8),
       context=st.lists(words, max_size=6), weight=st.sampled_from([0.0, 0.3, 1.0]),
       idf=st.dictionaries(words, st.floats(0, 5), max_size=4))
def test_the_stored_stems_give_the_share_the_texts_give(keywords, content, context, weight, idf):
    """Stems stored at write time, read back from doc values, score as the texts themselves."""
    plan = keyword_plan(keywords, idf)
    text, ctx = " ".join(content), " ".join(context)
    stored = M.with_stems({"content": text, "thread_context": ctx or None})
    got = planned_share_of_stems(plan, M.read_stems(stored["content_stems"]), M.read_stems(stored["context_stems"]), weight)
    assert got == planned_share_in_thread(plan, text, ctx or None, weight)


@pytest.mark.parametrize(("source", "want"), [
    ({"content": "red car"}, (None, None)),  # written before the fields: ranking stems the texts
    ({"content_stems": ["car", "red"], "context_stems": ["blue"]}, ({"car", "red"}, {"blue"})),
    ({"content_stems": [""], "context_stems": [""]}, (frozenset(), frozenset())),  # texts without a stem
    ({"content_stems": ["car"], "context_stems": None}, ({"car"}, None)),  # no thread context
    ({"content_stems": ["car"]}, ({"car"}, None)),  # nor a field for one
    ({"content_stems": ["car"], "thread_context": "she painted"}, (None, None)),  # a context without its stems
])
def test_a_whole_memory_gives_its_stored_stems_when_they_stand_for_its_texts(source, want):
    assert M.stored_stems(source) == want


@settings(max_examples=200, deadline=None)
@given(keywords=st.lists(words, min_size=1, max_size=5, unique=True), content=st.lists(words, max_size=8),
       context=st.none() | st.lists(words, max_size=6), weight=st.sampled_from([0.0, 0.3, 1.0]))
def test_a_whole_memory_scores_the_same_from_its_stored_stems_as_from_its_texts(keywords, content, context, weight):
    """A stored memory (the metadata arm's, the page's, an expanded one) ranks from the stems its write
    stored, as it ranked from its texts."""
    texts = {"content": " ".join(content), "thread_context": None if context is None else " ".join(context)}
    written = M.with_stems(texts)
    req = ScoringRequest(query=" ".join(keywords), keywords=tuple(keywords), now=NOW, thread_context_weight=weight)
    from_stems = retrieval.Hit("m", written, arms={"metadata"}).candidate("metadata")
    from_texts = retrieval.Hit("m", texts, arms={"metadata"}).candidate("metadata")
    assert from_stems.content_stems is not None and from_texts.content_stems is None
    assert score_candidate(from_stems, req).components["keyword"] == score_candidate(from_texts, req).components["keyword"]


def test_a_lean_hit_scores_as_its_stored_memory():
    metadata = {"source": "slack", "entities": {"people": ["Caroline"]}}
    stored = {"content": "Caroline went to the support group", "tags": ["Locomo:conv-26", "entity:people:caroline"],
              "importance": 0.7, "confidence": 0.9, "type": "Context", "timestamp": "2024-02-01T10:00:00+00:00",
              "metadata": metadata, "date_terms": ["d:2024-02-01"], "thread_context": "she painted"}
    written = M.with_stems(stored)
    doc_values = {"id": ["m"], "importance": [0.699999988079071], "confidence": [0.8999999761581421], "type": ["Context"],
                  "timestamp": ["2024-02-01T10:00:00.000Z"], "tags": sorted(stored["tags"]), "date_terms": ["d:2024-02-01"],
                  "metadata_terms": metadata_terms(metadata), "metadata_terms_plain": metadata_terms(metadata, include_entities=False),
                  }
    keywords = ("caroline", "support", "group", "slack", "painted")
    want = set(query_stems(keywords))  # what the engine names of the stored stems (lean.stem_match_filter)
    matched = [n for f in L.STEM_NAMES for n in [L.STEM_NAMES[f]] + [f"{L.STEM_NAMES[f]}:{s}" for s in written[f] if s in want]]
    full = retrieval.Hit("m", stored, cosine=0.6, arms={"vector"})
    lean = retrieval.Hit("m", L.lean_source(doc_values, matched), cosine=0.6, arms={"vector"})
    req = ScoringRequest(query="did caroline go to the slack support group she painted", keywords=keywords, now=NOW,
                         idf={"caroline": 2.0, "support": 1.0}, thread_context_weight=0.5, relevance_gate=0.3)
    a, b = score_candidate(full.candidate("vector"), req), score_candidate(lean.candidate("vector"), req)
    assert b.components == pytest.approx(a.components) and b.final_score == pytest.approx(a.final_score)
    assert a.components["tag"] > 0 and 0 < a.components["keyword"] < 1  # "slack" is a plain metadata term; "caroline" only an entity's


def test_the_backfill_stores_what_the_write_path_stores():
    """service/writes/backfill.py rebuilds a legacy memory's fields as a write today would."""
    from service.writes.backfill import with_recall_fields
    from service.writes.writer import derived_fields

    metadata = {"room": "boiler", "entities": {"people": ["Ann"]}}
    source = {"content": "The heating engineer came", "thread_context": None, "tags": ["house"], "metadata": metadata}
    written = M.with_stems({**source, **derived_fields(["house"], metadata)})
    rebuilt = with_recall_fields(source)
    assert {k: rebuilt.get(k) for k in ("content_stems", "context_stems", "metadata_terms_plain")} == \
        {k: written.get(k) for k in ("content_stems", "context_stems", "metadata_terms_plain")}
    assert with_recall_fields({"content": "x"})["metadata_terms_plain"] == [""]
