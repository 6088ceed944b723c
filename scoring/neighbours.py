"""Thread neighbours: a memory next to a strongly matching memory of its thread gains some of its score.

The turns of a conversation (or the steps of a task log) are locally coherent: the answer to a
question is often in the reply after the turn that matches the question's words, or in the turn
before it. Thread context (service/threads/) already lets a memory match its predecessor's words;
this carries the ranking itself across the link, both ways:

    final += weight x max(final of the memory before it, finals of the memories after it)

over the candidates the arms returned (neighbours outside the pool give nothing), from the scores
before any bonus, so it does not compound along a thread. Reported as the `neighbour` component.
Measured on the LoCoMo dev slice (docs/quality.md): weight 0 / 0.1 / 0.2 / 0.3 gave recall@5
0.661 / 0.695 / 0.703 / 0.704.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from scoring.rerank import ScoredCandidate, sort_scored


def neighbour_bonus(
    ranked: Sequence[ScoredCandidate], prev: Mapping[str, str | None], weight: float, *, before: bool = True, after: bool = True,
) -> list[ScoredCandidate]:
    """`prev` maps a candidate's id to the id of the memory before it in its thread (None: none).
    `before` / `after`: whether the memory before it and those after it count (bench.tune_locomo
    compares them; recall counts both). Returns the candidates re-sorted; one without a scored
    neighbour is unchanged."""
    if weight <= 0 or not ranked:
        return list(ranked)
    score = {s.candidate.id: s.final_score for s in ranked}
    # The best score among each memory's neighbours in the pool (before any bonus).
    best: dict[str, float] = {}
    for mid, earlier in prev.items():
        if not earlier or earlier == mid or mid not in score or earlier not in score:
            continue
        if after and score[mid] > best.get(earlier, 0.0):
            best[earlier] = score[mid]
        if before and score[earlier] > best.get(mid, 0.0):
            best[mid] = score[earlier]
    out = []
    for s in ranked:
        near = best.get(s.candidate.id)
        if near is not None:
            bonus = weight * near
            s = ScoredCandidate(s.candidate, s.final_score + bonus, {**s.components, "neighbour": bonus})
        out.append(s)
    return sort_scored(out)
