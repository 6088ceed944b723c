"""service/clock/: the one detector of dates in text, the one "yesterday" in an explicit zone, the one
instant type, and date terms unchanged by the rewrite (issue 22, part 3). time_query's UTC table is in
test_timeparse.py, Signet's phrase table in test_date_phrases.py, the terms' in test_dateterms.py."""

from __future__ import annotations

import hashlib
import json
import random
from datetime import date, datetime, timedelta, timezone

import pytest
from pydantic import BaseModel, ValidationError

from service.clock.expressions import parse_time_expression
from service.clock.instants import MAX_UTC, MIN_UTC, Instant, InstantOrBlank
from service.clock.mentions import CALENDAR, Span, mentions
from service.clock.periods import day_window, local_day, zone
from service.clock.phrases import extract_date_phrase, query_window
from service.clock.terms import memory_date_terms, query_date_terms, spans, window_terms

pytestmark = pytest.mark.unit

UTC = timezone.utc
DENVER = zone("America/Denver")
MONDAY = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
LATE = datetime(2026, 5, 20, 3, 0, tzinfo=UTC)  # a Wednesday in UTC; 21:00 on Tuesday May 19 in Denver


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


# --- the detector ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("on 2023/05/13 and 2023-5-3", [("numeric", "2023/05/13", "2023-05-13", "2023-05-13"), ("numeric", "2023-5-3", "2023-05-03", "2023-05-03")]),
        ("what did the team review on May 13 2023?", [("month_day_year", "May 13 2023", "2023-05-13", "2023-05-13")]),
        ("May 7, 2023 was not also May 2023", [("month_day_year", "May 7, 2023", "2023-05-07", "2023-05-07"), ("month_year", "May 2023", "2023-05-01", "2023-05-31")]),
        ("may 13 2023, and I may go", [("month_day_year", "may 13 2023", "2023-05-13", "2023-05-13")]),  # lower-case "may" only in a full date
        ("day before yesterday, yesterday's notes", [("relative", "day before yesterday", "2023-05-06", "2023-05-06"), ("relative", "yesterday's", "2023-05-07", "2023-05-07")]),
        ("last Friday and three weeks ago", [("weekday", "last Friday", "2023-05-05", "2023-05-05"), ("ago", "three weeks ago", "2023-04-17", "2023-04-23")]),
        ("2026-05-13T10:00:00Z is a timestamp, not a date", []),
        ("the last day of school", []),  # time_query's "last day" is no date inside a text
    ],
)
def test_calendar_mentions(text, expected):
    got = [(m.kind, m.phrase, m.days.first.isoformat(), m.days.last.isoformat()) for m in mentions(text, MONDAY, UTC)]
    assert got == expected


@pytest.mark.parametrize(
    ("text", "kind", "phrase", "window"),
    [
        ("deploys in the last 3 days", "rolling", "last 3 days", (MONDAY - timedelta(days=3), MONDAY)),
        ("deploys in the past 24 hours", "rolling", "past 24 hours", (MONDAY - timedelta(hours=24), MONDAY)),
        ("plans before 2023-02-01, then", "range", "before 2023-02-01", (None, utc(2023, 2, 1))),
        ("between 2023-01-01 and 2023-01-31?", "range", "between 2023-01-01 and 2023-01-31", (utc(2023, 1, 1), utc(2023, 2, 1))),
        ("after 2023-01-15T10:00:00Z", "range", "after 2023-01-15T10:00:00Z", (utc(2023, 1, 15, 10), None)),
        ("what broke in the last hour", "hour", "last hour", (utc(2023, 5, 8, 12), utc(2023, 5, 8, 13))),
    ],
)
def test_windows_that_are_not_whole_days(text, kind, phrase, window):
    (m,) = mentions(text, MONDAY, UTC)
    assert (m.kind, m.phrase, m.days, m.window) == (kind, phrase, None, window)
    # they have no date terms: a memory's content and a query's date component read calendar mentions only
    assert all(m.kind != kind for m in mentions(text, MONDAY, UTC, CALENDAR))


def test_a_window_in_a_range_is_still_its_day_for_the_calendar_readers():
    assert [m.kind for m in mentions("plans before 2023-02-01", MONDAY, UTC, CALENDAR)] == ["numeric"]
    assert extract_date_phrase("plans before 2023-02-01", MONDAY, UTC).day == date(2023, 2, 1)  # Signet's reading, as before
    assert query_window("plans before 2023-02-01", MONDAY, UTC).end == utc(2023, 2, 1)  # Hindsight's: an open window


# --- one "yesterday", in the zone each reader is given -----------------------------------------------------
@pytest.mark.parametrize("tz", [UTC, DENVER, zone("Asia/Tokyo")])
@pytest.mark.parametrize(("word", "back"), [("today", 0), ("yesterday", 1), ("the day before yesterday", 2)])
def test_every_reader_reads_a_day_the_same_way(tz, word, back):
    d = local_day(LATE, tz) - timedelta(days=back)
    window = day_window(d, tz)
    phrase = extract_date_phrase(f"{word} editor", LATE, tz)  # Signet, GET /recall parse_dates
    arm = query_window(f"what did the editor do {word}", LATE, tz)  # Hindsight
    assert (phrase.start, phrase.end) == (arm.start, arm.end) == window
    assert spans(word, LATE, tz) == [Span(d, d)]  # the date component
    if word != "the day before yesterday":  # time_query knows today and yesterday
        expr = parse_time_expression(word, LATE, tz)
        assert (expr.start, expr.end) == window


def test_the_zone_decides_which_day_yesterday_is():
    assert local_day(LATE, UTC) - timedelta(days=1) == date(2026, 5, 19)
    assert local_day(LATE, DENVER) - timedelta(days=1) == date(2026, 5, 18)
    assert parse_time_expression("yesterday", LATE, DENVER).start == utc(2026, 5, 18, 6)  # MDT is UTC-6
    # a memory is read in UTC against its own timestamp, whatever the requests' zone
    assert memory_date_terms("yesterday", LATE)[:2] == ["d:2026-05-19", "d:2026-05-20"]


@pytest.mark.parametrize(
    ("now", "expr", "tz", "start", "end"),
    [
        # Denver springs forward on Sunday 2026-03-08: last week has 167 hours
        (utc(2026, 3, 10, 12), "this week", DENVER, utc(2026, 3, 9, 6), utc(2026, 3, 16, 6)),
        (utc(2026, 3, 10, 12), "last week", DENVER, utc(2026, 3, 2, 7), utc(2026, 3, 9, 6)),
        (LATE, "this month", DENVER, utc(2026, 5, 1, 6), utc(2026, 6, 1, 6)),
        (utc(2026, 1, 1, 3), "this year", DENVER, utc(2025, 1, 1, 7), utc(2026, 1, 1, 7)),  # still 2025 in Denver
        (utc(2026, 5, 20, 3, 10), "this hour", zone("Asia/Kolkata"), utc(2026, 5, 20, 2, 30), utc(2026, 5, 20, 3, 30)),  # UTC+05:30
        (LATE, "between 2026-05-01 and 2026-05-02", DENVER, utc(2026, 5, 1, 6), utc(2026, 5, 3, 6)),  # date-only bounds: zone days
        (LATE, "last 24 hours", DENVER, LATE - timedelta(hours=24), LATE),  # rolling: no zone
        (utc(9999, 6, 1), "this year", zone("Asia/Tokyo"), utc(9998, 12, 31, 15), MAX_UTC),  # clamped, no OverflowError
    ],
)
def test_time_query_in_a_zone(now, expr, tz, start, end):
    window = parse_time_expression(expr, now, tz)
    assert (window.start, window.end) == (start, end)


def test_calendar_edges_in_a_zone_clamp():
    window = parse_time_expression("last week", utc(1, 1, 2, 12), DENVER)
    assert window.start == MIN_UTC and window.end < utc(1, 1, 2)
    assert extract_date_phrase("9999-12-31", LATE, zone("Asia/Tokyo")) is None  # a phrase's day must fit in every zone


# --- the instant type ------------------------------------------------------------------------------------
class Body(BaseModel):
    at: Instant
    maybe: Instant | None = None
    blank: InstantOrBlank = None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2025-01-15T10:30:00+05:30", utc(2025, 1, 15, 5)),
        ("2025-01-15T10:30:00Z", utc(2025, 1, 15, 10, 30)),
        ("2025-01-15T10:30:00", utc(2025, 1, 15, 10, 30)),  # no offset: UTC
        ("2025-01-15", utc(2025, 1, 15)),  # a date alone: 00:00 UTC
        (" 2025-01-15t10:30z ", utc(2025, 1, 15, 10, 30)),
        (datetime(2025, 1, 15, 10, 30), utc(2025, 1, 15, 10, 30)),  # built by the service itself
    ],
)
def test_instant_accepts(value, expected):
    got = Body(at=value).at
    assert got == expected and got.tzinfo is UTC


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("soon", "'soon' is not a valid ISO 8601 date or datetime"),
        ("", "empty timestamp"),
        (1700000000, "expected an ISO 8601 string, got int"),  # a unix time is not ISO 8601
        (True, "expected an ISO 8601 string, got bool"),
        (["2025-01-15"], "expected an ISO 8601 string, got list"),
        ("2025-01-15T10:30:00.123456+05:30" + " " * 40, "longer than an ISO 8601 instant"),
        ("0001-01-01T00:00:00+01:00", "out of range once converted to UTC"),
    ],
)
def test_instant_refuses_naming_the_field(value, reason):
    with pytest.raises(ValidationError) as info:
        Body(at="2025-01-15", maybe=value)
    (err,) = info.value.errors()
    assert (err["loc"], err["type"]) == (("maybe",), "iso_instant") and reason in err["msg"]


def test_instant_or_blank_and_the_schema():
    assert (Body(at="2025-01-15", blank="").blank, Body(at="2025-01-15", blank="  ").blank, Body(at="2025-01-15").maybe) == (None, None, None)
    assert Body(at="2025-01-15", blank="2025-01-16").blank == utc(2025, 1, 16)
    schema = Body.model_json_schema()["properties"]
    assert (schema["at"]["type"], schema["at"]["format"]) == ("string", "date-time")
    assert Body(at="2025-01-15").model_dump(mode="json") == {"at": "2025-01-15T00:00:00+00:00", "maybe": None, "blank": None}  # as stored
    assert Body(at="2025-01-15").model_dump()["at"] == utc(2025, 1, 15)


# --- date terms: the same as before the rewrite ----------------------------------------------------------
PHRASES = ["yesterday", "today", "tonight", "last night", "this morning", "the day before yesterday", "last week", "this week",
           "next week", "past week", "last month", "next month", "this year", "last year", "past year", "in June", "during May",
           "since March", "by 2021", "in 2022", "of 1999", "May 7, 2023", "7 May 2023", "3rd of June", "the 13th of October 2022",
           "June 2023", "Sept 3rd, 2025", "Dec. 25", "jan 5", "Jan 5", "Mar 3 2024", "on 13 October", "2023-05-01", "two days ago",
           "a few weeks ago", "3 months ago", "10 years ago", "one day ago", "a couple of days ago", "an hour ago", "last Friday",
           "last Monday", "last weekend", "next weekend", "this weekend", "Feb 30, 2023", "I may go", "they march on",
           "in the last 7 days", "last 24 hours", "before 2023-01-01", "between 2023-01-01 and 2023-02-01", "last hour"]
FILLER = ["we", "went", "to", "the", "park", "and", "saw", "Mel", ",", "Caroline:", "it", "was", "great", "!"]
# sha256 of the rows below as service/clock/terms.py gave them before the one-clock rewrite (commit 2f4d0e4);
# the same rows over the 1,576 memories and 304 questions of the LoCoMo dev slice were identical too.
TERMS_BEFORE = "ae650e1fa9aef193a5d88e2931a0bcde258873016fe23be523fe21cf6c794234"


def test_date_terms_are_what_they_were():
    """memory_date_terms, query_date_terms and window_terms on 2,000 texts mixing every phrase the old
    vocabulary read (and windows of every length) give exactly the old terms: recall's date component and
    Signet's occurred facet are unchanged. (New forms, 2026/05/13 and 2026-5-3, now have terms too.)"""
    rng = random.Random(22)
    rows = []
    for _ in range(2000):
        text = " ".join(rng.choice(PHRASES + FILLER) for _ in range(rng.randint(1, 14)))
        at = utc(2020, 1, 1) + timedelta(minutes=rng.randint(0, 6 * 365 * 24 * 60))
        rows.append([memory_date_terms(text, at), query_date_terms(text, at)])
    rng = random.Random(23)
    for _ in range(300):
        start = utc(2023, 1, 1) + timedelta(minutes=rng.randint(0, 10**6))
        rows.append(window_terms(start, start + timedelta(hours=rng.choice([1, 6, 11, 12, 13, 23, 24, 25, 48, 168, 744, 9600]))))
    assert hashlib.sha256(json.dumps(rows).encode()).hexdigest() == TERMS_BEFORE
