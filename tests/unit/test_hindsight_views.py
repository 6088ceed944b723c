"""The mapping between AutoMem's stored memory and Hindsight's views (service/api/hindsight/views.py),
and the response blocks (service/api/hindsight/response.py). Pure."""

from __future__ import annotations

import pytest

from service.api.hindsight import response as H
from service.api.hindsight import views


class WordCounter:
    """A stand-in tokenizer: one token per whitespace-separated word."""

    def count(self, text: str) -> int:
        return len(text.split())

    def count_many(self, texts):
        return [self.count(t) for t in texts]

    def truncate(self, text: str, max_tokens: int):
        words = text.split()
        return (" ".join(words[:max_tokens]), len(words) > max_tokens) if max_tokens > 0 else ("", bool(text))


AUTOMEM = {
    "content": "Chose PostgreSQL over MongoDB", "tags": ["project-alpha", "entity:tools:postgresql"], "type": "Decision",
    "timestamp": "2024-03-01T10:00:00+00:00", "updated_at": "2024-03-02T10:00:00+00:00",
    "metadata": {"source": "slack", "priority": 3, "nested": {"a": [1, 2]}, "entities": {"tools": ["PostgreSQL", "MongoDB"]}},
    "enrichment": {"derived_tags": ["entity:tools:postgresql"]},
}


def test_an_automem_memory_as_hindsight_sees_it():
    r = views.recall_result("m1", AUTOMEM, {"final": 0.5})
    assert r == {
        "id": "m1", "text": "Chose PostgreSQL over MongoDB", "type": "world",  # no fact_type: world
        "entities": ["PostgreSQL", "MongoDB"],  # metadata.entities first; the derived tag names one already there
        "context": None, "occurred_start": "2024-03-01T10:00:00+00:00", "occurred_end": "2024-03-01T10:00:00+00:00",
        "mentioned_at": "2024-03-01T10:00:00+00:00", "document_id": None,
        "metadata": {"source": "slack", "priority": "3", "nested": '{"a":[1,2]}'},  # strings as given, other JSON encoded
        "chunk_id": None, "tags": ["project-alpha"],  # the tag enrichment derived is not a scope
        "source_fact_ids": None, "scores": {"final": 0.5},
    }


def test_observations_and_retained_fields():
    meta = {"content": "Meta-pattern: ...", "type": "MetaPattern", "metadata": {"consolidation": {"member_ids": ["a", "b"]}, "k": "v"}}
    r = views.recall_result("obs", meta)
    assert (r["type"], r["source_fact_ids"], r["metadata"]) == ("observation", ["a", "b"], {"k": "v"})
    retained = {"content": "x", "fact_type": "experience", "document_id": "d", "chunk_id": "d:2", "context": "c", "timeless": True,
                "timestamp": "2024-01-01T00:00:00+00:00", "tags": ["entity:people:bob"]}  # a caller's own entity tag stays a tag
    r = views.recall_result("m", retained)
    assert (r["type"], r["document_id"], r["chunk_id"], r["context"], r["mentioned_at"], r["occurred_start"]) == ("experience", "d", "d:2", "c", None, None)
    assert (r["tags"], r["entities"]) == (["entity:people:bob"], ["bob"])


def test_list_item():
    item = views.list_item("m1", {**AUTOMEM, "archived": True})
    assert (item["text"], item["context"], item["date"], item["fact_type"], item["entities"], item["state"]) == (
        "Chose PostgreSQL over MongoDB", "", "2024-03-01T10:00:00+00:00", "world", "PostgreSQL, MongoDB", "invalidated")
    assert views.list_item("m2", {"content": "x"})["state"] == "valid"


@pytest.mark.parametrize(("counts", "budget", "expected"), [([3, 3, 3], 6, 2), ([3, 3, 3], 9, 3), ([5, 1], 4, 0), ([], 10, 0), ([0, 0], 0, 2)])
def test_fit_tokens_stops_at_the_first_that_does_not_fit(counts, budget, expected):
    assert H.fit_tokens(counts, budget) == expected


def pipeline_result(mid: str, text: str, score: float, **retrieval) -> dict:
    return {"id": mid, "final_score": score, "memory": {"content": text, "tags": [], "chunk_id": f"c{mid}", "chunk_index": 1},
            "retrieval": {"arms": ["vector"], "semantic": None, "keyword": None, **retrieval}}


def test_shaped_results_cut_and_scores():
    body = {"results": [pipeline_result("a", "one two three", 0.9, semantic=0.8), pipeline_result("b", "four five", 0.7, keyword=3.2),
                        pipeline_result("c", "six", 0.1)]}
    results, used, candidates = H.shaped_results(body, WordCounter(), 5)
    assert [r["id"] for r in results] == ["a", "b"] and (used, candidates) == (5, 3)
    assert results[0]["scores"] == {"final": 0.9, "reranker": None, "semantic": 0.8, "keyword": None}
    assert [r["_tokens"] for r in results] == [3, 2] and "_tokens" not in H.public(results)[0]
    assert results[1]["scores"] == {"final": 0.7, "reranker": None, "semantic": None, "keyword": 3.2}


def test_include_blocks_respect_their_caps():
    counter = WordCounter()
    results = [{"id": "a", "text": "Alice met Bob", "entities": ["Alice", "Bob"], "mentioned_at": "t1", "chunk_id": "d:0", "source_fact_ids": None},
               {"id": "b", "text": "Bob left early today", "entities": ["Bob"], "mentioned_at": "t2", "chunk_id": "d:1", "source_fact_ids": None}]
    ents = H.entities_block(results, counter, 6)
    assert list(ents) == ["Alice", "Bob"] and [o["text"] for o in ents["Bob"]["observations"]] == ["Alice met Bob"]
    chunks = H.chunks_block(results, counter, 5, {"a": 0, "b": 1}.get)
    assert chunks == {"d:0": {"id": "d:0", "text": "Alice met Bob", "chunk_index": 0, "truncated": False},
                      "d:1": {"id": "d:1", "text": "Bob left", "chunk_index": 1, "truncated": True}}
    obs = [{"id": "o", "source_fact_ids": ["f1", "f2", "f3"]}]
    facts = {"f1": {"content": "one two"}, "f2": {"content": "three four five"}, "f3": {"content": "six"}}
    got, cut = H.source_facts_block(obs, facts, counter, 3, -1)
    assert (sorted(got), cut) == (["f1", "f3"], True)
    got, cut = H.source_facts_block(obs, facts, counter, -1, -1)
    assert (sorted(got), cut) == (["f1", "f2", "f3"], False)
    got, cut = H.source_facts_block(obs, facts, counter, -1, 2)
    assert (sorted(got), cut) == (["f1"], True)


def test_rerank_options_are_reported_unused():
    from service.api.hindsight.models import HindsightRecallBody

    assert H.warnings_of(HindsightRecallBody(query="q")) == []
    assert H.warnings_of(HindsightRecallBody(query="q", rerank={"prune": True})) == ["rerank options have no effect: no decision model is configured for recall"]
