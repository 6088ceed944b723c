"""Access tracking's relatime rule (service/storage/access.py)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from service.storage.access import RecentAccesses, access_is_stale

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("stored", "resolution", "stale"),
    [
        (None, 3600, True),  # never accessed
        ("not a date", 3600, True),
        ((NOW - timedelta(minutes=59)).isoformat(), 3600, False),
        ((NOW - timedelta(minutes=61)).isoformat(), 3600, True),
        ("2026-12-01T11:30:00Z", 3600, False),  # Z suffix
        ("2026-12-01T06:30:00-05:00", 3600, False),  # 11:30 UTC
        ((NOW - timedelta(seconds=1)).isoformat(), 0, True),  # resolution 0: always rewrite
    ],
)
def test_access_is_stale(stored, resolution, stale):
    assert access_is_stale(stored, NOW, resolution) is stale


OLD = (NOW - timedelta(hours=2)).isoformat()


def test_an_access_recorded_here_is_not_due_until_the_resolution_has_passed():
    recent = RecentAccesses(3600)
    seen = {"a": OLD, "b": OLD, "c": None}
    assert recent.stale(seen, NOW) == seen
    recent.record(["a", "c"], NOW)
    assert recent.stale(seen, NOW + timedelta(minutes=59)) == {"b": OLD}  # the engine still shows OLD for "a"
    assert recent.stale(seen, NOW + timedelta(minutes=60)) == seen
    # A stored access younger than the resolution still decides on its own.
    assert recent.stale({"d": (NOW - timedelta(minutes=1)).isoformat()}, NOW) == {}


def test_resolution_zero_records_nothing_and_rewrites_every_time():
    recent = RecentAccesses(0)
    recent.record(["a"], NOW)
    assert recent.stale({"a": NOW.isoformat()}, NOW) == {"a": NOW.isoformat()}


def test_the_oldest_recorded_accesses_are_forgotten_first():
    recent = RecentAccesses(3600, size=2)
    recent.record(["a", "b"], NOW)
    recent.record(["a"], NOW)  # a is the most recent again
    recent.record(["c"], NOW)  # b is forgotten
    assert recent.stale({"a": OLD, "b": OLD, "c": OLD}, NOW) == {"b": OLD}
