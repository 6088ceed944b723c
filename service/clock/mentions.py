"""The one detector of dates inside a text: where a query or a memory's content speaks of a time.

`mentions(text, now, tz)` finds them in order of appearance, each as the days it covers (`days`,
when it is a run of whole days) and its window [start, end) in UTC. Every reader uses it:

- a memory's `date_terms` (service/clock/terms.py): its content read against its own timestamp, in
  UTC, calendar mentions only (`CALENDAR`);
- the date component of a recall query (terms.py `query_date_terms`): the same mentions, read
  against now (or the request's anchor) in RECALL_DATE_TIMEZONE;
- Signet's date phrases and GET /recall `parse_dates=true` (service/clock/phrases.py): the first
  calendar mention that names one whole day with its year;
- Hindsight's temporal arm (phrases.py `query_window`): the first mention of any kind that has a
  window and a year.

What is found (case-insensitive; "May", "March", "Jan", "Mar", "Sep", "Dec" in lower case only in a
full date such as "may 13 2026", since "I may go" is no date):

- dates: `2026-05-13`, `2026/05/13` (`2026/5/3`; a full timestamp is not a date), `May 13 2026`,
  `May 13, 2026`, `13 May 2026`, `13th of May`, `Sept 3rd, 2025`; `May 13` alone (no year: "yearless");
  months `July 2023`, `in June`; years `in 2022`;
- relative days: today, tonight, this morning/afternoon/evening, yesterday(`'s`), last night,
  (the) day before yesterday, `two days ago`, `last Friday`, `last/this/next weekend`;
- periods: last/this/next/past week|month|year, `3 weeks ago`, `a few months ago`;
- windows that are not whole days (`WINDOWS`, queries only): `last/past N days`, `last 24 hours`,
  last/this/next hour, `before|after D`, `between D and D`, `D to D` with ISO D (time_query's forms,
  resolved by service/clock/expressions.py).

Mentions never overlap: where two would, the earlier reader in READERS wins ("May 7, 2023" is not
also "May 2023"). Pure: `now` and the zone come in.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import date, datetime, timedelta, tzinfo

from service.clock.expressions import parse_time_expression
from service.clock.months import MONTH_PATTERN, month_number, weekday_number
from service.clock.periods import days_window, local_day, month_last, period_days

# A text is read up to this many characters (contents are at most MEMORY_CONTENT_MAX) ...
MAX_SCAN = 20_000
# ... for at most this many mentions.
MAX_MENTIONS = 20
# "N days ago" beyond this is rare, and too coarse to tell memories apart.
MAX_AGO = 400
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
            "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple of": 2, "a couple of": 2, "few": 3, "a few": 3}


@dataclass(frozen=True)
class Span:
    """Days [first, last] a date covers; `yearless`: a month or day named without a year."""

    first: date
    last: date
    yearless: bool = False

    @property
    def days(self) -> int:
        return (self.last - self.first).days + 1


@dataclass(frozen=True)
class Mention:
    """A time named in a text: where (`start`, `end` in the text), how (`kind`, the `phrase` as written),
    the days it covers (None for a window that is not whole days), its window in UTC."""

    start: int
    end: int
    phrase: str
    kind: str
    days: Span | None
    window: tuple[datetime | None, datetime | None]

    @property
    def one_day(self) -> bool:
        """Names one whole calendar day, year included (`2026-05-13`, `yesterday`, `last Friday`)."""
        return self.days is not None and not self.days.yearless and self.days.first == self.days.last


# --- resolvers: a match's groups and today -> the days it covers -----------------------------------------
def _day_of(year: int, month: int | None, day: int) -> date | None:
    if month is None:
        return None
    try:
        return date(year, month, day)
    except ValueError:  # 2026-02-30, month 13, year 0
        return None


def _numeric(g: tuple, today: date) -> Span | None:
    d = _day_of(int(g[0]), int(g[2]), int(g[3]))
    return Span(d, d) if d else None


def _month_day(month_name: str, day: str, year: str | None, today: date) -> Span | None:
    d = _day_of(int(year) if year else today.year, month_number(month_name, full_date=bool(year)), int(day))
    return Span(d, d, yearless=not year) if d else None


def _month_span(year: int, month: int | None, yearless: bool = False) -> Span | None:
    if month is None:
        return None
    first = date(year, month, 1)  # ValueError beyond the calendar: no mention
    return Span(first, month_last(first), yearless)


def _count(text: str) -> int | None:
    text = " ".join(text.lower().split())
    return int(text) if text.isdigit() else _NUMBERS.get(text)


def _ago(g: tuple, today: date) -> Span | None:
    n, unit = _count(g[0]), g[1].lower()
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
        y, m0 = divmod(today.month - 1 - n, 12)
        return _month_span(today.year + y, m0 + 1)
    return Span(date(today.year - n, 1, 1), date(today.year - n, 12, 31)) if today.year - n >= 1 else None


def _last_weekday(g: tuple, today: date) -> Span:
    back = (today.weekday() - weekday_number(g[0])) % 7 or 7  # said on a Friday, "last Friday" is a week ago
    d = today - timedelta(days=back)
    return Span(d, d)


def _weekend(g: tuple, today: date) -> Span:
    saturday = today - timedelta(days=today.weekday()) + timedelta(days=5)
    saturday += timedelta(days={"last": -7, "this": 0, "next": 7}[g[0].lower()])
    return Span(saturday, saturday + timedelta(days=1))


_DAYS_BACK = {"today": 0, "tonight": 0, "this morning": 0, "this afternoon": 0, "this evening": 0,
              "yesterday": 1, "last night": 1, "day before yesterday": 2, "the day before yesterday": 2}
_PERIODS = {"last": -1, "past": -1, "this": 0, "next": 1}


def _relative(g: tuple, today: date) -> Span | None:
    phrase = " ".join(g[0].lower().split())
    if phrase in _DAYS_BACK:
        d = today - timedelta(days=_DAYS_BACK[phrase])
        return Span(d, d)
    word, unit = phrase.split()  # last/this/next/past week|month|year, as time_query reads them
    days = period_days(today, unit, _PERIODS[word])
    return Span(*days) if days else None


Resolver = Callable[[tuple, date], Span | None]
_ISO = r"\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
_COUNT = r"(\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|(?:a )?couple of|(?:a )?few)"
_M = MONTH_PATTERN

# (kind, pattern, resolver or None = a window resolved by time_query's vocabulary), in precedence order.
READERS: list[tuple[str, re.Pattern[str], Resolver | None]] = [
    ("range", re.compile(rf"\b(?:between {_ISO} and {_ISO}|{_ISO} to {_ISO}|before {_ISO}|after {_ISO})(?![\w:+-])", re.I | re.ASCII), None),
    ("rolling", re.compile(r"\b(?:last|past) (?:[0-9]{1,9} days|24 hours|48 hours)\b", re.I | re.ASCII), None),
    ("numeric", re.compile(r"(?<![\w./:-])(\d{4})([-/])(\d{1,2})\2(\d{1,2})(?![\w/-]|[.:]\d)", re.ASCII), _numeric),
    ("month_day_year", re.compile(rf"\b{_M}\.? (\d{{1,2}})(?:st|nd|rd|th)?(?:,? (\d{{4}}))?\b", re.I),
     lambda g, today: _month_day(g[0], g[1], g[2], today)),
    ("day_month_year", re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)? (?:of )?{_M}\.?(?:,? (\d{{4}}))?\b", re.I),
     lambda g, today: _month_day(g[1], g[0], g[2], today)),
    ("month_year", re.compile(rf"\b{_M},? (\d{{4}})\b", re.I), lambda g, today: _month_span(int(g[1]), month_number(g[0]))),
    ("in_month", re.compile(rf"\b(?:in|during|since|until|by|last|this|next) {_M}\b", re.I),
     lambda g, today: _month_span(today.year, month_number(g[0]), yearless=True)),
    ("year", re.compile(r"\b(?:in|during|since|of|by) ((?:19|20)\d{2})\b", re.I),
     lambda g, today: Span(date(int(g[0]), 1, 1), date(int(g[0]), 12, 31))),
    ("ago", re.compile(rf"\b{_COUNT} (day|week|month|year)s? ago\b", re.I), _ago),
    ("weekday", re.compile(r"\blast (monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b", re.I), _last_weekday),
    ("weekend", re.compile(r"\b(last|this|next) weekend\b", re.I), _weekend),
    ("relative", re.compile(r"\b(today|tonight|this (?:morning|afternoon|evening)|yesterday|last night|(?:the )?day before yesterday|"
                            r"(?:last|this|next|past) (?:week|month|year))(?:'s)?\b", re.I), _relative),
    ("hour", re.compile(r"\b(?:last|this|next) hour\b", re.I), None),
]
KINDS = tuple(kind for kind, _, _ in READERS)
WINDOWS = frozenset({"range", "rolling", "hour"})  # windows that are not whole days: no date terms
CALENDAR = frozenset(KINDS) - WINDOWS


def mentions(text: str | None, now: datetime, tz: tzinfo, kinds: Collection[str] = KINDS, *, scan: int = MAX_SCAN) -> list[Mention]:
    """The times `text` (its first `scan` characters) speaks of, read against `now` in `tz`, in order of
    appearance (at most MAX_MENTIONS)."""
    if not text:
        return []
    text = text[:scan]
    today = local_day(now, tz)
    found: list[Mention] = []
    for kind, pattern, resolve in READERS:
        if kind not in kinds:
            continue
        for match in pattern.finditer(text):
            start, end = match.span()
            if any(start < m.end and m.start < end for m in found):
                continue  # an earlier reader took this text already
            mention = _mention(kind, match, resolve, now, today, tz)
            if mention is not None:
                found.append(mention)
    found.sort(key=lambda m: m.start)
    return found[:MAX_MENTIONS]


def _mention(kind: str, match: re.Match, resolve: Resolver | None, now: datetime, today: date, tz: tzinfo) -> Mention | None:
    if resolve is None:
        window = parse_time_expression(match.group(0), now, tz)
        if window is None or (window.start is None and window.end is None):
            return None
        return Mention(match.start(), match.end(), match.group(0), kind, None, (window.start, window.end))
    try:
        days = resolve(match.groups(), today)
    except (ValueError, OverflowError):  # beyond the calendar: "yesterday" on 0001-01-01
        return None
    if days is None:
        return None
    return Mention(match.start(), match.end(), match.group(0), kind, days, days_window(days.first, days.last, tz))
