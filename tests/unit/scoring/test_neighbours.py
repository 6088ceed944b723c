"""The thread-neighbour bonus (scoring/neighbours.py): a table of pools, links and expected scores."""

from __future__ import annotations

import pytest

from scoring.neighbours import neighbour_bonus
from scoring.rerank import Candidate, ScoredCandidate


def scored(mid: str, final: float) -> ScoredCandidate:
    return ScoredCandidate(candidate=Candidate(id=mid, content=mid), final_score=final, components={"vector": final})


def finals(out: list[ScoredCandidate]) -> dict[str, float]:
    return {s.candidate.id: round(s.final_score, 6) for s in out}


@pytest.mark.parametrize(
    "pool, prev, weight, expected",
    [
        # q matches; its reply a (after it) gains 0.2 x 0.9, and q gains 0.2 x a's 0.1.
        ({"q": 0.9, "a": 0.1, "x": 0.15}, {"a": "q"}, 0.2, {"q": 0.92, "a": 0.28, "x": 0.15}),
        # Several memories after one: the best of them counts.
        ({"q": 0.2, "a": 0.5, "b": 0.7}, {"a": "q", "b": "q"}, 0.5, {"q": 0.55, "a": 0.6, "b": 0.8}),
        # Before and after: the better neighbour counts, from the scores before any bonus.
        ({"p": 0.4, "m": 0.1, "n": 0.8}, {"m": "p", "n": "m"}, 0.1, {"p": 0.41, "m": 0.18, "n": 0.81}),
        # A neighbour outside the pool gives nothing; weight 0 is off.
        ({"a": 0.3}, {"a": "gone"}, 0.2, {"a": 0.3}),
        ({"q": 0.9, "a": 0.1}, {"a": "q"}, 0.0, {"q": 0.9, "a": 0.1}),
        # A self-link (bad data) is ignored.
        ({"a": 0.5}, {"a": "a"}, 0.2, {"a": 0.5}),
    ],
)
def test_bonus(pool, prev, weight, expected):
    out = neighbour_bonus([scored(m, f) for m, f in pool.items()], prev, weight)
    assert finals(out) == expected


def test_the_list_is_resorted_and_the_bonus_reported():
    pool = [scored("x", 0.3), scored("q", 0.9), scored("a", 0.2)]
    out = neighbour_bonus(pool, {"a": "q", "x": None}, 0.2)
    assert [s.candidate.id for s in out] == ["q", "a", "x"]
    by = {s.candidate.id: s for s in out}
    assert by["a"].components["neighbour"] == pytest.approx(0.18)
    assert "neighbour" not in by["x"].components
    assert by["a"].components["vector"] == 0.2  # the other components are kept


@pytest.mark.parametrize(
    "before, after, expected",
    [
        # Only the memory before counts: a (the reply) gains from q, q gains nothing from a.
        (True, False, {"q": 0.9, "a": 0.28, "x": 0.15}),
        # Only the memories after count: q gains from a, a gains nothing.
        (False, True, {"q": 0.92, "a": 0.1, "x": 0.15}),
        (False, False, {"q": 0.9, "a": 0.1, "x": 0.15}),
    ],
)
def test_each_direction_alone(before, after, expected):
    pool = [scored("q", 0.9), scored("a", 0.1), scored("x", 0.15)]
    assert finals(neighbour_bonus(pool, {"a": "q"}, 0.2, before=before, after=after)) == expected


def test_a_neighbour_scored_at_or_below_zero_gives_nothing():
    pool = [scored("q", -0.5), scored("a", 0.1), scored("b", 0.0)]
    out = {s.candidate.id: s for s in neighbour_bonus(pool, {"a": "q", "b": "a"}, 0.2)}
    assert finals(list(out.values())) == {"q": -0.48, "a": 0.1, "b": 0.02}
    assert "neighbour" not in out["a"].components  # q is below zero and b is zero: no bonus
