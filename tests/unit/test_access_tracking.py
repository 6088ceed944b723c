"""Access tracking's relatime rule (service.storage.memories.access_is_stale)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from service.storage.memories import access_is_stale

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
