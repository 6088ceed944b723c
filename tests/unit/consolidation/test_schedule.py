"""The scheduler's pure parts: AutoMem's next-run wording and which tasks are due."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from service.consolidation.scheduler import due_tasks, next_run_text

NOW = datetime(2026, 6, 1, 12, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("interval", "last", "expected"),
    [
        (0, NOW, "Disabled"),
        (86_400, None, "Due now"),
        (86_400, NOW - timedelta(days=2), "Due now"),
        (86_400, NOW - timedelta(hours=1), "In 23 hour(s)"),
        (86_400, NOW - timedelta(minutes=1), "In 23 hour(s)"),
        (3600, NOW - timedelta(minutes=30), "In 0 hour(s)"),
        (604_800, NOW - timedelta(hours=1), "In 6 day(s)"),
        (2_592_000, NOW, "In 30 day(s)"),
    ],
)
def test_next_run_text(interval, last, expected):
    assert next_run_text(interval, last, NOW) == expected


def test_due_tasks_in_order():
    intervals = {"decay": 3600, "creative": 7200, "cluster": 0, "forget": 60}
    last = {"decay": NOW - timedelta(hours=2), "creative": NOW - timedelta(hours=1), "cluster": None, "forget": None}
    assert due_tasks(intervals, last, NOW) == ["decay", "forget"]
    assert due_tasks(intervals, {**last, "decay": NOW - timedelta(seconds=3600)}, NOW) == ["decay", "forget"]
    assert due_tasks({t: 0 for t in intervals}, last, NOW) == []
