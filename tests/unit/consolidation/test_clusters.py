"""Connected components, centroids and the extractive MetaPattern summary."""

from __future__ import annotations

import pytest

from service.consolidation import clusters as C


def test_components_are_connected_groups_of_min_size_largest_first():
    ids = ["a", "b", "c", "d", "e", "f", "g"]
    pairs = [("a", "b"), ("b", "c"), ("e", "d"), ("f", "e"), ("d", "f"), ("g", "x-not-a-candidate")]
    assert C.components(ids, pairs, 3) == [["a", "b", "c"], ["d", "e", "f"]]
    assert C.components(ids, pairs, 1) == [["a", "b", "c"], ["d", "e", "f"], ["g"]]
    assert C.components(ids, [], 2) == []
    # Order of pairs does not matter.
    assert C.components(ids, list(reversed(pairs)), 3) == [["a", "b", "c"], ["d", "e", "f"]]
    # A chain links its ends (AutoMem's connected components).
    assert C.components(["p", "q", "r", "s"], [("p", "q"), ("q", "r"), ("r", "s")], 3) == [["p", "q", "r", "s"]]


def test_cosine_centroid_and_central_member():
    assert C.cosine([1, 0], [0, 1]) == 0.0
    assert C.cosine([1, 1], [2, 2]) == pytest.approx(1.0)
    assert C.cosine([0, 0], [1, 0]) == 0.0
    center = C.centroid([[1, 0, 0], [0, 1, 0], [1, 1, 0]])
    assert center == pytest.approx((0.707107, 0.707107, 0.0), abs=1e-6)
    members = [
        C.Member("x", "", None, (), None, None, (1.0, 0.0, 0.0)),
        C.Member("y", "", None, (), None, None, (0.0, 1.0, 0.0)),
        C.Member("z", "", None, (), None, None, (1.0, 1.0, 0.0)),
    ]
    assert C.central_member(members, center).id == "z"


def test_dominant_type_ties_go_alphabetical():
    assert C.dominant_type(["Decision", "Insight", "Insight", None]) == "Insight"
    assert C.dominant_type(["Pattern", "Decision"]) == "Decision"
    assert C.dominant_type([None, None]) == "Context"


def test_shared_keywords_and_tags():
    texts = [
        "We chose PostgreSQL for the billing database.",
        "The billing database runs PostgreSQL 15.",
        "PostgreSQL hosts billing; it was a good choice.",
        "Unrelated note about lunch.",
    ]
    assert C.shared_keywords(texts) == ["billing", "postgresql", "database"]
    assert C.shared_keywords(texts[:1]) == []  # a theme needs two members at least
    assert C.shared_tags([["Project-A", "db"], ["db", "project-a", "x"], ["project-a", "DB"]]) == ["Project-A", "db"]
    assert C.shared_tags([]) == []


def test_excerpt_keeps_whole_sentences():
    text = "First sentence here. Second one follows!  Third is long " + "word " * 80
    assert C.excerpt(text) == "First sentence here. Second one follows!"
    assert C.excerpt("one " * 100, limit=20) == "one one one one one..."
    assert C.excerpt("Short.") == "Short."


def test_meta_id_is_deterministic_and_order_free():
    assert C.meta_id(["b", "a", "c"]) == C.meta_id(["c", "b", "a"])
    assert C.meta_id(["a", "b"]) != C.meta_id(["a", "b", "c"])
    assert C.meta_id(["a"]).startswith("metapattern-") and len(C.meta_id(["a"])) == len("metapattern-") + 24


def test_summarize():
    members = [
        C.Member("m1", "We chose PostgreSQL for billing. It scales.", "Decision", ("db", "billing"), 0.6, 20000.0, (1.0, 0.1)),
        C.Member("m2", "Billing runs on PostgreSQL now.", "Decision", ("db",), 0.9, 20010.5, (1.0, 0.0)),
        C.Member("m3", "PostgreSQL is the billing store.", "Context", ("DB", "x"), None, None, (0.9, 0.2)),
    ]
    s = C.summarize(members)
    assert s.member_ids == ("m1", "m2", "m3")
    assert s.dominant_type == "Decision" and s.time_span_days == 10 and s.importance == 0.9
    assert s.keywords == ("billing", "postgresql") and s.shared_tags == ("db",)
    assert s.central_id == "m1"
    assert s.content == (
        "Meta-pattern: Decision cluster with 3 memories over 10 days. Shared keywords: billing, postgresql. "
        "Representative: We chose PostgreSQL for billing. It scales."
    )
    assert sum(v * v for v in s.centroid) == pytest.approx(1.0)
    assert s.meta_id == C.meta_id(["m3", "m2", "m1"])


def test_local_clusters_walk_only_the_components_touched():
    graph = {
        "a": [("b", 0.9), ("x", 0.6)], "b": [("a", 0.9), ("c", 0.8)], "c": [("b", 0.8)],
        "x": [("a", 0.6)], "y": [("z", 0.95)], "z": [("y", 0.95)], "far": [("q", 0.99)],
    }
    calls: list[list[str]] = []

    def fetch(ids):
        calls.append(sorted(ids))
        return {i: graph.get(i, []) for i in ids}

    out = C.local_clusters(["a", "x", "c", "y"], fetch, 0.75)
    assert out["a"] == out["b"] == out["c"] and out["x"] != out["a"] and out["y"] == out["z"] != out["a"]
    assert "far" not in out  # never touched
    fetched = [i for call in calls for i in call]
    assert sorted(fetched) == ["a", "b", "c", "x", "y", "z"] and len(fetched) == len(set(fetched))  # each id once


def test_local_clusters_unknown_when_too_big_or_over_budget():
    chain = {f"n{i}": [(f"n{i + 1}", 0.9)] for i in range(100)}

    def fetch(ids):
        return {i: chain.get(i, []) for i in ids}

    out = C.local_clusters(["n0", "lonely"], fetch, 0.75, cap=10)
    assert out["n0"] is None and out["lonely"] == "lonely"
    assert C.local_clusters(["n0"], fetch, 0.75, cap=1000, budget=5)["n0"] is None
    assert C.local_clusters(["n90"], fetch, 0.75)["n90"] == C.local_clusters(["n90"], fetch, 0.75)["n100"]
