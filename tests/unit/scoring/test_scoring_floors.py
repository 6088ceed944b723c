"""scoring.floors: adaptive floor, min_score, recency re-rank, temporal intent, fingerprint."""

from datetime import datetime, timedelta, timezone

import pytest

from scoring.floors import (
    TEMPORAL_INTENT,
    adaptive_cut,
    adaptive_floor_score,
    apply_score_filter,
    content_fingerprint,
    has_temporal_intent,
    recency_bias,
)
from scoring.rerank import Candidate, ScoredCandidate

pytestmark = pytest.mark.unit

NOW = datetime(2025, 3, 10, 10, 30, tzinfo=timezone.utc)


def scored(scores, timestamps=None):
    timestamps = timestamps or [None] * len(scores)
    return [
        ScoredCandidate(
            candidate=Candidate(id=f"m{i}", content=f"memory {i}", timestamp=ts),
            final_score=score,
            components={"vector": score},
        )
        for i, (score, ts) in enumerate(zip(scores, timestamps))
    ]


# AutoMem's own tests (tests/test_app.py, "adaptive_floor")
CLUSTERED_TAIL = [0.76, 0.75, 0.73, 0.55, 0.54, 0.53, 0.52, 0.51]
LARGE_DROP = [1.0, 0.99, 0.98, 0.4, 0.39, 0.38, 0.37, 0.36]
DROP_TOO_DEEP = [1.0, 0.99, 0.3, 0.29, 0.28, 0.27, 0.26]


@pytest.mark.parametrize(
    ("scores", "kept", "floor"),
    [
        (CLUSTERED_TAIL, 8, None),
        (LARGE_DROP, 4, 0.4),
        (DROP_TOO_DEEP, 7, None),
        ([1.0, 0.1, 0.05], 3, None),  # three results or fewer: never cut
        ([], 0, None),
        ([1.0, 0.9, 0.3, 0.3, 0.3, 0.2], 5, 0.3),  # ties at the floor survive
        (list(reversed(LARGE_DROP)), 4, 0.4),  # input order does not matter
        ([0.0, 0.0, 0.0, 0.0], 4, None),
    ],
)
def test_adaptive_cut(scores, kept, floor):
    assert adaptive_cut(scores) == kept
    assert adaptive_floor_score(scores) == floor


def test_adaptive_gap_is_searched_only_in_the_top_half():
    # n = 8: the window is the top 4 scores, so the drop after the 5th is never considered
    assert adaptive_cut([1.0, 0.98, 0.96, 0.94, 0.92, 0.1, 0.09, 0.08]) == 8


def test_apply_score_filter_adaptive_only():
    kept, report = apply_score_filter(scored(LARGE_DROP), None, True)
    assert [s.candidate.id for s in kept] == ["m0", "m1", "m2", "m3"]
    assert report == {"min_score": None, "adaptive_floor": 0.4, "filtered_count": 4}


def test_apply_score_filter_min_score_only():
    kept, report = apply_score_filter(scored(CLUSTERED_TAIL), 0.54, True)
    assert [s.candidate.id for s in kept] == ["m0", "m1", "m2", "m3", "m4"]
    assert report == {"min_score": 0.54, "adaptive_floor": None, "filtered_count": 3}


def test_apply_score_filter_both():
    kept, report = apply_score_filter(scored(LARGE_DROP), 0.985, True)
    assert [s.candidate.id for s in kept] == ["m0", "m1"]
    assert report == {"min_score": 0.985, "adaptive_floor": 0.4, "filtered_count": 6}


@pytest.mark.parametrize(("min_score", "adaptive"), [(None, False), (0.0, False), (0.0, True)])
def test_apply_score_filter_without_any_filter(min_score, adaptive):
    items = scored(CLUSTERED_TAIL)
    kept, report = apply_score_filter(items, min_score, adaptive)
    assert kept == items
    assert report is None


def test_apply_score_filter_adaptive_disabled_keeps_the_drop():
    kept, report = apply_score_filter(scored(LARGE_DROP), None, False)
    assert len(kept) == 8
    assert report is None


def test_recency_bias_promotes_newer_results():
    items = scored(
        [0.6, 0.58, 0.52],
        [NOW - timedelta(days=10), NOW - timedelta(days=5), NOW],
    )
    biased = recency_bias(items, 0.1)
    assert [s.candidate.id for s in biased] == ["m1", "m2", "m0"]
    assert [s.final_score for s in biased] == [
        pytest.approx(0.63), pytest.approx(0.62), pytest.approx(0.6),
    ]
    assert [s.components["temporal"] for s in biased] == [
        pytest.approx(0.5), pytest.approx(1.0), pytest.approx(0.0),
    ]
    assert biased[0].components["vector"] == 0.58
    # the inputs are untouched
    assert [s.final_score for s in items] == [0.6, 0.58, 0.52]
    assert all("temporal" not in s.components for s in items)


def test_recency_bias_skips_results_without_timestamp():
    items = scored([0.9, 0.5, 0.45], [None, NOW - timedelta(days=1), NOW.replace(tzinfo=None)])
    biased = recency_bias(items, 0.1)
    assert [s.candidate.id for s in biased] == ["m0", "m2", "m1"]
    assert biased[0] is items[0]
    assert "temporal" not in biased[0].components
    assert [s.final_score for s in biased] == [0.9, pytest.approx(0.55), pytest.approx(0.5)]


@pytest.mark.parametrize(
    ("timestamps", "weight"),
    [
        ([NOW, NOW, NOW], 0.1),  # no spread
        ([NOW, None, None], 0.1),  # a single timestamp
        ([None, None, None], 0.1),
        ([NOW - timedelta(days=3), NOW, NOW], 0.0),  # weight 0
    ],
)
def test_recency_bias_is_a_no_op(timestamps, weight):
    items = scored([0.9, 0.1, 0.05], timestamps)
    biased = recency_bias(items, weight)
    assert biased == items
    assert all(b is s for b, s in zip(biased, items))


def test_temporal_intent_words():
    assert TEMPORAL_INTENT == (
        "latest", "most recent", "recently", "current", "currently", "now", "nowadays",
        "today", "changed", "updated", "last time", "newest", "these days", "anymore",
    )


@pytest.mark.parametrize(
    "query",
    [
        # AutoMem tests/test_app.py positives
        "What is my current favorite editor?",
        "what's the latest deployment status",
        "Most Recent decision on auth",
        "which framework do I prefer now",
        "what changed today",
        "what was updated in the schema",
        "what happened last time we deployed",
        "the newest API version",
        "Currently using which database?",
        # and the rest of the list
        "do I still use vim these   days",
        "I don't use vim anymore",
        "what did I work on recently",
        "NOW.",
    ],
)
def test_has_temporal_intent_positive(query):
    assert has_temporal_intent(query) is True


@pytest.mark.parametrize(
    "query",
    [
        # AutoMem tests/test_app.py negatives
        "favorite editor preferences",
        "nowhere plans for the trip",
        "currency exchange rates",
        "the lasting impact of the refactor",
        "",
        None,
        # word boundaries
        "snow in the mountains",
        "knowledge base",
        "unchanged settings",
        "most of the recent-ish notes",
    ],
)
def test_has_temporal_intent_negative(query):
    assert has_temporal_intent(query) is False


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("# Hello, **World**!  Café\n\n-- done", "hello world caf done"),
        ("Use `snake_case` > camelCase", "use snake case camelcase"),
        ("!!!", ""),
        ("", ""),
        (None, ""),
    ],
)
def test_content_fingerprint(content, expected):
    assert content_fingerprint(content) == expected


def test_content_fingerprint_keeps_320_characters():
    assert content_fingerprint("a" * 400) == "a" * 320
    assert content_fingerprint("Same  content.") == content_fingerprint("same content")
