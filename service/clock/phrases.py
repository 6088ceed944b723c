"""Dates inside a recall query, as each surface takes them (the mentions of service/clock/mentions.py).

- `extract_date_phrase` — Signet's date phrases (spec 004, POST /api/memory/recall: "Exact date
  phrases in query, such as 2026/05/13, 2026-05-13, or May 13 2026, activate temporal recall
  automatically. [...] A date plus topic uses the date as a filter and the remaining words as the
  content query") and GET /recall `parse_dates=true`: the first mention that names one whole day,
  year included (`2026-05-13`, `May 13 2026`, `yesterday`, `last Friday`; not `May 13`, `May 2026`
  or `last week`); the window is that day in the zone, and a preposition right before the phrase
  (`notes from yesterday`) goes with it.
- `query_window` — Hindsight's temporal arm (spec 002: the date extraction recall runs over the query
  text, relative to `query_timestamp`): the first mention of any kind with a window and a year
  (`on 2026-05-13`, `May 13 2026`, `last week`, `in 2022`, `last 30 days`, `before 2025-02-01`).

The zone is the caller's: RECALL_DATE_TIMEZONE for every surface (service/config.py). Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, tzinfo

from service.clock.expressions import TimeWindow
from service.clock.mentions import CALENDAR, Mention, mentions
from service.clock.periods import day_window

# Queries are bounded by the routes; this keeps the scan linear on anything longer.
MAX_SCANNED = 2000
# Years a date phrase may name: every day's window must fit in a datetime in any zone.
MIN_YEAR, MAX_YEAR = 1000, 9998
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


def content_without(text: str, start: int, end: int) -> str:
    """The query with [start, end) and a preposition right before it removed, spaces collapsed."""
    before = text[:start]
    prep = _PREPOSITION.search(before)
    if prep:
        before = before[: prep.start()]
    rest = f"{before.rstrip(_EDGE_PUNCTUATION)} {text[end:].lstrip(_EDGE_PUNCTUATION)}"
    return _SPACE_BEFORE_MARK.sub("", _SPACES.sub(" ", rest)).strip(_EDGE_PUNCTUATION)


def extract_date_phrase(query: str | None, now: datetime, tz: tzinfo) -> DatePhrase | None:
    """The first phrase of `query` naming one whole day, as that day's window in `tz`; None when there is none."""
    if not query:
        return None
    text = query[:MAX_SCANNED]
    found = next((m for m in mentions(text, now, tz, CALENDAR) if m.one_day and MIN_YEAR <= m.days.first.year <= MAX_YEAR), None)
    if found is None:
        return None
    assert found.days is not None
    start, end = day_window(found.days.first, tz)
    content = content_without(text, found.start, found.end) + query[MAX_SCANNED:]
    return DatePhrase(start=start, end=end, phrase=found.phrase, content_query=content.strip(), day=found.days.first)


def _windowed(m: Mention) -> bool:
    return (m.window[0] is not None or m.window[1] is not None) and not (m.days is not None and m.days.yearless)


def query_window(query: str | None, anchor: datetime, tz: tzinfo) -> TimeWindow | None:
    """The first time the query names that has a window, read against `anchor` in `tz`; None when none."""
    found = next((m for m in mentions((query or "")[:MAX_SCANNED], anchor, tz) if _windowed(m)), None)
    return None if found is None else TimeWindow(found.window[0], found.window[1], found.phrase)
