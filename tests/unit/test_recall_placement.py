"""Placement (service/recall/placement.py) and retrieval parsing (service/recall/retrieval.py): pure stages, no engine."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from scoring.context import build_context_profile
from scoring.rerank import Candidate, ScoredCandidate
from service.recall import placement, retrieval


def sc(mid: str, score: float, *, tags=(), type_=None, when: datetime | None = None) -> ScoredCandidate:
    return ScoredCandidate(Candidate(id=mid, content=mid, tags=tuple(tags), type=type_, timestamp=when), score, {"vector": score})


def ids(items) -> list[str]:
    return [s.candidate.id for s in items]


def test_priority_first_is_a_stable_partition():
    items = [sc("a", 0.9), sc("b", 0.8), sc("c", 0.7), sc("d", 0.6)]
    assert ids(placement.priority_first(items, ["d", "b"])) == ["b", "d", "a", "c"]
    assert ids(placement.priority_first(items, [])) == ["a", "b", "c", "d"]


def test_anchors_are_injected_only_when_nothing_matches_the_profile():
    profile = build_context_profile(context_tags=["lang:python"], context_types=[], priority_ids=[], context=None, language=None, active_path=None, query="q")
    plain = [sc("a", 0.9), sc("b", 0.8), sc("anchor", 0.1, tags=("lang:python",))]
    out, injected = placement.place_anchors(plain, anchor_only={"anchor"}, anchors={"anchor"}, profile=profile, limit=2)
    assert (ids(out), injected) == (["anchor", "a", "b"], True)
    matching = [sc("a", 0.9, tags=("lang:python",)), sc("b", 0.8), sc("anchor", 0.1, tags=("lang:python",))]
    out, injected = placement.place_anchors(matching, anchor_only={"anchor"}, anchors={"anchor"}, profile=profile, limit=2)
    assert (ids(out), injected) == (["a", "b"], False)  # an anchor-only memory is dropped when not needed


def test_place_keeps_fills_after_scoped_results_and_floors_them():
    ranked = [sc("fill", 0.95), sc("a", 0.9), sc("b", 0.2), sc("weak-fill", 0.05)]
    out = placement.place(
        ranked, fallback_ids={"fill", "weak-fill"}, anchor_only=set(), anchors=set(), profile=None, priority_ids=["b"],
        limit=5, sort="score", has_query=True, min_score=0.1, adaptive_floor=False,
    )
    assert ids(out.ranked) == ["b", "a", "fill"]
    assert out.score_filter["min_score"] == 0.1 and out.injected is False


def test_sort_by_time_puts_undated_last():
    t = lambda d: datetime(2026, 1, d, tzinfo=timezone.utc)  # noqa: E731
    items = [sc("mid", 0.1, when=t(2)), sc("none", 0.9), sc("new", 0.5, when=t(3)), sc("old", 0.7, when=t(1))]
    assert ids(placement.sort_by_time(items, "time_desc")) == ["new", "mid", "old", "none"]
    assert ids(placement.sort_by_time(items, "time_asc")) == ["old", "mid", "new", "none"]


def test_parse_responses_merges_arms_and_reads_counts():
    arms = [("vector", {}), ("keyword", {}), ("fallback", {}), (retrieval.COUNT_ARM, {})]
    responses = [
        {"hits": {"hits": [{"_id": "a", "_score": 0.9, "_source": {"content": "A"}}]}},
        {"hits": {"hits": [{"_id": "a", "_score": 7.0, "_source": {}}, {"_id": "b", "_score": 3.0, "_source": {}, "fields": {"cosine": [0.25]}}]}},
        {"hits": {"hits": [{"_id": "c", "_score": 0.75, "_source": {}}]}},
        {"hits": {"total": {"value": 100}, "hits": []}, "aggregations": {"df": {"buckets": {"deploy": {"doc_count": 4}}}}},
    ]
    got = retrieval.parse_responses(arms, responses)
    a, b = got.hits["a"], got.hits["b"]
    assert (a.arms, a.cosine, a.bm25, a.source) == ({"vector", "keyword"}, pytest.approx(0.8), 7.0, {"content": "A"})
    assert (b.cosine, b.bm25, b.match_type("vector")) == (0.25, 3.0, "keyword")
    assert (got.pool_size, got.fallback_ids) == (1, {"c"})
    assert got.idf(["deploy"]) == {"deploy": pytest.approx(3.1110, abs=1e-4)}  # log(1 + (100 - 4 + 0.5) / (4 + 0.5))


@pytest.mark.parametrize(
    ("limit", "scoped", "expected"),
    [(5, False, 20), (5, True, 40), (100, False, 200), (100, True, 200), (300, False, 300)],
)
def test_fetch_k(limit, scoped, expected):
    assert retrieval.fetch_k(limit, scoped, overfetch=4, cap=200) == expected


@pytest.mark.parametrize(
    ("ranked", "suppressed_ids", "limit", "kept", "count"),
    [
        (["a", "b", "c"], set(), 2, ["a", "b", "c"], 0),
        (["a", "b", "c", "d"], {"a"}, 2, ["b", "c", "d"], 1),
        # all of the page was shown already: the next ones take its place
        (["a", "b", "c", "d"], {"a", "b"}, 2, ["c", "d"], 2),
        # a suppressed memory below the page would not have been shown: not counted
        (["a", "b", "c", "d"], {"d"}, 2, ["a", "b", "c"], 0),
        (["a", "b", "c", "d"], {"b", "d"}, 2, ["a", "c"], 1),
        # fewer candidates than the page: every suppressed one counts
        (["a", "b"], {"a", "b"}, 5, [], 2),
    ],
)
def test_suppress_drops_before_the_page_is_cut(ranked, suppressed_ids, limit, kept, count):
    items = [sc(mid, 1.0 - i / 10) for i, mid in enumerate(ranked)]
    out, n = placement.suppress(items, suppressed_ids, limit)
    assert (ids(out), n) == (kept, count)
    assert ids(items) == ranked  # the input is not changed


def test_suppressed_memories_are_fetched_apart_and_scored_alike():
    from service.filters import clauses as C
    from service.recall.request import RecallRequest

    options = retrieval.ArmOptions(overfetch=4, fetch_cap=200, metadata_search=True, idf=False)
    req = RecallRequest(bank="b", query="deploy", limit=5, suppress_ids=frozenset({"s2", "s1"}))
    spec = C.RecallFilter(bank="b")
    flt = C.filter_clauses(spec)
    arms = retrieval.plan_arms(req, spec, text="deploy", lexical="deploy", keywords=["deploy"], vector=[0.1, 0.2], limit=5, profile=None, options=options)
    assert [name for name, _ in arms] == ["vector", "keyword", "seen:vector", "seen:keyword", "metadata"]
    by = dict(arms)
    assert by["vector"]["query"]["knn"]["embedding"]["filter"] == {"bool": {"filter": [flt], "must_not": [{"ids": {"values": ["s1", "s2"]}}]}}
    assert by["seen:vector"]["query"]["knn"]["embedding"]["filter"] == {"bool": {"filter": [flt, {"ids": {"values": ["s1", "s2"]}}]}}
    assert by["seen:keyword"]["query"]["bool"]["filter"] == [{"bool": {"filter": [flt, {"ids": {"values": ["s1", "s2"]}}]}}]
    assert by["seen:vector"]["size"] == by["vector"]["size"] == 20 and by["metadata"]["query"]["bool"]["filter"] == [flt]
    plain = retrieval.plan_arms(RecallRequest(bank="b", query="deploy", limit=5), spec, text="deploy", lexical="deploy", keywords=["deploy"],
                                vector=[0.1, 0.2], limit=5, profile=None, options=options)
    assert [name for name, _ in plain] == ["vector", "keyword", "metadata"] and dict(plain)["vector"]["query"]["knn"]["embedding"]["filter"] == flt
    trending = retrieval.plan_arms(RecallRequest(bank="b", limit=5, suppress_ids=frozenset({"s1"})), spec, text=None, lexical=None, keywords=[],
                                   vector=None, limit=5, profile=None, options=options)
    assert [name for name, _ in trending] == ["trending", "seen:trending"]

    responses = [{"hits": {"hits": [{"_id": "a", "_score": 0.9, "_source": {}}]}}, {"hits": {"hits": []}},
                 {"hits": {"hits": [{"_id": "s1", "_score": 0.95, "_source": {}}]}}, {"hits": {"hits": [{"_id": "s1", "_score": 4.0, "_source": {}}]}},
                 {"hits": {"hits": []}}]
    got = retrieval.parse_responses(arms, responses)
    assert (got.hits["s1"].arms, got.hits["s1"].cosine, got.hits["s1"].bm25) == ({"vector", "keyword"}, pytest.approx(0.9), 4.0)
    assert got.pool_size == 1  # the main vector arm's pool only


def test_final_floor_is_inclusive_and_optional():
    items = [sc("a", 0.9), sc("b", 0.5), sc("c", 0.49)]
    assert ids(placement.final_floor(items, 0.5)) == ["a", "b"]
    assert ids(placement.final_floor(items, None)) == ["a", "b", "c"]


def test_prefer_observations_drops_summarised_memories_and_backfills():
    items = [sc("obs", 0.9, type_="MetaPattern"), sc("m1", 0.8), sc("x", 0.7), sc("m2", 0.6), sc("y", 0.5), sc("z", 0.4)]
    out = placement.prefer_observations(items, {"obs": ["m1", "m2"]}, limit=3)
    assert ids(out) == ["obs", "x", "y", "z"]  # m1 and m2 went, y moved up to fill the page
    # an observation below the page does not drop anything
    assert ids(placement.prefer_observations(items, {"z": ["m1"]}, limit=3)) == ids(items)


def test_prefer_observations_repeats_until_the_page_is_stable():
    # dropping m1 lifts obs2 onto the page, which drops m3
    items = [sc("obs1", 0.9), sc("m1", 0.8), sc("obs2", 0.7), sc("m3", 0.6), sc("w", 0.5)]
    out = placement.prefer_observations(items, {"obs1": ["m1"], "obs2": ["m3"]}, limit=2)
    assert ids(out) == ["obs1", "obs2", "w"]


def test_window_boost_adds_the_temporal_weight_and_resorts():
    items = [sc("a", 0.50), sc("dated", 0.45), sc("b", 0.30)]
    out = placement.window_boost(items, {"dated"}, 0.1)
    assert ids(out) == ["dated", "a", "b"]
    assert out[0].final_score == pytest.approx(0.55) and out[0].components["temporal_window"] == 0.1
    assert "temporal_window" not in out[1].components and out[1].final_score == 0.50
    assert placement.window_boost(items, set(), 0.1) == items
    assert items[1].final_score == 0.45  # nothing mutated


def test_temporal_arm_hits_keep_their_cosine_and_match_type():
    arms = [("temporal", {})]
    responses = [{"hits": {"hits": [{"_id": "t", "_score": 1.4, "_source": {"content": "c"}, "fields": {"cosine": [0.4]}}]}}]
    got = retrieval.parse_responses(arms, responses).hits["t"]
    assert (got.cosine, got.bm25, got.arms) == (0.4, None, {"temporal"})
    c = got.candidate("vector")
    assert (c.match_type, c.in_vector_arm, c.vector_cosine) == ("temporal", False, 0.4)
