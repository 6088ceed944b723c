"""service/clock/instants.py and expressions.py: ISO instants and time_query, every expression pinned to
exact UTC bounds (calendar days in UTC, AutoMem's reading; other zones in test_clock_zones.py).

Reference instants (weekday in brackets; weeks start on Monday, as in AutoMem's time.py):
  NOW      2026-03-15T12:00:00Z [Sun]  mid-month, last day of an ISO week
  JAN      2026-01-01T00:30:00Z [Thu]  "last ..." rolls back into the previous year
  DEC      2025-12-31T23:30:00Z [Wed]  "next ..." rolls forward into the next year
  FEB29    2024-02-29T12:00:00Z [Thu]  leap day
  MAR1_L   2024-03-01T08:00:00Z [Fri]  day after a leap day
  MAR1     2023-03-01T00:00:00Z [Wed]  non-leap year, now exactly at midnight
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from service.api.automem.recall_models import RecallQuery
from service.clock.expressions import TimeWindow, parse_time_expression, resolve_time_window
from service.clock.instants import MAX_UTC, MIN_UTC, parse_iso_datetime, stored_datetime

pytestmark = pytest.mark.unit  # every test in this module

UTC = timezone.utc


def utc(y: int, mo: int, d: int, h: int = 0, mi: int = 0, s: int = 0, us: int = 0) -> datetime:
    return datetime(y, mo, d, h, mi, s, us, tzinfo=UTC)


NOW = utc(2026, 3, 15, 12)
JAN = utc(2026, 1, 1, 0, 30)
DEC = utc(2025, 12, 31, 23, 30)
FEB29 = utc(2024, 2, 29, 12)
MAR1_L = utc(2024, 3, 1, 8)
MAR1 = utc(2023, 3, 1)


def test_reference_weekdays_are_what_the_tables_assume() -> None:
    # Guards the hand-computed week tables below.
    assert [d.strftime("%a") for d in (NOW, JAN, DEC, FEB29, MAR1_L, MAR1)] == [
        "Sun", "Thu", "Wed", "Thu", "Fri", "Wed",
    ]


# --------------------------------------------------------------------------------------------
# parse_iso_datetime
# --------------------------------------------------------------------------------------------

ISO_OK = [
    ("2025-01-15", utc(2025, 1, 15)),
    ("2025-01-15T10:30:00Z", utc(2025, 1, 15, 10, 30)),
    ("2025-01-15T10:30:00+00:00", utc(2025, 1, 15, 10, 30)),
    ("2025-01-15T10:30:00-00:00", utc(2025, 1, 15, 10, 30)),
    ("2025-01-15T10:30:00+05:30", utc(2025, 1, 15, 5, 0)),
    ("2025-01-15T10:30:00+0530", utc(2025, 1, 15, 5, 0)),
    ("2025-01-15T22:00:00-05:00", utc(2025, 1, 16, 3, 0)),  # offset crosses midnight
    ("2025-01-15T10:30:00", utc(2025, 1, 15, 10, 30)),  # naive -> UTC
    ("2025-01-15 10:30:00", utc(2025, 1, 15, 10, 30)),  # space separator
    ("2025-01-15T10:30", utc(2025, 1, 15, 10, 30)),  # no seconds
    ("2025-01-15T10:30:00.5Z", utc(2025, 1, 15, 10, 30, 0, 500000)),
    ("2025-01-15T10:30:00.123Z", utc(2025, 1, 15, 10, 30, 0, 123000)),
    ("2025-01-15T10:30:00.123456Z", utc(2025, 1, 15, 10, 30, 0, 123456)),
    ("2025-01-15T10:30:00.123456789Z", utc(2025, 1, 15, 10, 30, 0, 123456)),  # ns truncated
    ("2025-01-15t10:30:00z", utc(2025, 1, 15, 10, 30)),  # RFC 3339 lower case
    ("  2025-01-15T10:30:00Z\n", utc(2025, 1, 15, 10, 30)),  # surrounding whitespace
    ("20250115T103000Z", utc(2025, 1, 15, 10, 30)),  # ISO 8601 basic format
    ("2024-02-29", utc(2024, 2, 29)),  # leap day
    ("2025-12-31T23:59:59.999999Z", utc(2025, 12, 31, 23, 59, 59, 999999)),
]


@pytest.mark.parametrize(("text", "expected"), ISO_OK)
def test_parse_iso_datetime_accepts(text: str, expected: datetime) -> None:
    parsed = parse_iso_datetime(text)
    assert parsed == expected
    assert parsed.tzinfo is UTC  # always aware, always UTC


ISO_BAD = [
    ("", "empty"),
    ("   ", "empty"),
    ("yesterday", "not a valid ISO 8601"),
    ("2025-13-01", "not a valid ISO 8601"),
    ("2025-02-29", "not a valid ISO 8601"),  # 2025 is not a leap year
    ("2025-01-15T25:00:00Z", "not a valid ISO 8601"),
    ("2025-01-15T10:00:00+25:00", "not a valid ISO 8601"),
    ("2025-01", "not a valid ISO 8601"),
    ("1736899200", "not a valid ISO 8601"),  # unix epoch is not ISO 8601
    ("15/01/2025", "not a valid ISO 8601"),
    ("0001-01-01T00:00:00+01:00", "out of range"),
    ("9999-12-31T23:00:00-05:00", "out of range"),
]


@pytest.mark.parametrize(("text", "message"), ISO_BAD)
def test_parse_iso_datetime_rejects(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_iso_datetime(text)


@pytest.mark.parametrize("value", [None, 1736899200, 1.5, b"2025-01-15"])
def test_parse_iso_datetime_rejects_non_strings(value: object) -> None:
    with pytest.raises(ValueError, match="expected an ISO 8601 string"):
        parse_iso_datetime(value)  # type: ignore[arg-type]


def test_parse_iso_datetime_error_echo_is_truncated() -> None:
    with pytest.raises(ValueError) as info:
        parse_iso_datetime("x" * 10_000)
    assert len(str(info.value)) < 200


# --------------------------------------------------------------------------------------------
# TimeWindow
# --------------------------------------------------------------------------------------------


def test_time_window_to_response() -> None:
    window = TimeWindow(utc(2026, 3, 9), utc(2026, 3, 16, 0, 0, 0, 1500), "this week")
    assert window.to_response() == {
        "start": "2026-03-09T00:00:00+00:00",
        "end": "2026-03-16T00:00:00.001500+00:00",
        "expression": "this week",
    }


def test_time_window_open_bounds_to_response() -> None:
    assert TimeWindow(None, utc(2025, 2, 1), None).to_response() == {
        "start": None,
        "end": "2025-02-01T00:00:00+00:00",
        "expression": None,
    }


def test_time_window_normalises_to_utc() -> None:
    plus5 = timezone(timedelta(hours=5))
    window = TimeWindow(datetime(2026, 3, 15, 5, tzinfo=plus5), datetime(2026, 3, 15, 6), None)
    assert window.start == utc(2026, 3, 15, 0)
    assert window.end == utc(2026, 3, 15, 6)  # naive -> UTC
    assert window.to_response()["start"] == "2026-03-15T00:00:00+00:00"


def test_time_window_is_frozen() -> None:
    window = TimeWindow(None, None, None)
    with pytest.raises(AttributeError):
        window.start = NOW  # type: ignore[misc]


# --------------------------------------------------------------------------------------------
# parse_time_expression: relative expressions, exact bounds
# --------------------------------------------------------------------------------------------

# (now, expression, expected start, expected end)
RELATIVE = [
    # ---- NOW = 2026-03-15T12:00Z, a Sunday ---------------------------------------------------
    # AutoMem: calendar day in UTC.
    (NOW, "today", utc(2026, 3, 15), utc(2026, 3, 16)),
    (NOW, "this day", utc(2026, 3, 15), utc(2026, 3, 16)),
    (NOW, "yesterday", utc(2026, 3, 14), utc(2026, 3, 15)),
    # Spec 001: last/next day as calendar days.
    (NOW, "last day", utc(2026, 3, 14), utc(2026, 3, 15)),
    (NOW, "next day", utc(2026, 3, 16), utc(2026, 3, 17)),
    # AutoMem: rolling hours.
    (NOW, "last 24 hours", utc(2026, 3, 14, 12), NOW),
    (NOW, "past 24 hours", utc(2026, 3, 14, 12), NOW),
    (NOW, "last 48 hours", utc(2026, 3, 13, 12), NOW),
    (NOW, "past 48 hours", utc(2026, 3, 13, 12), NOW),
    # Spec 001: clock hours.
    (NOW, "last hour", utc(2026, 3, 15, 11), utc(2026, 3, 15, 12)),
    (NOW, "this hour", utc(2026, 3, 15, 12), utc(2026, 3, 15, 13)),
    (NOW, "next hour", utc(2026, 3, 15, 13), utc(2026, 3, 15, 14)),
    # AutoMem: Monday-based calendar weeks (Sunday belongs to the week that began Monday 9th).
    (NOW, "this week", utc(2026, 3, 9), utc(2026, 3, 16)),
    (NOW, "last week", utc(2026, 3, 2), utc(2026, 3, 9)),
    (NOW, "past week", utc(2026, 3, 2), utc(2026, 3, 9)),
    (NOW, "next week", utc(2026, 3, 16), utc(2026, 3, 23)),
    # AutoMem: calendar months.
    (NOW, "this month", utc(2026, 3, 1), utc(2026, 4, 1)),
    (NOW, "last month", utc(2026, 2, 1), utc(2026, 3, 1)),
    (NOW, "past month", utc(2026, 2, 1), utc(2026, 3, 1)),
    (NOW, "next month", utc(2026, 4, 1), utc(2026, 5, 1)),
    # AutoMem: calendar years.
    (NOW, "this year", utc(2026, 1, 1), utc(2027, 1, 1)),
    (NOW, "last year", utc(2025, 1, 1), utc(2026, 1, 1)),
    (NOW, "past year", utc(2025, 1, 1), utc(2026, 1, 1)),
    (NOW, "next year", utc(2027, 1, 1), utc(2028, 1, 1)),
    # AutoMem: "last N days" is rolling; "past N days" is Engram's alias.
    (NOW, "last 7 days", utc(2026, 3, 8, 12), NOW),
    (NOW, "past 7 days", utc(2026, 3, 8, 12), NOW),
    (NOW, "last 30 days", utc(2026, 2, 13, 12), NOW),
    (NOW, "past 30 days", utc(2026, 2, 13, 12), NOW),
    (NOW, "last 1 days", utc(2026, 3, 14, 12), NOW),
    (NOW, "last 07 days", utc(2026, 3, 8, 12), NOW),  # int("07") == 7, as in AutoMem
    (NOW, "last 0 days", NOW, NOW),  # AutoMem accepts 0: an empty window at now
    (NOW, "last 365 days", utc(2025, 3, 15, 12), NOW),
    (NOW, "last 1000000000 days", MIN_UTC, NOW),  # clamped (AutoMem: OverflowError)
    # ---- JAN = 2026-01-01T00:30Z, a Thursday: "last" rolls into 2025 -----------------------
    (JAN, "today", utc(2026, 1, 1), utc(2026, 1, 2)),
    (JAN, "yesterday", utc(2025, 12, 31), utc(2026, 1, 1)),
    (JAN, "last day", utc(2025, 12, 31), utc(2026, 1, 1)),
    (JAN, "last hour", utc(2025, 12, 31, 23), utc(2026, 1, 1)),
    (JAN, "this hour", utc(2026, 1, 1), utc(2026, 1, 1, 1)),
    (JAN, "last 24 hours", utc(2025, 12, 31, 0, 30), JAN),
    (JAN, "last 48 hours", utc(2025, 12, 30, 0, 30), JAN),
    (JAN, "this week", utc(2025, 12, 29), utc(2026, 1, 5)),  # week straddles the new year
    (JAN, "last week", utc(2025, 12, 22), utc(2025, 12, 29)),
    (JAN, "next week", utc(2026, 1, 5), utc(2026, 1, 12)),
    (JAN, "this month", utc(2026, 1, 1), utc(2026, 2, 1)),
    (JAN, "last month", utc(2025, 12, 1), utc(2026, 1, 1)),  # January -> previous December
    (JAN, "next month", utc(2026, 2, 1), utc(2026, 3, 1)),
    (JAN, "this year", utc(2026, 1, 1), utc(2027, 1, 1)),
    (JAN, "last year", utc(2025, 1, 1), utc(2026, 1, 1)),
    (JAN, "next year", utc(2027, 1, 1), utc(2028, 1, 1)),
    (JAN, "last 7 days", utc(2025, 12, 25, 0, 30), JAN),
    # ---- DEC = 2025-12-31T23:30Z, a Wednesday: "next" rolls into 2026 ----------------------
    (DEC, "today", utc(2025, 12, 31), utc(2026, 1, 1)),
    (DEC, "yesterday", utc(2025, 12, 30), utc(2025, 12, 31)),
    (DEC, "next day", utc(2026, 1, 1), utc(2026, 1, 2)),
    (DEC, "this hour", utc(2025, 12, 31, 23), utc(2026, 1, 1)),
    (DEC, "next hour", utc(2026, 1, 1), utc(2026, 1, 1, 1)),
    (DEC, "last 24 hours", utc(2025, 12, 30, 23, 30), DEC),
    (DEC, "this week", utc(2025, 12, 29), utc(2026, 1, 5)),
    (DEC, "last week", utc(2025, 12, 22), utc(2025, 12, 29)),
    (DEC, "next week", utc(2026, 1, 5), utc(2026, 1, 12)),
    (DEC, "this month", utc(2025, 12, 1), utc(2026, 1, 1)),  # December -> next January
    (DEC, "last month", utc(2025, 11, 1), utc(2025, 12, 1)),
    (DEC, "next month", utc(2026, 1, 1), utc(2026, 2, 1)),  # December -> next January
    (DEC, "this year", utc(2025, 1, 1), utc(2026, 1, 1)),
    (DEC, "next year", utc(2026, 1, 1), utc(2027, 1, 1)),
    # ---- leap years ------------------------------------------------------------------------
    (FEB29, "today", utc(2024, 2, 29), utc(2024, 3, 1)),
    (FEB29, "next day", utc(2024, 3, 1), utc(2024, 3, 2)),
    (FEB29, "this month", utc(2024, 2, 1), utc(2024, 3, 1)),
    (FEB29, "last month", utc(2024, 1, 1), utc(2024, 2, 1)),
    (FEB29, "next month", utc(2024, 3, 1), utc(2024, 4, 1)),
    (FEB29, "this week", utc(2024, 2, 26), utc(2024, 3, 4)),
    (FEB29, "last year", utc(2023, 1, 1), utc(2024, 1, 1)),
    (FEB29, "next year", utc(2025, 1, 1), utc(2026, 1, 1)),
    (FEB29, "last 365 days", utc(2023, 3, 1, 12), FEB29),
    (MAR1_L, "yesterday", utc(2024, 2, 29), utc(2024, 3, 1)),
    (MAR1_L, "last month", utc(2024, 2, 1), utc(2024, 3, 1)),
    (MAR1_L, "last 1 days", utc(2024, 2, 29, 8), MAR1_L),
    (MAR1_L, "last week", utc(2024, 2, 19), utc(2024, 2, 26)),
    (MAR1, "today", utc(2023, 3, 1), utc(2023, 3, 2)),  # now exactly at midnight
    (MAR1, "yesterday", utc(2023, 2, 28), utc(2023, 3, 1)),
    (MAR1, "last month", utc(2023, 2, 1), utc(2023, 3, 1)),
    (MAR1, "last 24 hours", utc(2023, 2, 28), MAR1),
    (utc(2100, 3, 1, 6), "yesterday", utc(2100, 2, 28), utc(2100, 3, 1)),  # 2100 is not leap
    # ---- range edges (clamped rather than OverflowError) -----------------------------------
    (utc(9999, 6, 1), "this year", utc(9999, 1, 1), MAX_UTC),
    (utc(1, 1, 1, 6), "last 24 hours", MIN_UTC, utc(1, 1, 1, 6)),
]


@pytest.mark.parametrize(("now", "expr", "start", "end"), RELATIVE)
def test_relative_expressions(now: datetime, expr: str, start: datetime, end: datetime) -> None:
    window = parse_time_expression(expr, now)
    assert window == TimeWindow(start, end, expr)


@pytest.mark.parametrize(
    ("expr", "canonical"),
    [
        ("TODAY", "today"),
        ("Last Week", "last week"),
        ("  last week  ", "last week"),
        ("\tyesterday\n", "yesterday"),
        ("last   week", "last week"),  # inner whitespace runs collapse
        ("Last 7 Days", "last 7 days"),
        ("PAST  30\tDAYS", "past 30 days"),
        ("Next Month", "next month"),
    ],
)
def test_case_and_whitespace_are_ignored(expr: str, canonical: str) -> None:
    window = parse_time_expression(expr, NOW)
    expected = parse_time_expression(canonical, NOW)
    assert window is not None and expected is not None
    assert (window.start, window.end) == (expected.start, expected.end)
    assert window.expression == expr.strip()  # echoes what the caller sent, trimmed


def test_now_is_converted_to_utc_before_calendar_math() -> None:
    # 01:00 at +05:00 on the 15th is 20:00 UTC on the 14th: "today" is the 14th (UTC).
    now = datetime(2026, 3, 15, 1, 0, tzinfo=timezone(timedelta(hours=5)))
    window = parse_time_expression("today", now)
    assert window == TimeWindow(utc(2026, 3, 14), utc(2026, 3, 15), "today")


def test_naive_now_is_utc() -> None:
    window = parse_time_expression("last 24 hours", datetime(2026, 3, 15, 12))
    assert window == TimeWindow(utc(2026, 3, 14, 12), NOW, "last 24 hours")


def test_results_are_utc_aware() -> None:
    window = parse_time_expression("this week", NOW)
    assert window is not None
    assert window.start is not None and window.start.tzinfo is UTC
    assert window.end is not None and window.end.tzinfo is UTC


# --------------------------------------------------------------------------------------------
# parse_time_expression: absolute expressions (spec 001)
# --------------------------------------------------------------------------------------------

# (expression, expected start, expected end)
ABSOLUTE = [
    # "before D": D excluded; a date-only D ends at its 00:00.
    ("before 2025-02-01", None, utc(2025, 2, 1)),
    ("before 2025-02-01T10:30:00Z", None, utc(2025, 2, 1, 10, 30)),
    ("before 2025-02-01T10:30:00+02:00", None, utc(2025, 2, 1, 8, 30)),
    ("Before 2025-02-01", None, utc(2025, 2, 1)),
    # "after D": D excluded; a date-only D starts at 00:00 the next day.
    ("after 2025-01-15", utc(2025, 1, 16), None),
    ("after 2025-01-15T08:00:00Z", utc(2025, 1, 15, 8), None),
    ("after 2025-12-31", utc(2026, 1, 1), None),  # year rollover
    ("after 2024-02-28", utc(2024, 2, 29), None),  # leap day
    # "between D and D": both ends inclusive; a date-only upper bound runs to the next 00:00.
    ("between 2025-01-15 and 2025-01-20", utc(2025, 1, 15), utc(2025, 1, 21)),
    ("BETWEEN 2025-01-15 AND 2025-01-20", utc(2025, 1, 15), utc(2025, 1, 21)),
    ("between  2025-01-15   and 2025-01-20 ", utc(2025, 1, 15), utc(2025, 1, 21)),
    ("between 2025-01-15 and 2025-01-15", utc(2025, 1, 15), utc(2025, 1, 16)),
    ("between 2024-02-28 and 2024-02-29", utc(2024, 2, 28), utc(2024, 3, 1)),
    ("between 2025-12-31 and 2025-12-31", utc(2025, 12, 31), utc(2026, 1, 1)),
    (
        "between 2025-01-15T10:00:00Z and 2025-01-15T18:00:00Z",
        utc(2025, 1, 15, 10),
        utc(2025, 1, 15, 18),
    ),
    (
        "between 2025-01-15t10:00:00z and 2025-01-16",
        utc(2025, 1, 15, 10),
        utc(2025, 1, 17),
    ),
    (
        "between 2025-01-15 10:00 and 2025-01-15 12:00",  # space-separated datetimes
        utc(2025, 1, 15, 10),
        utc(2025, 1, 15, 12),
    ),
    # "D to D": same bounds as "between".
    ("2025-01-15 to 2025-01-20", utc(2025, 1, 15), utc(2025, 1, 21)),
    ("2025-01-15 TO 2025-01-20", utc(2025, 1, 15), utc(2025, 1, 21)),
    ("2025-01-15T10:00:00Z to 2025-01-20", utc(2025, 1, 15, 10), utc(2025, 1, 21)),
    ("2025-01-15 to 2025-01-20T06:00:00Z", utc(2025, 1, 15), utc(2025, 1, 20, 6)),
    ("2025-01-15T23:00:00-05:00 to 2025-01-16", utc(2025, 1, 16, 4), utc(2025, 1, 17)),
    ("2025-01-15T10:00:00Z to 2025-01-15T10:00:00Z", utc(2025, 1, 15, 10), utc(2025, 1, 15, 10)),
    ("9999-12-31 to 9999-12-31", utc(9999, 12, 31), MAX_UTC),  # clamped end of day
]


@pytest.mark.parametrize(("expr", "start", "end"), ABSOLUTE)
def test_absolute_expressions(expr: str, start: datetime | None, end: datetime | None) -> None:
    window = parse_time_expression(expr, NOW)
    assert window == TimeWindow(start, end, expr.strip())


def test_absolute_expressions_do_not_depend_on_now() -> None:
    expr = "between 2025-01-15 and 2025-01-20"
    for now in (NOW, JAN, DEC, FEB29):
        window = parse_time_expression(expr, now)
        assert window == TimeWindow(utc(2025, 1, 15), utc(2025, 1, 21), expr)


def test_single_day_range_equals_today() -> None:
    # A date-only range ends where AutoMem's "today" ends: at the next 00:00.
    single = parse_time_expression("between 2026-03-15 and 2026-03-15", NOW)
    today = parse_time_expression("today", NOW)
    assert single is not None and today is not None
    assert (single.start, single.end) == (today.start, today.end)


# --------------------------------------------------------------------------------------------
# parse_time_expression: ignored input
# --------------------------------------------------------------------------------------------

UNRECOGNISED = [
    None,
    "",
    "   ",
    "recently",
    "tomorrow",  # in neither AutoMem's time.py nor spec 001
    "last fortnight",
    "this decade",
    "last 12 hours",  # AutoMem only knows 24 and 48
    "last 7 weeks",  # AutoMem has no "last N weeks"
    "last 3 months",  # ... nor "last N months"
    "last 1 day",  # AutoMem requires the plural "days"
    "past 7 day",
    "last seven days",
    "last -3 days",  # AutoMem's int() would make a future window
    "last +3 days",
    "last 3.5 days",
    "last \u0667 days",  # Arabic-Indic digit seven
    "last 7 days please",
    "in the last 7 days",
    "past hour",  # "past" is an alias only where AutoMem has it (week/month/year)
    "past day",
    "last  week yesterday",
    "2025-01-15",  # a bare date is not in the vocabulary
    "before",
    "before yesterday",
    "before 2025-13-01",
    "after last week",
    "between 2025-01-15",
    "between 2025-01-15 and",
    "between 2025-01-15 and soon",
    "between 2025-01-20 and 2025-01-15",  # inverted range is ignored, not guessed at
    "2025-01-20 to 2025-01-15",
    "2025-01-15T10:00:01Z to 2025-01-15T10:00:00Z",
    "2025-01-15 to",
    "to 2025-01-15",
    "today to 2025-01-20",
    "from 2025-01-15 to 2025-01-20",
    "last" + " " * 300 + "week",  # over the length cap (would otherwise collapse to "last week")
]


@pytest.mark.parametrize("expr", UNRECOGNISED)
def test_unrecognised_expressions_are_ignored(expr: str | None) -> None:
    assert parse_time_expression(expr, NOW) is None


# --------------------------------------------------------------------------------------------
# resolve_time_window
# --------------------------------------------------------------------------------------------

RESOLVE = [
    # (start, end, time_query, expected start, expected end, expected expression)
    (None, None, None, None, None, None),
    ("", "", "", None, None, None),
    (None, None, "gibberish", None, None, None),  # ignored: no window at all
    (None, None, "last week", utc(2026, 3, 2), utc(2026, 3, 9), "last week"),
    (None, None, "  Last Week ", utc(2026, 3, 2), utc(2026, 3, 9), "Last Week"),
    # Spec 000 example: explicit range.
    (
        "2025-01-01T00:00:00Z",
        "2025-01-31T23:59:59Z",
        None,
        utc(2025, 1, 1),
        utc(2025, 1, 31, 23, 59, 59),
        None,
    ),
    # Both explicit bounds beat the expression entirely.
    (
        "2025-01-01T00:00:00Z",
        "2025-01-31T23:59:59Z",
        "last week",
        utc(2025, 1, 1),
        utc(2025, 1, 31, 23, 59, 59),
        None,
    ),
    # AutoMem recall.py: each explicit bound overrides only its own side.
    ("2026-03-05T00:00:00Z", None, "last week", utc(2026, 3, 5), utc(2026, 3, 9), "last week"),
    (None, "2026-03-04T00:00:00Z", "last week", utc(2026, 3, 2), utc(2026, 3, 4), "last week"),
    # Explicit start with an unrecognised query: start only.
    ("2025-01-01", None, "sometime", utc(2025, 1, 1), None, None),
    # Open-ended explicit bounds.
    (None, "2025-01-31", None, None, utc(2025, 1, 31), None),  # date-only end is 00:00, as AutoMem
    ("2025-01-01T05:00:00+05:00", None, None, utc(2025, 1, 1), None, None),
    # An explicit bound replacing the open side of an absolute expression.
    (
        "2025-01-01",
        None,
        "before 2025-02-01",
        utc(2025, 1, 1),
        utc(2025, 2, 1),
        "before 2025-02-01",
    ),
    (None, "2025-03-01", "before 2025-02-01", None, utc(2025, 3, 1), None),
    # start == end is a valid (instantaneous) window.
    ("2025-01-01T00:00:00Z", "2025-01-01T00:00:00Z", None, utc(2025, 1, 1), utc(2025, 1, 1), None),
]


@pytest.mark.parametrize(
    ("start", "end", "time_query", "exp_start", "exp_end", "exp_expr"), RESOLVE
)
def test_resolve_time_window(
    start: str | None,
    end: str | None,
    time_query: str | None,
    exp_start: datetime | None,
    exp_end: datetime | None,
    exp_expr: str | None,
) -> None:
    window = resolved(start, end, time_query)
    if exp_start is None and exp_end is None:
        assert window is None
    else:
        assert window == TimeWindow(exp_start, exp_end, exp_expr)


def resolved(start: str | None, end: str | None, time_query: str | None) -> TimeWindow | None:
    """As GET /recall does: the query model reads the instants (service/clock/instants.py Instant)."""
    q = RecallQuery.model_validate({"start": start, "end": end, "time_query": time_query})
    return resolve_time_window(start=q.start, end=q.end, time_query=q.time_query, now=NOW)


def test_resolve_time_window_response_shape() -> None:
    window = resolve_time_window(start=None, end=None, time_query="last 30 days", now=NOW)
    assert window is not None
    assert window.to_response() == {
        "start": "2026-02-13T12:00:00+00:00",
        "end": "2026-03-15T12:00:00+00:00",
        "expression": "last 30 days",
    }


@pytest.mark.parametrize(
    ("start", "end", "message"),
    [
        ("not-a-date", None, r"start\n  'not-a-date' is not a valid ISO 8601"),
        (None, "2025-02-30", r"end\n  '2025-02-30' is not a valid ISO 8601"),
        ("yesterday", None, r"start\n  "),  # natural language is not a timestamp
        ("2025-01-01", "nope", r"end\n  "),
        ("1736899200", None, r"start\n  '1736899200' is not a valid ISO 8601"),  # nor is a unix time
    ],
)
def test_resolve_time_window_invalid_timestamps(
    start: str | None, end: str | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        resolved(start, end, "last week")


@pytest.mark.parametrize(("start", "end"), [("   ", None), (None, " ")])
def test_blank_bounds_are_not_given(start: str | None, end: str | None) -> None:
    # A blank query parameter means "not given" (service/api/query_model.py), as it always did on the route.
    assert resolved(start, end, "last week") == parse_time_expression("last week", NOW)


def test_invalid_start_is_reported_even_when_time_query_is_valid() -> None:
    with pytest.raises(ValueError, match="start"):
        resolved("bad", None, "today")


@pytest.mark.parametrize(
    ("start", "end", "time_query"),
    [
        ("2025-02-01T00:00:00Z", "2025-01-01T00:00:00Z", None),
        ("2025-01-01T00:00:00.000001Z", "2025-01-01T00:00:00Z", None),
        ("2026-03-12T00:00:00Z", None, "last week"),  # explicit start after last week's end
        (None, "2026-03-01T00:00:00Z", "this week"),  # explicit end before this week's start
    ],
)
def test_resolve_time_window_start_after_end(
    start: str | None, end: str | None, time_query: str | None
) -> None:
    with pytest.raises(ValueError, match=r"^Invalid time window: start .* is after end "):
        resolved(start, end, time_query)


@pytest.mark.parametrize("value", [
    "2025-03-10T10:30:00+00:00", "2025-03-10T10:30:00.123456+00:00", "2025-03-10T10:30:00Z", "2025-03-10T10:30:00",
    "2025-03-10", "2025-03-10T12:30:00+02:00", "2025-03-10t10:30:00z", " 2025-03-10T10:30:00Z ", "20250310T103000Z",
    "0001-01-01T00:30:00+01:00", "not a date", "", None, 12,
])
def test_stored_datetime_reads_what_the_full_parser_reads(value):
    try:
        expected = parse_iso_datetime(str(value)) if value else None
    except ValueError:
        expected = None
    got = stored_datetime(value)
    assert got == expected
    assert got is None or got.tzinfo is not None and got.utcoffset().total_seconds() == 0
