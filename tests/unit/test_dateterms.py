"""service/clock/terms.py: dates in text resolved against a moment, and the terms they become."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest

from hypothesis import given
from hypothesis import strategies as st

from service.clock.terms import MAX_WINDOW_DAYS, MAX_WINDOW_MONTHS, Span, memory_date_terms, query_date_terms, span_terms, spans, window_terms

MONDAY = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)  # 8 May 2023 was a Monday


def resolved(text: str, at: datetime = MONDAY) -> list[tuple[str, str, bool]]:
    return [(s.first.isoformat(), s.last.isoformat(), s.yearless) for s in spans(text, at)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I went to a support group yesterday", [("2023-05-07", "2023-05-07", False)]),
        ("Last night was loud", [("2023-05-07", "2023-05-07", False)]),
        ("the day before yesterday", [("2023-05-06", "2023-05-06", False)]),
        ("Signed up today", [("2023-05-08", "2023-05-08", False)]),
        ("last week I painted", [("2023-05-01", "2023-05-07", False)]),  # the calendar week before (time_query's reading)
        ("this week", [("2023-05-08", "2023-05-14", False)]),
        ("We went camping last weekend", [("2023-05-06", "2023-05-07", False)]),
        ("next weekend", [("2023-05-20", "2023-05-21", False)]),
        ("last Friday was fun", [("2023-05-05", "2023-05-05", False)]),
        ("last Monday", [("2023-05-01", "2023-05-01", False)]),  # said on a Monday: a week ago
        ("two days ago", [("2023-05-06", "2023-05-06", False)]),
        ("a few weeks ago", [("2023-04-17", "2023-04-23", False)]),
        ("3 months ago", [("2023-02-01", "2023-02-28", False)]),
        ("three years ago", [("2020-01-01", "2020-12-31", False)]),
        ("last month", [("2023-04-01", "2023-04-30", False)]),
        ("next month I travel", [("2023-06-01", "2023-06-30", False)]),
        ("last year", [("2022-01-01", "2022-12-31", False)]),
        ("On May 7, 2023 I ran", [("2023-05-07", "2023-05-07", False)]),
        ("3rd of June 2023", [("2023-06-03", "2023-06-03", False)]),
        ("on 13 October", [("2023-10-13", "2023-10-13", True)]),
        ("July 2023 was hot", [("2023-07-01", "2023-07-31", False)]),
        ("in June", [("2023-06-01", "2023-06-30", True)]),
        ("Back in 2022 we moved", [("2022-01-01", "2022-12-31", False)]),
        ("on 2023-05-01 and yesterday", [("2023-05-01", "2023-05-01", False), ("2023-05-07", "2023-05-07", False)]),
        # Words that only look like dates.
        ("this may be it", []), ("I may go", []), ("they march on", []), ("Feb 30, 2023", []),
        ("1000 days ago", []), ("", []), ("nothing here", []),
    ],
)
def test_spans(text, expected):
    assert resolved(text) == expected


def test_span_terms_by_granularity():
    assert span_terms(Span(MONDAY.date(), MONDAY.date())) == ["d:2023-05-08", "md:05-08", "m:2023-05", "mo:05", "y:2023"]
    weekend = span_terms(Span(datetime(2023, 4, 29).date(), datetime(2023, 4, 30).date()))
    assert weekend == ["d:2023-04-29", "md:04-29", "d:2023-04-30", "md:04-30", "m:2023-04", "mo:04", "y:2023"]
    across = span_terms(Span(datetime(2023, 5, 29).date(), datetime(2023, 6, 4).date()))
    assert {"m:2023-05", "m:2023-06", "d:2023-06-04"} <= set(across)
    month = span_terms(Span(datetime(2023, 7, 1).date(), datetime(2023, 7, 31).date()))
    assert month == ["m:2023-07", "mo:07", "y:2023"]
    assert span_terms(Span(datetime(2022, 1, 1).date(), datetime(2022, 12, 31).date())) == ["y:2022"]
    assert span_terms(Span(datetime(2023, 6, 1).date(), datetime(2023, 6, 30).date(), yearless=True)) == ["mo:06"]


def test_memory_date_terms_hold_the_timestamp_and_what_the_content_names():
    assert memory_date_terms("I went yesterday", MONDAY) == ["d:2023-05-07", "d:2023-05-08", "m:2023-05", "md:05-07", "md:05-08", "mo:05", "y:2023"]
    assert memory_date_terms("no dates", None) == []


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What did Mel paint in their latest project in July 2023?", (("m:2023-07",),)),
        ("When did Melanie go camping in June?", (("mo:06",),)),
        ("What painting did Melanie show on October 13, 2023?", (("d:2023-10-13",),)),
        ("What did we decide yesterday?", (("d:2023-05-07",),)),
        ("What happened last week?", (tuple(f"d:2023-05-0{d}" for d in range(1, 8)),)),
        ("Anything in 2023 or in 2022?", (("y:2023",), ("y:2022",))),
        ("Which database did we choose?", ()),
    ],
)
def test_query_date_terms_ask_for_the_finest_terms(query, expected):
    assert query_date_terms(query, MONDAY) == expected


@pytest.mark.parametrize("text", ["9999-12-31 vault", "in December 9999", "December 31, 9999", "next week", "next month", "next year", "next weekend"])
def test_the_calendars_last_days_resolve_or_drop_never_raise(text):
    end = datetime(9999, 12, 31, 23, 59, tzinfo=timezone.utc)
    query_date_terms(text, end)  # a hostile query answered 500 (year 10000 is out of range)
    assert "d:9999-12-31" in memory_date_terms(text, end)


@pytest.mark.parametrize("text", ["yesterday", "last week", "last month", "3 years ago", "last Monday", "last weekend", "2 weeks ago"])
def test_the_calendars_first_day_resolves_or_drops_never_raises(text):
    start = datetime(1, 1, 1, tzinfo=timezone.utc)
    assert "d:0001-01-01" in memory_date_terms(text, start)
    query_date_terms(text, start)


def test_the_last_month_of_the_calendar_has_its_terms():
    assert query_date_terms("in December 9999", MONDAY) == (("m:9999-12",),)
    assert query_date_terms("9999-12-31", MONDAY) == (("d:9999-12-31",),)


def _utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        (_utc(2023, 5, 23), _utc(2023, 5, 24), ["d:2023-05-23"]),  # one day, end exclusive
        (_utc(2023, 5, 23, 15), _utc(2023, 5, 23, 18), ["d:2023-05-23"]),  # part of a day: the day
        (_utc(2023, 5, 23, 6), _utc(2023, 5, 24, 6), ["d:2023-05-23"]),  # May 23 in Denver (UTC-6)
        (_utc(2023, 5, 22, 15), _utc(2023, 5, 23, 15), ["d:2023-05-23"]),  # May 23 in Tokyo (UTC+9)
        (_utc(2023, 5, 23, 20), _utc(2023, 5, 24, 2), ["d:2023-05-23"]),  # short: the day of its middle
        (_utc(2023, 5, 31), _utc(2023, 6, 2), ["d:2023-05-31", "d:2023-06-01"]),
        # a whole month: its days and the month itself ("in May" is no day)
        (_utc(2023, 2, 1), _utc(2023, 3, 1), [f"d:2023-02-{d:02d}" for d in range(1, 29)] + ["m:2023-02"]),
        # longer than MAX_WINDOW_DAYS: the months and years covered whole
        (_utc(2022, 12, 15), _utc(2024, 1, 1), [f"m:2023-{m:02d}" for m in range(1, 13)] + ["y:2023"]),
        (None, _utc(2023, 5, 24), []),  # open windows match no date term
        # the calendar's ends: bounded work, no overflow
        (_utc(9999, 12, 31, 12), datetime.max.replace(tzinfo=timezone.utc), ["d:9999-12-31"]),
        (datetime.min.replace(tzinfo=timezone.utc), _utc(1, 1, 1, 11), ["d:0001-01-01"]),
        (_utc(2023, 5, 24), _utc(2023, 5, 23), []),
    ],
)
def test_window_terms(start, end, expected):
    assert window_terms(start, end) == expected


@given(day=st.dates(date(2000, 1, 1), date(2100, 1, 1)), first=st.dates(date(2000, 1, 1), date(2100, 1, 1)),
       length=st.integers(1, MAX_WINDOW_DAYS))
def test_a_memory_written_on_a_day_meets_exactly_the_windows_holding_that_day(day, first, length):
    start = datetime(first.year, first.month, first.day, tzinfo=timezone.utc)
    end = start + timedelta(days=length)
    written = datetime(day.year, day.month, day.day, 12, tzinfo=timezone.utc)
    meets = bool(set(memory_date_terms("", written)) & set(window_terms(start, end)))
    assert meets == (start <= written < end)


def test_a_memory_meets_a_window_through_the_day_its_content_speaks_of():
    yesterday = memory_date_terms("I got accepted for the internship yesterday!", _utc(2023, 5, 24, 13))
    assert set(yesterday) & set(window_terms(_utc(2023, 5, 23), _utc(2023, 5, 24)))
    assert not set(memory_date_terms("Nothing dated here.", _utc(2023, 5, 24, 13))) & set(window_terms(_utc(2023, 5, 23), _utc(2023, 5, 24)))


@given(start=st.datetimes(timezones=st.just(timezone.utc)), end=st.datetimes(timezones=st.just(timezone.utc)))
def test_window_terms_are_bounded_and_never_raise(start, end):
    terms = window_terms(start, end)
    assert len(terms) <= MAX_WINDOW_DAYS + MAX_WINDOW_MONTHS + MAX_WINDOW_MONTHS // 12 + 1
    assert all(t[:2] in ("d:", "m:", "y:") for t in terms)
