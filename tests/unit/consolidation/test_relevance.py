"""The decay formula and the forgetting rules, with pinned numbers (AutoMem calculate_relevance_score)."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone

import pytest

from service.consolidation.relevance import (
    DecayConfig, ForgetConfig, MemoryFacts, bucket, fate, protection, relevance_factors, relevance_score,
)

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)
CFG = DecayConfig()


def days_ago(n: float) -> datetime:
    return NOW - timedelta(days=n)


def test_worked_example_every_factor():
    # 30 days old, read 10 days ago, importance 0.8, confidence 0.9, 3 relationships.
    m = MemoryFacts("a", timestamp=days_ago(30), last_accessed=days_ago(10), importance=0.8, confidence=0.9, relationships=3)
    f = relevance_factors(m, NOW, CFG)
    assert f == pytest.approx({
        "age": 0.740818, "access": 0.481959, "relationships": 1.415888, "importance": 1.3, "confidence": 0.97, "floor": 0.24,
    }, abs=1e-6)
    assert relevance_score(m, NOW, CFG) == pytest.approx(0.637479, abs=1e-6)


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        # Old and never read: the importance floor (0.8 * 0.3) holds it up.
        (MemoryFacts("b", timestamp=days_ago(400), importance=0.8, confidence=0.9), 0.24),
        # Fresh, maximal and well connected: capped at 1.0.
        (MemoryFacts("c", timestamp=NOW - timedelta(hours=2), importance=1.0, confidence=1.0, relationships=20), 1.0),
        # 200 days, unimportant: 0.1353 * 0.3000 * 0.7 * 0.85 = 0.0242, floored at 0.2 * 0.3.
        (MemoryFacts("d", timestamp=days_ago(200), importance=0.2, confidence=0.5), 0.06),
        # Nothing known: age 0, access fresh, importance and confidence 0.5 -> 0.6 * 1.0 * 0.85.
        (MemoryFacts("e"), 0.51),
        # Read within the last day: the full access factor, whatever the age.
        (MemoryFacts("f", timestamp=days_ago(69.3147), last_accessed=NOW - timedelta(hours=3), importance=0.5, confidence=0.5), 0.255),
        # Non-numeric values count as 0.5.
        (MemoryFacts("g", importance=float("nan"), confidence=None), 0.51),
    ],
)
def test_pinned_scores(facts, expected):
    assert relevance_score(facts, NOW, CFG) == pytest.approx(expected, abs=1e-4)


def test_last_access_falls_back_to_creation_time():
    created = MemoryFacts("a", timestamp=days_ago(10), importance=0.5, confidence=0.5)
    read = dataclasses.replace(created, last_accessed=days_ago(10))
    assert relevance_score(created, NOW, CFG) == relevance_score(read, NOW, CFG)
    assert relevance_factors(created, NOW, CFG)["access"] == pytest.approx(0.3 + 0.3 * 0.606531, abs=1e-6)


def test_each_input_moves_the_score_the_right_way():
    base = MemoryFacts("a", timestamp=days_ago(60), last_accessed=days_ago(20), importance=0.5, confidence=0.5, relationships=1)
    s = relevance_score(base, NOW, CFG)
    assert relevance_score(dataclasses.replace(base, timestamp=days_ago(120)), NOW, CFG) < s
    assert relevance_score(dataclasses.replace(base, last_accessed=days_ago(2)), NOW, CFG) > s
    assert relevance_score(dataclasses.replace(base, importance=0.9), NOW, CFG) > s
    assert relevance_score(dataclasses.replace(base, relationships=10), NOW, CFG) > s
    assert relevance_score(base, NOW, DecayConfig(base_decay_rate=0.05)) < s


def test_buckets_are_automems():
    assert [bucket(x) for x in (0.71, 0.7, 0.31, 0.3, 0.11, 0.1, 0.0)] == ["high", "medium", "medium", "low", "low", "archive", "archive"]


FORGET = ForgetConfig(archive_threshold=0.2, delete_threshold=0.05, grace_period_days=90)


@pytest.mark.parametrize(
    ("facts", "reason"),
    [
        (MemoryFacts("a", importance=0.7, timestamp=days_ago(400)), "high importance (0.70 >= 0.7)"),
        (MemoryFacts("a", importance=0.1, timestamp=days_ago(10)), "within grace period (10 < 90 days)"),
        (MemoryFacts("a", importance=0.1, timestamp=days_ago(400), type="Decision"), "protected type: Decision"),
        (MemoryFacts("a", importance=0.1, timestamp=days_ago(400), protected=True), "explicitly protected"),
        (MemoryFacts("a", importance=0.1, timestamp=days_ago(400), protected=True, protected_reason="legal hold"), "legal hold"),
        (MemoryFacts("a", importance=0.1, timestamp=days_ago(400), type="Context"), None),
    ],
)
def test_protection(facts, reason):
    assert protection(facts, NOW, FORGET) == reason


def test_fate_thresholds_and_stay_below():
    old = MemoryFacts("a", importance=0.1, timestamp=days_ago(400), type="Context")
    assert fate(old, 0.5, NOW, FORGET) == (None, None)
    assert fate(old, 0.1, NOW, FORGET) == ("archive", None)
    assert fate(old, 0.01, NOW, FORGET) == ("delete", None)
    # The stored relevance must be below the threshold too: "stays below".
    assert fate(dataclasses.replace(old, stored_relevance=0.6), 0.1, NOW, FORGET) == (None, None)
    assert fate(dataclasses.replace(old, stored_relevance=0.15), 0.1, NOW, FORGET) == ("archive", None)
    # High importance is never archived nor deleted.
    important = dataclasses.replace(old, importance=0.9)
    assert fate(important, 0.01, NOW, FORGET) == ("delete", "high importance (0.90 >= 0.7)")


def test_zero_thresholds_disable_forgetting():
    old = MemoryFacts("a", importance=0.0, timestamp=days_ago(4000))
    assert fate(old, 0.0, NOW, ForgetConfig()) == (None, None)
