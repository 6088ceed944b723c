"""Exact date phrases inside a recall query: `2026/05/13 editor` = the day 2026-05-13, query `editor`.

Spec 004 (Signet, POST /api/memory/recall): "Exact date phrases in query, such as 2026/05/13,
2026-05-13, or May 13 2026, activate temporal recall automatically. [...] A date plus topic uses
the date as a filter and the remaining words as the content query." Recognised here:

- numeric dates: `2026-05-13`, `2026/05/13` (also `2026/5/3`); a full timestamp
  (`2026-05-13T10:00Z`) is not a date phrase;
- month names, English, full or abbreviated, any case: `May 13 2026`, `May 13, 2026`,
  `13 May 2026`, `Sept 3rd, 2025`;
- `today`, `yesterday` (`yesterday's` too), `the day before yesterday`.

The phrase names one calendar day in the service's zone (RECALL_DATE_TIMEZONE; the spec's example
window 06:00Z-06:00Z is a day in a UTC-6 zone): the window is [its midnight, the next midnight).
The first phrase wins (later ones stay in the content query); an impossible date (2026-02-30) is
no phrase. A preposition right before the phrase (`notes from yesterday`) goes with it.

Pure: no I/O, `now` and the zone are passed in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone, tzinfo
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

MONTHS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7, "august": 8,
    "september": 9, "october": 10, "november": 11, "december": 12,
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9, "oct": 10, "nov": 11, "dec": 12,
}
_MONTH = "(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>\d{4})"
# Years a phrase may name: four digits, and every day's window must fit in a datetime in any zone.
MIN_YEAR, MAX_YEAR = 1000, 9998
# Queries are bounded by the routes; this keeps the scan linear on anything longer.
MAX_SCANNED = 2000

_PATTERNS = [
    ("numeric", re.compile(r"(?<![\w./:-])" + _YEAR + r"(?P<sep>[-/])(?P<month>\d{1,2})(?P=sep)(?P<day>\d{1,2})(?![\w/:-]|\.\d)", re.ASCII)),
    ("month_first", re.compile(r"(?<![\w])" + _MONTH + r"\s+" + _DAY + r",?\s+" + _YEAR + r"(?![\w/-])", re.IGNORECASE | re.ASCII)),
    ("day_first", re.compile(r"(?<![\w])" + _DAY + r"\s+(?:of\s+)?" + _MONTH + r",?\s+" + _YEAR + r"(?![\w/-])", re.IGNORECASE | re.ASCII)),
    ("relative", re.compile(r"(?<![\w])(?P<relative>(?:the\s+)?day\s+before\s+yesterday|yesterday|today)(?:'s)?(?![\w])", re.IGNORECASE | re.ASCII)),
]
_RELATIVE_DAYS = {"today": 0, "yesterday": 1}
# One of these right before the phrase belongs to it ("notes from yesterday" -> "notes").
_PREPOSITION = re.compile(r"(?:^|\s)(?:on|from|at|for|of|in|during|since)\s*$", re.IGNORECASE)
_SPACES = re.compile(r"\s+")
_SPACE_BEFORE_MARK = re.compile(r"\s+(?=[?!.,;:])")
_EDGE_PUNCTUATION = " \t\n,;:-"


@dataclass(frozen=True)
class DatePhrase:
    """The day a query names: [start, end) in UTC, the phrase as written, and the rest of the query."""

    start: datetime
    end: datetime
    phrase: str
    content_query: str
    day: date


def zone(name: str) -> tzinfo:
    """An IANA zone by name (`UTC`, `America/Denver`); ValueError names an unknown one."""
    return _zone(name.strip())


@lru_cache(maxsize=32)
def _zone(name: str) -> tzinfo:
    if name.upper() in ("UTC", "Z", "GMT"):
        return timezone.utc
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {name!r}: use an IANA name such as UTC or America/Denver") from exc


def day_window(day: date, tz: tzinfo) -> tuple[datetime, datetime]:
    """[midnight of `day`, the next midnight) in `tz`, as UTC instants (23 or 25 hours across DST changes)."""
    start = datetime.combine(day, time.min, tzinfo=tz)
    end = datetime.combine(day + timedelta(days=1), time.min, tzinfo=tz)
    return start.astimezone(timezone.utc), end.astimezone(timezone.utc)


def _day_of(kind: str, m: re.Match, today: date) -> date | None:
    if kind == "relative":
        word = _SPACES.sub(" ", m.group("relative").lower())
        return today - timedelta(days=_RELATIVE_DAYS.get(word, 2))
    year = int(m.group("year"))
    month = int(m.group("month")) if kind == "numeric" else MONTHS[m.group("month").lower()]
    if not MIN_YEAR <= year <= MAX_YEAR:
        return None
    try:
        return date(year, month, int(m.group("day")))
    except ValueError:  # 2026-02-30, month 13
        return None


def _first_match(text: str, today: date) -> tuple[re.Match, date] | None:
    best: tuple[re.Match, date] | None = None
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(text):
            day = _day_of(kind, m, today)
            if day is None:
                continue
            if best is None or m.start() < best[0].start():
                best = (m, day)
            break  # later matches of this pattern start further right
    return best


def content_without(text: str, start: int, end: int) -> str:
    """The query with [start, end) and a preposition right before it removed, spaces collapsed."""
    before = text[:start]
    prep = _PREPOSITION.search(before)
    if prep:
        before = before[: prep.start()]
    rest = f"{before.rstrip(_EDGE_PUNCTUATION)} {text[end:].lstrip(_EDGE_PUNCTUATION)}"
    return _SPACE_BEFORE_MARK.sub("", _SPACES.sub(" ", rest)).strip(_EDGE_PUNCTUATION)


def extract_date_phrase(query: str | None, now: datetime, tz: tzinfo) -> DatePhrase | None:
    """The first exact date phrase of `query` as a day window in `tz`, or None."""
    if not query:
        return None
    text = query[:MAX_SCANNED]
    today = now.astimezone(tz).date()
    found = _first_match(text, today)
    if found is None:
        return None
    m, day = found
    start, end = day_window(day, tz)
    content = content_without(text, m.start(), m.end()) + query[MAX_SCANNED:]
    return DatePhrase(start=start, end=end, phrase=m.group(0), content_query=content.strip(), day=day)
