"""How the ONNX embedder cuts texts into micro-batches (no model needed)."""

from __future__ import annotations

import pytest

from service.embedding import OnnxBackend


def cutter(micro_batch: int = 16, token_budget: int = 256) -> OnnxBackend:
    backend = object.__new__(OnnxBackend)  # only the batching policy, no session
    backend.micro_batch, backend.token_budget = micro_batch, token_budget
    return backend


def test_short_texts_go_sixteen_at_a_time_sorted_by_length():
    lengths = [12, 10, 11] * 12  # 36 texts of 10-12 tokens: 16 x 12 = 192 tokens fit the budget
    batches = cutter()._micro_batches(lengths)
    assert [len(b) for b in batches] == [16, 16, 4]
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(36))
    assert [lengths[i] for i in flat] == sorted(lengths)


def test_long_texts_are_cut_by_the_token_budget():
    lengths = [20, 200, 30, 120, 60, 250, 25]
    batches = cutter()._micro_batches(lengths)
    # sorted: 20, 25, 30, 60 (4 x 60 = 240 tokens) | 120 (5 x 120 > 256) | 200 (2 x 200 > 256) | 250
    assert [[lengths[i] for i in b] for b in batches] == [[20, 25, 30, 60], [120], [200], [250]]
    assert all(len(b) * max(lengths[i] for i in b) <= 256 for b in batches)


@pytest.mark.parametrize("lengths", [[], [300], [400, 400]])
def test_a_text_longer_than_the_budget_still_runs_alone(lengths):
    batches = cutter()._micro_batches(lengths)
    assert [len(b) for b in batches] == [1] * len(lengths)
