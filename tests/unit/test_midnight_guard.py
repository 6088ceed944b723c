"""The tests that read "today" or "yesterday" before their requests wait out a midnight that is less than a
minute away (tests/integration/support.clear_of_midnight), and only then."""

from __future__ import annotations

from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import pytest

from tests.integration import support

DENVER = ZoneInfo("America/Denver")


@pytest.mark.parametrize(
    ("now", "zone", "slept"),
    [
        (datetime(2026, 12, 7, 23, 59, 30, tzinfo=timezone.utc), timezone.utc, 31.0),
        (datetime(2026, 12, 7, 23, 58, 59, tzinfo=timezone.utc), timezone.utc, None),  # 61 s away
        (datetime(2026, 12, 7, 12, 0, tzinfo=timezone.utc), timezone.utc, None),
        (datetime(2026, 12, 8, 6, 59, 50, tzinfo=timezone.utc), DENVER, 11.0),  # midnight in Denver is 07:00Z in December
        (datetime(2026, 12, 7, 23, 59, 50, tzinfo=timezone.utc), DENVER, None),  # a UTC midnight is not Denver's
        (datetime(2026, 3, 8, 6, 59, 30, tzinfo=timezone.utc), DENVER, 31.0),  # the day DST starts, midnight still 07:00Z
    ],
)
def test_waits_only_when_midnight_is_near(monkeypatch, now, zone, slept):
    calls = []

    class Frozen(datetime):
        @classmethod
        def now(cls, tz=None):
            return now.astimezone(tz)

    monkeypatch.setattr(support, "datetime", Frozen)
    monkeypatch.setattr(support.time, "sleep", calls.append)
    support.clear_of_midnight(zone)
    assert calls == ([] if slept is None else [pytest.approx(slept)])
