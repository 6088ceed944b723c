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

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone

from service.clock.timeparse import parse_time_expression

UTC = timezone.utc
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december")
_MONTH = {m: i + 1 for i, m in enumerate(MONTHS)} | {m[:3]: i + 1 for i, m in enumerate(MONTHS)} | {"sept": 9}
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
            "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple of": 2, "a couple of": 2, "few": 3, "a few": 3}
# Beyond these a date is too coarse to tell memories apart (and "N days ago" with a large N is rare).
MAX_DAY_SPAN = 7
MAX_MONTH_SPAN = 31
MAX_YEAR_SPAN = 366
MAX_AGO = 400
# A time window is matched by at most this many day terms, and months / years it covers whole
# (window_terms): a terms query of a few hundred values.
MAX_WINDOW_DAYS = 92
MAX_WINDOW_MONTHS = 240
# A text is read up to this many characters for dates (contents are at most MEMORY_CONTENT_MAX).
MAX_SCAN = 20_000
MAX_EXPRESSIONS = 20

_MONTH_NAME = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
_COUNT = r"(\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|(?:a )?couple of|(?:a )?few)"
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("iso", re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")),
    ("month_day_year", re.compile(rf"\b{_MONTH_NAME}\.? (\d{{1,2}})(?:st|nd|rd|th)?(?:,? (\d{{4}}))?\b", re.I)),
    ("day_month_year", re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)? (?:of )?{_MONTH_NAME}\.?(?:,? (\d{{4}}))?\b", re.I)),
    ("month_year", re.compile(rf"\b{_MONTH_NAME},? (\d{{4}})\b", re.I)),
    ("in_month", re.compile(rf"\b(?:in|during|since|until|by|last|this|next) {_MONTH_NAME}\b", re.I)),
    ("year", re.compile(r"\b(?:in|during|since|of|by) ((?:19|20)\d{2})\b", re.I)),
    ("ago", re.compile(rf"\b{_COUNT} (day|week|month|year)s? ago\b", re.I)),
    ("weekday", re.compile(r"\blast (monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b", re.I)),
    ("weekend", re.compile(r"\b(last|this|next) weekend\b", re.I)),
    ("relative", re.compile(r"\b(today|tonight|this (?:morning|afternoon|evening)|yesterday|last night|the day before yesterday|"
                            r"(?:last|this|next|past) (?:week|month|year))\b", re.I)),
]


@dataclass(frozen=True)
class Span:
    """Days [first, last] a date covers; `yearless`: a month or day named without a year."""

    first: date
    last: date
    yearless: bool = False

    @property
    def days(self) -> int:
        return (self.last - self.first).days + 1


def _day(moment: datetime) -> date:
    return moment.astimezone(UTC).date() if moment.tzinfo else moment.date()


def _safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _month_span(year: int, month: int, yearless: bool = False) -> Span:
    first = date(year, month, 1)
    nxt = _next_month(first)
    return Span(first, nxt - timedelta(days=1) if nxt else date.max, yearless)


def _next_month(d: date) -> date | None:
    """The first day of the month after d's; None after December 9999 (the calendar's last)."""
    if d.month < 12:
        return date(d.year, d.month + 1, 1)
    return date(d.year + 1, 1, 1) if d.year < date.max.year else None


def _count(text: str) -> int | None:
    text = text.lower()
    return int(text) if text.isdigit() else _NUMBERS.get(text)


def _shift_months(d: date, months: int) -> tuple[int, int]:
    y, m = divmod(d.month - 1 + months, 12)
    return d.year + y, m + 1


def spans(text: str | None, at: datetime) -> list[Span]:
    """The dates `text` speaks of, resolved against `at` (aware or UTC), in order of appearance."""
    if not text:
        return []
    text = text[:MAX_SCAN]
    today = _day(at)
    found: list[tuple[int, int, Span]] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(text):
            start, end = match.span()
            if any(start < b and a < end for a, b in taken):
                continue  # a longer, earlier pattern read this text already ("May 7, 2023" is not also "May 2023")
            try:
                span = _resolve(kind, match.groups(), at, today)
            except (ValueError, OverflowError):  # beyond the calendar (years 1-9999): "yesterday" on 0001-01-01
                span = None
            if span is not None:
                taken.append((start, end))
                found.append((start, end, span))
    found.sort(key=lambda item: item[0])
    return [span for _, _, span in found[:MAX_EXPRESSIONS]]


# Month names that are also common words count only when capitalised ("I may", "to march").
_WORDS = frozenset({"may", "march", "jan", "mar", "sep", "dec"})


def _month_of(name: str) -> int | None:
    if name.lower().rstrip(".") in _WORDS and not name[0].isupper():
        return None
    return _MONTH.get(name.lower().rstrip("."))


def _resolve(kind: str, groups: tuple, at: datetime, today: date) -> Span | None:
    if kind == "iso":
        d = _safe_date(int(groups[0]), int(groups[1]), int(groups[2]))
        return Span(d, d) if d else None
    if kind in ("month_day_year", "day_month_year"):
        month_name, day = (groups[0], groups[1]) if kind == "month_day_year" else (groups[1], groups[0])
        month = _month_of(month_name)
        year = int(groups[2]) if groups[2] else None
        if month is None:
            return None
        d = _safe_date(year or today.year, month, int(day))
        return Span(d, d, yearless=year is None) if d else None
    if kind == "month_year":
        month = _month_of(groups[0])
        return _month_span(int(groups[1]), month) if month else None
    if kind == "in_month":
        month = _month_of(groups[0])
        return _month_span(today.year, month, yearless=True) if month else None
    if kind == "year":
        year = int(groups[0])
        return Span(date(year, 1, 1), date(year, 12, 31))
    if kind == "ago":
        n, unit = _count(groups[0]), groups[1].lower()
        if n is None or n > MAX_AGO:
            return None
        if unit == "day":
            d = today - timedelta(days=n)
            return Span(d, d)
        if unit == "week":
            d = today - timedelta(weeks=n)
            monday = d - timedelta(days=d.weekday())
            return Span(monday, monday + timedelta(days=6))
        if unit == "month":
            return _month_span(*_shift_months(today, -n))
        return Span(date(today.year - n, 1, 1), date(today.year - n, 12, 31)) if today.year - n >= 1 else None
    if kind == "weekday":
        back = (today.weekday() - WEEKDAYS.index(groups[0].lower())) % 7 or 7
        d = today - timedelta(days=back)
        return Span(d, d)
    if kind == "weekend":
        saturday = today - timedelta(days=today.weekday()) + timedelta(days=5)
        saturday += timedelta(days={"last": -7, "this": 0, "next": 7}[groups[0].lower()])
        return Span(saturday, saturday + timedelta(days=1))
    phrase = " ".join(groups[0].lower().split())
    if phrase in ("today", "tonight", "this morning", "this afternoon", "this evening"):
        return Span(today, today)
    if phrase in ("yesterday", "last night"):
        return Span(today - timedelta(days=1), today - timedelta(days=1))
    if phrase == "the day before yesterday":
        return Span(today - timedelta(days=2), today - timedelta(days=2))
    window = parse_time_expression(phrase, at)  # last/this/next week|month|year, as time_query reads them
    if window is None or window.start is None or window.end is None:
        return None
    return Span(window.start.date(), (window.end - timedelta(microseconds=1)).date())


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
            d = _next_month(d)
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
    out: dict[str, None] = dict.fromkeys(span_terms(Span(_day(timestamp), _day(timestamp))))
    for span in spans(content, timestamp):
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
        following = _next_month(month)
        if month > last or following is None:
            break
        if month >= first and following - timedelta(days=1) <= last:
            out[f"m:{month.year}-{month.month:02d}"] = None
        month = following
    for year in range(first.year, min(last.year, first.year + MAX_WINDOW_MONTHS // 12) + 1):
        if date(year, 1, 1) >= first and date(year, 12, 31) <= last:
            out[f"y:{year}"] = None
    return list(out)


def query_date_terms(query: str | None, now: datetime) -> tuple[tuple[str, ...], ...]:
    """The query's dates, each as the terms any one of which meets it."""
    out = []
    for span in spans(query, now):
        terms = query_terms(span)
        if terms and terms not in out:
            out.append(terms)
    return tuple(out)
