"""Exact date phrases in a recall query (service/clock/phrases.py): a table of query -> window + content query."""

from __future__ import annotations

from datetime import date, datetime, timezone

import pytest

from service.clock.periods import day_window, zone
from service.clock.phrases import content_without, extract_date_phrase

NOW = datetime(2026, 5, 20, 12, 0, tzinfo=timezone.utc)  # a Wednesday; 06:00 in Denver
DENVER = zone("America/Denver")  # UTC-6 in May: spec 004's example window is 06:00Z to 06:00Z
UTC = zone("UTC")


def z(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.mark.parametrize(
    ("query", "tz", "start", "end", "content", "phrase"),
    [
        # spec 004's worked example, word for word
        ("2026/05/13 editor", DENVER, "2026-05-13T06:00:00Z", "2026-05-14T06:00:00Z", "editor", "2026/05/13"),
        ("2026-05-13", DENVER, "2026-05-13T06:00:00Z", "2026-05-14T06:00:00Z", "", "2026-05-13"),
        ("May 13 2026", DENVER, "2026-05-13T06:00:00Z", "2026-05-14T06:00:00Z", "", "May 13 2026"),
        ("yesterday editor", DENVER, "2026-05-19T06:00:00Z", "2026-05-20T06:00:00Z", "editor", "yesterday"),
        # the same days in UTC
        ("2026/05/13 editor", UTC, "2026-05-13T00:00:00Z", "2026-05-14T00:00:00Z", "editor", "2026/05/13"),
        ("yesterday editor", UTC, "2026-05-19T00:00:00Z", "2026-05-20T00:00:00Z", "editor", "yesterday"),
        ("today", UTC, "2026-05-20T00:00:00Z", "2026-05-21T00:00:00Z", "", "today"),
        # spellings
        ("editor, May 13, 2026 choices", UTC, "2026-05-13T00:00:00Z", "2026-05-14T00:00:00Z", "editor choices", "May 13, 2026"),
        ("13 May 2026 deploy", UTC, "2026-05-13T00:00:00Z", "2026-05-14T00:00:00Z", "deploy", "13 May 2026"),
        ("13th of May 2026 x", UTC, "2026-05-13T00:00:00Z", "2026-05-14T00:00:00Z", "x", "13th of May 2026"),
        ("SEPT 3rd, 2025 plan", UTC, "2025-09-03T00:00:00Z", "2025-09-04T00:00:00Z", "plan", "SEPT 3rd, 2025"),
        ("may 13 2026", UTC, "2026-05-13T00:00:00Z", "2026-05-14T00:00:00Z", "", "may 13 2026"),
        ("release 2026/5/3", UTC, "2026-05-03T00:00:00Z", "2026-05-04T00:00:00Z", "release", "2026/5/3"),
        ("what shipped on 2026-05-13?", UTC, "2026-05-13T00:00:00Z", "2026-05-14T00:00:00Z", "what shipped?", "2026-05-13"),
        ("notes from yesterday", UTC, "2026-05-19T00:00:00Z", "2026-05-20T00:00:00Z", "notes", "yesterday"),
        ("yesterday's standup", UTC, "2026-05-19T00:00:00Z", "2026-05-20T00:00:00Z", "standup", "yesterday's"),
        ("the day before yesterday deploy", UTC, "2026-05-18T00:00:00Z", "2026-05-19T00:00:00Z", "deploy", "the day before yesterday"),
        # the first phrase wins; the second stays in the query
        ("2026-05-13 vs 2026-05-14", UTC, "2026-05-13T00:00:00Z", "2026-05-14T00:00:00Z", "vs 2026-05-14", "2026-05-13"),
        ("yesterday and May 1 2026", UTC, "2026-05-19T00:00:00Z", "2026-05-20T00:00:00Z", "and May 1 2026", "yesterday"),
        # an impossible date is skipped for the next one
        ("2026-02-30 or 2026-02-28", UTC, "2026-02-28T00:00:00Z", "2026-03-01T00:00:00Z", "2026-02-30 or", "2026-02-28"),
    ],
)
def test_date_phrase_table(query, tz, start, end, content, phrase):
    got = extract_date_phrase(query, NOW, tz)
    assert got is not None
    assert (got.start, got.end, got.content_query, got.phrase) == (z(start), z(end), content, phrase)


@pytest.mark.parametrize(
    "query",
    [
        "editor settings", "", None, "2026-02-30", "2026-13-01", "2026-05-13T10:00:00Z timestamps are not phrases",
        "v2026-05-13", "2026-05-13x", "2026.05.13", "May 13", "May 2026", "todays", "yesterdays", "0999-01-01", "9999-12-31",
        "12/05/2026", "build 20260513",
    ],
)
def test_no_date_phrase(query):
    assert extract_date_phrase(query, NOW, UTC) is None


def test_windows_follow_daylight_saving():
    # 2026-03-08: Denver springs forward, the day has 23 hours; 2026-11-01 falls back, 25 hours.
    start, end = day_window(date(2026, 3, 8), DENVER)
    assert (start, end) == (z("2026-03-08T07:00:00Z"), z("2026-03-09T06:00:00Z"))
    start, end = day_window(date(2026, 11, 1), DENVER)
    assert (end - start).total_seconds() == 25 * 3600


def test_yesterday_is_the_zones_yesterday():
    late = datetime(2026, 5, 20, 3, 0, tzinfo=timezone.utc)  # still May 19 in Denver
    assert extract_date_phrase("yesterday", late, DENVER).day == date(2026, 5, 18)
    assert extract_date_phrase("yesterday", late, UTC).day == date(2026, 5, 19)


def test_content_without_drops_one_preposition_and_edge_punctuation():
    assert content_without("deploys on 2026-05-13, ok", 11, 21) == "deploys ok"
    assert content_without("on 2026-05-13", 3, 13) == ""


def test_long_queries_are_scanned_up_to_a_bound():
    tail = " word" * 1000
    got = extract_date_phrase("2026-05-13" + tail, NOW, UTC)
    assert got is not None and got.content_query == tail.strip()
    assert extract_date_phrase("x" * 3000 + " 2026-05-13", NOW, UTC) is None  # past MAX_SCANNED


@pytest.mark.parametrize("name", ["Mars/Olympus", "", "not a zone"])
def test_unknown_zones_are_refused(name):
    with pytest.raises(ValueError, match="time zone"):
        zone(name)


def test_settings_refuse_an_unknown_zone():
    from pydantic import ValidationError

    from service.config import Settings

    with pytest.raises(ValidationError, match="unknown time zone"):
        Settings(recall_date_timezone="Mars/Olympus")
    assert Settings(recall_date_timezone=" America/Denver ").recall_date_timezone == "America/Denver"
