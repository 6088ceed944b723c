"""Date terms: the dates a text speaks of, resolved against a moment, as keyword terms. Pure.

At write time a memory's content is read against its own timestamp ("yesterday" in a memory of
8 May 2023 is 7 May 2023; "last week" is the calendar week before, as `time_query` reads it) and
stored in `date_terms`, with the timestamp's own date. At recall the query's dates are read
against now ("in July 2023", "on 13 October", "last week") and the memories whose terms meet them
get the engram profile's date component: a boost, never a filter.

Terms, per day a date covers when it covers at most a week: `d:YYYY-MM-DD` and `md:MM-DD`; per
month when at most a month: `m:YYYY-MM` and `mo:MM`; per year when at most a year: `y:YYYY`. A
query date becomes only its finest terms, so "July 2023" asks for `m:2023-07` and "in June" (no
year) for `mo:06`.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, tzinfo

from service.clock.instants import UTC
from service.clock.mentions import CALENDAR, Span, mentions
from service.clock.periods import local_day, next_month

__all__ = ["Span", "spans", "span_terms", "query_terms", "memory_date_terms", "window_terms", "query_date_terms",
           "MAX_WINDOW_DAYS", "MAX_WINDOW_MONTHS"]

# Beyond these a date is too coarse to tell memories apart.
MAX_DAY_SPAN = 7
MAX_MONTH_SPAN = 31
MAX_YEAR_SPAN = 366
# A time window is matched by at most this many day terms, and months / years it covers whole
# (window_terms): a terms query of a few hundred values.
MAX_WINDOW_DAYS = 92
MAX_WINDOW_MONTHS = 240


def spans(text: str | None, at: datetime, tz: tzinfo = UTC) -> list[Span]:
    """The calendar dates `text` speaks of, resolved against `at` in `tz`, in order of appearance."""
    return [m.days for m in mentions(text, at, tz, CALENDAR) if m.days is not None]


def span_terms(span: Span) -> list[str]:
    """Every term of a memory's date: days, months and years it covers (and their year-less forms)."""
    out: dict[str, None] = {}
    if span.days <= MAX_DAY_SPAN:
        for i in range(span.days):
            d = span.first + timedelta(days=i)
            if not span.yearless:
                out[f"d:{d.isoformat()}"] = None
            out[f"md:{d.month:02d}-{d.day:02d}"] = None
    if span.days <= MAX_MONTH_SPAN:
        d: date | None = span.first
        while d is not None and d <= span.last:
            if not span.yearless:
                out[f"m:{d.year}-{d.month:02d}"] = None
            out[f"mo:{d.month:02d}"] = None
            d = next_month(d)
    if span.days <= MAX_YEAR_SPAN and not span.yearless:
        for year in range(span.first.year, span.last.year + 1):
            out[f"y:{year}"] = None
    return list(out)


def query_terms(span: Span) -> tuple[str, ...]:
    """What a query's date asks for: its finest terms only."""
    if span.days <= MAX_DAY_SPAN:
        prefix = "md" if span.yearless else "d"
    elif span.days <= MAX_MONTH_SPAN:
        prefix = "mo" if span.yearless else "m"
    else:
        prefix = "y"
    return tuple(t for t in span_terms(span) if t.startswith(prefix + ":"))


def memory_date_terms(content: str | None, timestamp: datetime | None) -> list[str]:
    """A memory's `date_terms`: its timestamp's date, and the dates its content speaks of."""
    if timestamp is None:
        return []
    day = local_day(timestamp, UTC)  # date_terms are UTC days: they are stored, a zone setting may change
    out: dict[str, None] = dict.fromkeys(span_terms(Span(day, day)))
    for span in spans(content, timestamp, UTC):
        out.update(dict.fromkeys(span_terms(span)))
    return sorted(out)


def _half_covered(start: datetime, end: datetime) -> tuple[date, date] | None:
    """The first and last UTC days that [start, end) covers for half a day or more."""
    half, day_length = timedelta(hours=12), timedelta(days=1)

    def covered(d: date) -> bool:
        day = datetime(d.year, d.month, d.day, tzinfo=UTC)
        day_end = day + day_length if d < date.max else datetime.max.replace(tzinfo=UTC)  # the calendar's last day
        return min(end, day_end) - max(start, day) >= half

    first, last = start.date(), (end - timedelta(microseconds=1)).date()
    if not covered(first):
        if first == date.max:
            return None
        first += day_length
    if not covered(last):
        if last == date.min:
            return None
        last -= day_length
    return (first, last) if first <= last else None


def window_terms(start: datetime | None, end: datetime | None) -> list[str]:
    """The terms any one of which puts a memory's dates inside the window [start, end), at day
    resolution: each day the window covers for half a day or more (up to MAX_WINDOW_DAYS of them),
    and the months and years those days fill. Days are UTC days, as in `date_terms`; by the half-day
    rule a calendar day in a zone within 12 hours of UTC (Signet's date phrases) is that day. A window
    shorter than that: the day of its middle. Signet's `occurred` facet (service/recall/queries.py).
    [] for an open window."""
    if start is None or end is None or end <= start:
        return []
    start, end = start.astimezone(UTC), end.astimezone(UTC)
    days = _half_covered(start, end)
    if days is None:
        middle = (start + (end - start) / 2).date()
        days = (middle, middle)
    first, last = days
    out: dict[str, None] = {}
    if (last - first).days < MAX_WINDOW_DAYS:
        for n in range((last - first).days + 1):
            out[f"d:{(first + timedelta(days=n)).isoformat()}"] = None
    month = date(first.year, first.month, 1)
    for _ in range(MAX_WINDOW_MONTHS):
        following = next_month(month)
        if month > last or following is None:
            break
        if month >= first and following - timedelta(days=1) <= last:
            out[f"m:{month.year}-{month.month:02d}"] = None
        month = following
    for year in range(first.year, min(last.year, first.year + MAX_WINDOW_MONTHS // 12) + 1):
        if date(year, 1, 1) >= first and date(year, 12, 31) <= last:
            out[f"y:{year}"] = None
    return list(out)


def query_date_terms(query: str | None, now: datetime, tz: tzinfo = UTC) -> tuple[tuple[str, ...], ...]:
    """The query's dates (read against `now` in the request's zone), each as the terms any one of which meets it."""
    out = []
    for span in spans(query, now, tz):
        terms = query_terms(span)
        if terms and terms not in out:
            out.append(terms)
    return tuple(out)
