"""Time expressions: `time_query` (GET /recall, MCP recall_memory) and the request's time window.

A time expression is a whole parameter in AutoMem's vocabulary; the same phrases found inside a
query's text are located by service/clock/mentions.py, which resolves them here. Sources:

* AutoMem `automem/utils/time.py` (`_parse_time_expression`): the base vocabulary and its boundaries
  (calendar periods, weeks start on Monday, "last week/month/year" is the previous calendar period,
  "last N days" a rolling window ending now).
* Spec 001, "Temporal Alignment": `last|this|next` + `hour|day|week|month|year` and the absolute
  forms `before D`, `after D`, `between D and D`, `D to D` (D any ISO 8601 date or datetime).
* Spec 000, "Temporal Filtering Parameters" / "Validation Errors": explicit `start`/`end` override
  `time_query` (each its own side, as AutoMem recall.py); an unrecognised `time_query` is ignored.

Calendar periods and date-only bounds are days in the zone passed in (service/clock/periods.py; UTC,
AutoMem's reading, unless RECALL_DATE_TIMEZONE says otherwise). A calendar window ends at the first
instant of the following period (`today` = [00:00 today, 00:00 tomorrow]); AutoMem's filter keeps a
memory when start <= timestamp <= end.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo

from service.clock.instants import MAX_UTC, MIN_UTC, UTC, parse_iso, to_utc
from service.clock.periods import day_start, local_day, period

__all__ = ["TimeWindow", "parse_time_expression", "resolve_time_window", "MIN_UTC", "MAX_UTC"]

# Longer time_query strings are ignored outright: the longest expression understood ("between
# <datetime> and <datetime>") is well under 100 characters, and the cap keeps the regexes cheap.
_MAX_EXPRESSION_LENGTH = 256


@dataclass(frozen=True)
class TimeWindow:
    """A time window in UTC; either bound may be open (None). `expression` is the phrase that produced
    at least one of the bounds, None when the window comes only from explicit start/end."""

    start: datetime | None
    end: datetime | None
    expression: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "start", None if self.start is None else to_utc(self.start))
        object.__setattr__(self, "end", None if self.end is None else to_utc(self.end))

    def to_response(self) -> dict:
        """`{"start": iso|None, "end": iso|None, "expression": str|None}`, UTC as `+00:00`."""
        return {
            "start": self.start.isoformat() if self.start is not None else None,
            "end": self.end.isoformat() if self.end is not None else None,
            "expression": self.expression,
        }


# phrase -> (unit, offset): calendar periods (service/clock/periods.py gives each unit's bounds).
CALENDAR_PHRASES: dict[str, tuple[str, int]] = {
    # AutoMem time.py: today / this day, yesterday.
    "today": ("day", 0), "this day": ("day", 0), "yesterday": ("day", -1),
    # AutoMem time.py: this week; last week / past week (the calendar week before, not the last 7 days).
    "this week": ("week", 0), "last week": ("week", -1), "past week": ("week", -1),
    # AutoMem time.py: calendar months and years, "past" as an alias of "last".
    "this month": ("month", 0), "last month": ("month", -1), "past month": ("month", -1),
    "this year": ("year", 0), "last year": ("year", -1), "past year": ("year", -1),
    # Spec 001 ("last/this/next hour|day|week|month|year"), read as calendar periods like AutoMem's
    # "last week": "last day" is yesterday, "last hour" the previous clock hour.
    "last hour": ("hour", -1), "this hour": ("hour", 0), "next hour": ("hour", 1),
    "last day": ("day", -1), "next day": ("day", 1),
    "next week": ("week", 1), "next month": ("month", 1), "next year": ("year", 1),
}
# AutoMem time.py: last/past 24 and 48 hours are rolling windows ending now (no general "last N hours").
ROLLING_HOURS = {"last 24 hours": 24, "past 24 hours": 24, "last 48 hours": 48, "past 48 hours": 48}
# AutoMem time.py: "last N days" = [now - N days, now]; "past N days" is Engram's alias. ASCII digits
# only: AutoMem's int() would also take "-3" (a window in the future).
LAST_N_DAYS = re.compile(r"(?:last|past) ([0-9]+) days", re.ASCII)
_BEFORE = re.compile(r"before (.+)", re.IGNORECASE)
_AFTER = re.compile(r"after (.+)", re.IGNORECASE)
_BETWEEN = re.compile(r"between (.+?) and (.+)", re.IGNORECASE)
_TO = re.compile(r"(.+?) to (.+)", re.IGNORECASE)


def _bound(text: str, tz: tzinfo) -> tuple[datetime, bool] | None:
    """An absolute form's D: (its instant, whether it is a date alone, which starts at its midnight in tz)."""
    try:
        moment, date_only = parse_iso(text)
    except ValueError:
        return None
    return (day_start(moment.date(), tz), True) if date_only else (moment, False)


def _next_day(moment: datetime, tz: tzinfo) -> datetime:
    # "The end of a date-only day" is written the way "today" ends (the next midnight), so
    # "between D and D" equals "today" on day D.
    return day_start(local_day(moment, tz), tz, 1)


def _absolute(norm: str, tz: tzinfo) -> tuple[datetime | None, datetime | None] | None:
    match = _BETWEEN.fullmatch(norm) or _TO.fullmatch(norm)
    if match:
        low, high = _bound(match.group(1), tz), _bound(match.group(2), tz)
        if low is None or high is None:
            return None
        start, end = low[0], (_next_day(high[0], tz) if high[1] else high[0])  # a date-only upper bound is inclusive
        return (start, end) if start <= end else None  # an inverted range is not understood, never guessed at
    match = _BEFORE.fullmatch(norm)
    if match:
        bound = _bound(match.group(1), tz)
        return None if bound is None else (None, bound[0])  # "before D" excludes D: a day ends at its midnight
    match = _AFTER.fullmatch(norm)
    if match:
        bound = _bound(match.group(1), tz)
        # "after D" excludes D: a date-only D starts at the next midnight, a datetime D at itself.
        return None if bound is None else ((_next_day(bound[0], tz) if bound[1] else bound[0]), None)
    return None


def _sub_days(moment: datetime, days: int) -> datetime:
    try:
        return moment - timedelta(days=days)
    except OverflowError:  # timedelta itself, or the subtraction, is out of range
        return MIN_UTC


def _sub_hours(moment: datetime, hours: int) -> datetime:
    try:
        return moment - timedelta(hours=hours)
    except OverflowError:
        return MIN_UTC


def parse_time_expression(expr: str | None, now: datetime, tz: tzinfo = UTC) -> TimeWindow | None:
    """A `time_query` as a UTC window relative to `now`, its calendar days in `tz`.

    Case-insensitive; surrounding whitespace is ignored and inner runs count as one space. None for
    None, blank or unrecognised expressions (spec 000: ignored, not an error). Naive `now` is UTC.
    """
    if expr is None or not isinstance(expr, str):
        return None
    stripped = expr.strip()
    if not stripped or len(stripped) > _MAX_EXPRESSION_LENGTH:
        return None
    norm = " ".join(stripped.split())  # AutoMem lower-cases and strips; collapsing inner whitespace is ours
    key = norm.lower()
    now_utc = to_utc(now)
    calendar = CALENDAR_PHRASES.get(key)
    if calendar is not None:
        return TimeWindow(*period(now_utc, *calendar, tz), stripped)
    hours = ROLLING_HOURS.get(key)
    if hours is not None:
        return TimeWindow(_sub_hours(now_utc, hours), now_utc, stripped)
    match = LAST_N_DAYS.fullmatch(key)
    if match:
        return TimeWindow(_sub_days(now_utc, int(match.group(1))), now_utc, stripped)
    bounds = _absolute(norm, tz)
    return None if bounds is None else TimeWindow(bounds[0], bounds[1], stripped)


def resolve_time_window(*, start: datetime | None, end: datetime | None, time_query: str | None, now: datetime,
                        tz: tzinfo = UTC) -> TimeWindow | None:
    """The request's time window, or None when nothing bounds it.

    `time_query` is parsed first; an explicit `start` then replaces the window's start and an explicit
    `end` its end (spec 000: explicit timestamps win; AutoMem recall.py overrides each bound on its
    own, so `time_query=last week` with only `end` keeps last week's start). Explicit values are
    instants as given (service/clock/instants.py: a date alone is 00:00 UTC, as in AutoMem).

    Raises ValueError("Invalid time window: ...") when start is after end (AutoMem silently returns
    nothing; an empty window is a 400 here).
    """
    parsed = parse_time_expression(time_query, now, tz)
    from_query_start = parsed.start if parsed is not None else None
    from_query_end = parsed.end if parsed is not None else None
    window_start = start if start is not None else from_query_start
    window_end = end if end is not None else from_query_end
    if window_start is None and window_end is None:
        return None
    # The expression is reported only if it still supplies one of the bounds.
    used = (start is None and from_query_start is not None) or (end is None and from_query_end is not None)
    window = TimeWindow(window_start, window_end, parsed.expression if parsed is not None and used else None)
    if window.start is not None and window.end is not None and window.start > window.end:
        raise ValueError(f"Invalid time window: start {window.start.isoformat()} is after end {window.end.isoformat()}")
    return window
