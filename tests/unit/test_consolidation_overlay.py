"""The overlay a consolidation run's later steps read its earlier steps' plans through (pure)."""

from __future__ import annotations

import pytest

from service.consolidation.overlay import Overlay


@pytest.mark.parametrize("pages, docs, removed, expected", [
    ([[("a", {}), ("c", {})], [("e", {})]], {}, set(), ["a", "c", "e"]),
    ([[("a", {}), ("c", {})], [("e", {})]], {"b": {"new": 1}, "z": {"new": 1}}, set(), ["a", "b", "c", "e", "z"]),
    ([[("a", {}), ("c", {})]], {"c": {"new": 1}}, set(), ["a", "c"]),  # rewritten in place, not twice
    ([[("a", {}), ("m", {})], [("q", {})]], {}, {"m", "q"}, ["a"]),  # a page left empty is not yielded
    ([], {"b": {"new": 1}}, set(), ["b"]),
])
def test_pages_merge_written_and_drop_removed_in_id_order(pages, docs, removed, expected):
    out = list(Overlay(docs=docs, removed=removed).pages(pages))
    assert [mid for page in out for mid, _ in page] == expected
    assert all(page for page in out)
    assert all(source == docs[mid] for page in out for mid, source in page if mid in docs)


def test_relationship_delta_counts_both_ends():
    o = Overlay(new_edges=[("a", "b"), ("a", "c")], removed_edges=[("m", "b")])
    assert dict(o.relationship_delta()) == {"a": 2, "b": 0, "c": 1, "m": -1}


def test_stored_relevance_is_decays_new_score():
    o = Overlay(relevance={"a": 0.2})
    assert o.stored_relevance("a", {"relevance_score": 0.9, "x": 1}) == {"relevance_score": 0.2, "x": 1}
    assert o.stored_relevance("b", {"relevance_score": 0.9}) == {"relevance_score": 0.9}
