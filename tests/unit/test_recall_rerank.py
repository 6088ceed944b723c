"""service/recall/rerank.py `blend`: the cross-encoder's scores folded into the top of the ranking."""

from __future__ import annotations

import pytest

from scoring.rerank import Candidate, ScoredCandidate
from service.recall.rerank import blend


def scored(mid: str, final: float) -> ScoredCandidate:
    return ScoredCandidate(Candidate(id=mid, content=mid), final, {"vector": final})


@pytest.mark.parametrize(
    ("finals", "scores", "weight", "order", "new_finals"),
    [
        # The model's favourite rises within the reranked head; the tail keeps its place.
        ([0.9, 0.8, 0.7, 0.1], [0.1, 0.2, 0.9], 1.0, ["c", "a", "b", "d"], [1.0, 1.0, 1.6, 0.1]),  # a and b tie: id order
        ([0.9, 0.8, 0.7], [0.1, 0.2, 0.9], 0.1, ["a", "b", "c"], [0.91, 0.82, 0.79]),
        ([0.9, 0.8, 0.7], [0.1, 0.2, 0.9], 0.5, ["c", "a", "b"], [0.95, 0.9, 1.15]),
        ([0.9, 0.8], [0.5, 0.5], 0.0, ["a", "b"], [0.9, 0.8]),
        ([0.9, 0.8], [], 1.0, ["a", "b"], [0.9, 0.8]),
    ],
)
def test_blend(finals, scores, weight, order, new_finals):
    ranked = [scored(mid, f) for mid, f in zip("abcd", finals)]
    out = blend(ranked, scores, weight)
    assert [s.candidate.id for s in out] == order
    assert {s.candidate.id: s.final_score for s in out} == pytest.approx(dict(zip("abcd", new_finals)))
    for s in out:
        head = "abcd".index(s.candidate.id) < len(scores)
        assert ("rerank" in s.components) == head and s.components["vector"] == finals["abcd".index(s.candidate.id)]
    assert [s.final_score for s in ranked] == finals  # inputs untouched
