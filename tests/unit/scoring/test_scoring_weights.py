"""scoring.weights: spec 001 defaults and the recency fallbacks."""

from dataclasses import FrozenInstanceError, astuple

import pytest

from scoring.weights import RecencyConfig, Weights

pytestmark = pytest.mark.unit


def test_weights_default_to_spec_001():
    assert Weights() == Weights(
        vector=0.35,
        keyword=0.35,
        metadata=0.35,
        exact=0.20,
        importance=0.10,
        confidence=0.05,
        recency=0.10,
        tag=0.20,
        relation=0.25,
        relevance=0.0,
        temporal=0.1,
    )


def test_the_ten_weights_sum_to_1_95():
    ten = astuple(Weights())[:-1]  # all but SEARCH_WEIGHT_TEMPORAL
    assert len(ten) == 10
    assert sum(ten) == pytest.approx(1.95)


def test_weights_are_frozen():
    with pytest.raises(FrozenInstanceError):
        Weights().vector = 1.0  # type: ignore[misc]


@pytest.mark.parametrize(
    ("window", "curve", "expected"),
    [
        (180.0, "linear", (180.0, "linear")),
        (90, "exp", (90.0, "exp")),
        (0, "exp", (180.0, "exp")),
        (-30, "linear", (180.0, "linear")),
        (float("nan"), "linear", (180.0, "linear")),
        (float("inf"), "linear", (180.0, "linear")),
        ("not-a-number", "linear", (180.0, "linear")),
        (30, " EXP ", (30.0, "exp")),
        (30, "cubic", (30.0, "linear")),
        (30, "", (30.0, "linear")),
    ],
)
def test_recency_config_falls_back_like_automem(window, curve, expected):
    cfg = RecencyConfig(window_days=window, curve=curve)
    assert (cfg.window_days, cfg.curve) == expected


def test_recency_config_defaults():
    assert RecencyConfig() == RecencyConfig(window_days=180.0, curve="linear")
