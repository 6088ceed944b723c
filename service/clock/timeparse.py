"""Time windows for ``GET /recall``: ISO timestamps and natural-language ``time_query`` expressions.

Pure standard library, no I/O. Everything is computed in UTC from an injected ``now`` so that
the results are deterministic and testable.

Sources:

* AutoMem ``automem/utils/time.py`` (``_parse_time_expression``, ``_normalize_timestamp``):
  the base vocabulary and its boundaries (calendar periods in UTC, weeks start on Monday,
  "last week/month/year" is the previous calendar period, "last N days" is a rolling window).
* Spec 001, "Temporal Alignment": ``last|this|next`` + ``hour|day|week|month|year`` and the
  absolute forms ``before D``, ``after D``, ``between D and D``, ``D to D``.
* Spec 000, "Temporal Filtering Parameters" / "Validation Errors": explicit ``start``/``end``
  override ``time_query``; an invalid ``start``/``end`` is a 400; an unrecognised
  ``time_query`` is ignored, not an error.

Window semantics. A calendar window is reported the way AutoMem reports it: ``end`` is the first
instant of the *following* period (``today`` = ``[00:00 today, 00:00 tomorrow]``). AutoMem's
filter (``_result_passes_filters``) keeps a memory when ``start <= timestamp <= end``, i.e. both
bounds inclusive; whoever builds the OpenSearch range filter decides whether to copy that.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone

__all__ = [
    "TimeWindow",
    "parse_iso_datetime",
    "parse_time_expression",
    "resolve_time_window",
    "stored_datetime",
    "iso",
]

UTC = timezone.utc
_ZERO = timedelta(0)

# Engram choice: bounds that fall outside what ``datetime`` can hold are clamped to these
# (AutoMem would raise OverflowError, a 500, for e.g. "last 1000000000 days").
MIN_UTC = datetime.min.replace(tzinfo=UTC)
MAX_UTC = datetime.max.replace(tzinfo=UTC)

# Engram choice: longer time_query strings are ignored outright; the longest expression we
# understand ("between <datetime> and <datetime>") is well under 100 characters, and the cap
# keeps the regexes and int() below cheap on hostile input.
_MAX_EXPRESSION_LENGTH = 256

# Engram choice: how much of a rejected value is echoed back in an error message.
_MAX_ECHO = 64


# --------------------------------------------------------------------------------------------
# ISO 8601
# --------------------------------------------------------------------------------------------


def _echo(value: str) -> str:
    text = value if len(value) <= _MAX_ECHO else value[:_MAX_ECHO] + "..."
    return repr(text)


def _parse_iso(value: object) -> tuple[datetime, bool]:
    """Parse an ISO 8601 date or datetime; return (aware UTC datetime, was_date_only)."""
    if not isinstance(value, str):
        raise ValueError(f"expected an ISO 8601 string, got {type(value).__name__}")
    # AutoMem time.py (_normalize_timestamp): surrounding whitespace is stripped.
    candidate = value.strip()
    if not candidate:
        # AutoMem time.py (_normalize_timestamp): an empty timestamp is rejected.
        raise ValueError("empty timestamp; expected an ISO 8601 date or datetime")
    # Engram choice (RFC 3339 section 5.6 allows lower-case "t" and "z"): ISO 8601's only
    # letters are T, Z and W, so upper-casing is safe, and fromisoformat wants upper case.
    candidate = candidate.upper()
    try:
        # Python 3.11 fromisoformat: "Z", offsets, fractional seconds (more than 6 digits are
        # truncated to microseconds), date-only, and the basic format (20250115T100000Z).
        parsed = datetime.fromisoformat(candidate)
    except ValueError:
        raise ValueError(f"{_echo(value)} is not a valid ISO 8601 date or datetime") from None
    try:
        date.fromisoformat(candidate)
        date_only = True
    except ValueError:
        date_only = False
    if parsed.tzinfo is None:
        # AutoMem time.py (_parse_iso_datetime): "assume UTC if naive".
        parsed = parsed.replace(tzinfo=UTC)
    try:
        # AutoMem time.py (_normalize_timestamp): normalised to UTC.
        parsed = parsed.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"{_echo(value)} is out of range once converted to UTC") from None
    return parsed, date_only


def parse_iso_datetime(value: str) -> datetime:
    """Parse an ISO 8601 date or datetime into an aware UTC ``datetime``.

    Accepts a date alone (``2025-01-15`` means 00:00 UTC that day), a datetime with or without
    seconds and fractional seconds, ``Z`` or a numeric offset (converted to UTC), or no offset
    (taken as UTC). Surrounding whitespace is ignored.

    Raises ``ValueError`` with a message fit for a 400 response on anything else.
    """
    return _parse_iso(value)[0]


# --------------------------------------------------------------------------------------------
# The window
# --------------------------------------------------------------------------------------------


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def iso(dt: datetime) -> str:
    """How every timestamp is stored: ISO 8601 in UTC."""
    return dt.astimezone(UTC).isoformat()


def stored_datetime(value: object) -> datetime | None:
    """A timestamp read back from a stored document: None when missing or unparseable."""
    if not value:
        return None
    # Stored timestamps were normalised when written, so fromisoformat alone reads them (this runs
    # twice per recall candidate); anything else takes the full parser's path.
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            pass
        else:
            if parsed.tzinfo is None:
                return parsed.replace(tzinfo=UTC)
            if parsed.utcoffset() == _ZERO:
                return parsed if parsed.tzinfo is UTC else parsed.replace(tzinfo=UTC)
    try:
        return parse_iso_datetime(str(value))
    except ValueError:
        return None


def _to_utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        # Same rule as parse_iso_datetime (AutoMem time.py): naive means UTC.
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def _as_utc(value: datetime | None) -> datetime | None:
    return None if value is None else _to_utc(value)


@dataclass(frozen=True)
class TimeWindow:
    """A time window in UTC. Either bound may be open (``None``).

    ``expression`` is the ``time_query`` (stripped) that produced at least one of the bounds,
    or ``None`` when the window comes only from explicit ``start``/``end``.
    """

    start: datetime | None
    end: datetime | None
    expression: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "start", _as_utc(self.start))
        object.__setattr__(self, "end", _as_utc(self.end))

    def to_response(self) -> dict:
        """``{"start": iso|None, "end": iso|None, "expression": str|None}``, UTC as ``+00:00``."""
        return {
            "start": self.start.isoformat() if self.start is not None else None,
            "end": self.end.isoformat() if self.end is not None else None,
            "expression": self.expression,
        }


# --------------------------------------------------------------------------------------------
# Calendar arithmetic (UTC, clamped to MIN_UTC..MAX_UTC)
# --------------------------------------------------------------------------------------------


def _add(dt: datetime, delta: timedelta) -> datetime:
    try:
        return dt + delta
    except OverflowError:
        return MAX_UTC if delta > timedelta(0) else MIN_UTC


def _sub_days(dt: datetime, days: int) -> datetime:
    try:
        return dt - timedelta(days=days)
    except OverflowError:  # timedelta itself, or the subtraction, is out of range
        return MIN_UTC


def _month_start(year: int, month_index: int) -> datetime:
    """First instant of the month ``month_index`` months after January of ``year`` (may be <0)."""
    y, m0 = divmod(month_index, 12)
    y += year
    if y < MIN_UTC.year:
        return MIN_UTC
    if y > MAX_UTC.year:
        return MAX_UTC
    return datetime(y, m0 + 1, 1, tzinfo=UTC)


def _period(now: datetime, unit: str, offset: int) -> tuple[datetime, datetime]:
    """The calendar ``unit`` containing ``now``, shifted by ``offset`` units: ``[start, end)``.

    ``offset`` is -1 for "last", 0 for "this", +1 for "next".
    """
    if unit in ("hour", "day", "week"):
        if unit == "hour":
            # Spec 001 ("this hour"): the clock hour, by analogy with AutoMem's start_of_day.
            floor = now.replace(minute=0, second=0, microsecond=0)
            step = timedelta(hours=1)
        elif unit == "day":
            # AutoMem time.py (start_of_day): a day starts at 00:00 UTC.
            floor = now.replace(hour=0, minute=0, second=0, microsecond=0)
            step = timedelta(days=1)
        else:
            # AutoMem time.py ("this week"): weeks start on Monday (datetime.weekday() == 0).
            midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
            floor = _add(midnight, -timedelta(days=now.weekday()))
            step = timedelta(days=7)
        return _add(floor, step * offset), _add(floor, step * (offset + 1))
    if unit == "month":
        # AutoMem time.py ("this month"/"last month"): from the 1st at 00:00 UTC to the next
        # 1st, rolling the year over December -> January.
        index = now.month - 1 + offset
        return _month_start(now.year, index), _month_start(now.year, index + 1)
    if unit == "year":
        # AutoMem time.py ("this year"/"last year"): January 1st 00:00 UTC to the next one.
        return _month_start(now.year + offset, 0), _month_start(now.year + offset + 1, 0)
    raise AssertionError(f"unknown unit {unit!r}")  # pragma: no cover - internal misuse


# --------------------------------------------------------------------------------------------
# Vocabulary
# --------------------------------------------------------------------------------------------

# phrase -> (unit, offset) for calendar periods; see _period for each unit's boundaries.
_CALENDAR_PHRASES: dict[str, tuple[str, int]] = {
    # AutoMem time.py: {"today", "this day"} = today's UTC day.
    "today": ("day", 0),
    "this day": ("day", 0),
    # AutoMem time.py: {"yesterday"} = the previous UTC day.
    "yesterday": ("day", -1),
    # AutoMem time.py: {"this week"} / {"last week", "past week"} = this / the previous
    # Monday-to-Monday calendar week (not the last 7 days).
    "this week": ("week", 0),
    "last week": ("week", -1),
    "past week": ("week", -1),
    # AutoMem time.py: {"this month"} / {"last month", "past month"} = calendar months.
    "this month": ("month", 0),
    "last month": ("month", -1),
    "past month": ("month", -1),
    # AutoMem time.py: {"this year"} / {"last year", "past year"} = calendar years.
    "this year": ("year", 0),
    "last year": ("year", -1),
    "past year": ("year", -1),
    # Spec 001 ("Relative: last/this/next hour|day|week|month|year"); "last" and "this" read as
    # calendar periods, exactly like AutoMem's "last week"/"this week", so "last day" is
    # "yesterday" and "last hour" is the previous clock hour.
    "last hour": ("hour", -1),
    "this hour": ("hour", 0),
    "next hour": ("hour", 1),
    "last day": ("day", -1),
    "next day": ("day", 1),
    "next week": ("week", 1),
    "next month": ("month", 1),
    "next year": ("year", 1),
}

# AutoMem time.py: {"last 24 hours", "past 24 hours"} and {"last 48 hours", "past 48 hours"}
# are rolling windows ending at now. AutoMem has no general "last N hours".
_ROLLING_HOURS = {
    "last 24 hours": 24,
    "past 24 hours": 24,
    "last 48 hours": 48,
    "past 48 hours": 48,
}

# AutoMem time.py: "last N days" = [now - N days, now] (rolling). "past N days" is Engram's
# addition, asked for by the brief (AutoMem only reads "last"). ASCII digits only: AutoMem's
# int() would also take "-3" (a window in the future) and "+3", which we do not.
_LAST_N_DAYS = re.compile(r"(?:last|past) ([0-9]+) days", re.ASCII)

# Spec 001 ("Absolute: before 2025-02-01, after 2025-01-15", "Range: between 2025-01-15 and
# 2025-01-20", "Range: 2025-01-15 to 2025-01-20"). D is any ISO 8601 date or datetime.
_BEFORE = re.compile(r"before (.+)", re.IGNORECASE)
_AFTER = re.compile(r"after (.+)", re.IGNORECASE)
_BETWEEN = re.compile(r"between (.+?) and (.+)", re.IGNORECASE)
_TO = re.compile(r"(.+?) to (.+)", re.IGNORECASE)


def _bound(text: str) -> tuple[datetime, bool] | None:
    try:
        return _parse_iso(text)
    except ValueError:
        return None


def _day_after(dt: datetime) -> datetime:
    # Engram choice: "the end of a date-only day" is written the way AutoMem writes the end of
    # "today" (time.py end_of_day = next 00:00), so "between D and D" equals "today" on day D.
    return _add(dt, timedelta(days=1))


def _absolute(norm: str) -> tuple[datetime | None, datetime | None] | None:
    match = _BETWEEN.fullmatch(norm) or _TO.fullmatch(norm)
    if match:
        low, high = _bound(match.group(1)), _bound(match.group(2))
        if low is None or high is None:
            return None
        start = low[0]  # a date-only lower bound starts at 00:00 UTC that day
        # Spec 001 / brief: a date-only upper bound is inclusive, to the end of that day.
        end = _day_after(high[0]) if high[1] else high[0]
        if start > end:
            # Engram choice: an inverted range is not understood (ignored), never guessed at.
            return None
        return start, end
    match = _BEFORE.fullmatch(norm)
    if match:
        bound = _bound(match.group(1))
        if bound is None:
            return None
        # Engram choice: "before D" excludes D, so a date-only D ends at 00:00 of D.
        return None, bound[0]
    match = _AFTER.fullmatch(norm)
    if match:
        bound = _bound(match.group(1))
        if bound is None:
            return None
        # Engram choice: "after D" excludes D, so a date-only D starts at 00:00 the next day;
        # a datetime D starts at D itself.
        return (_day_after(bound[0]) if bound[1] else bound[0]), None
    return None


def parse_time_expression(expr: str | None, now: datetime) -> TimeWindow | None:
    """Turn a ``time_query`` into a UTC ``TimeWindow`` relative to ``now``.

    Case-insensitive; surrounding whitespace is ignored and runs of inner whitespace count as
    one space. Returns ``None`` for ``None``, blank or unrecognised expressions: spec 000 says an
    unrecognised ``time_query`` is ignored, not an error. ``now`` is converted to UTC (naive is
    taken as UTC); all calendar boundaries are UTC, as in AutoMem.
    """
    if expr is None or not isinstance(expr, str):
        return None
    stripped = expr.strip()
    if not stripped or len(stripped) > _MAX_EXPRESSION_LENGTH:
        return None
    # AutoMem time.py lower-cases and strips; collapsing inner whitespace is Engram's addition.
    norm = " ".join(stripped.split())
    key = norm.lower()
    now_utc = _to_utc(now)

    period = _CALENDAR_PHRASES.get(key)
    if period is not None:
        start, end = _period(now_utc, *period)
        return TimeWindow(start, end, stripped)

    hours = _ROLLING_HOURS.get(key)
    if hours is not None:
        return TimeWindow(_add(now_utc, -timedelta(hours=hours)), now_utc, stripped)

    match = _LAST_N_DAYS.fullmatch(key)
    if match:
        return TimeWindow(_sub_days(now_utc, int(match.group(1))), now_utc, stripped)

    bounds = _absolute(norm)
    if bounds is not None:
        return TimeWindow(bounds[0], bounds[1], stripped)
    return None


# --------------------------------------------------------------------------------------------
# Request-level resolution
# --------------------------------------------------------------------------------------------


def _explicit(name: str, value: str | None) -> datetime | None:
    # AutoMem recall.py (`if start_param:`): an absent or empty parameter is no bound; a
    # whitespace-only one is invalid (AutoMem's _normalize_timestamp rejects it too).
    if value is None or value == "":
        return None
    try:
        return parse_iso_datetime(value)
    except ValueError as exc:
        # Spec 000 "Validation Errors": invalid start or end -> 400; the message names it.
        raise ValueError(f"Invalid {name}: {exc}") from None


def resolve_time_window(
    *,
    start: str | None,
    end: str | None,
    time_query: str | None,
    now: datetime,
) -> TimeWindow | None:
    """The request's time window, or ``None`` when nothing bounds it.

    ``time_query`` is parsed first; then an explicit ``start`` replaces the window's start and
    an explicit ``end`` replaces its end (spec 000: explicit timestamps override natural
    language; AutoMem recall.py overrides each bound separately, so ``time_query=last week``
    with only ``end`` keeps last week's start). Explicit values are taken as given: a
    date-only ``end`` means 00:00 that day, as in AutoMem.

    Raises ``ValueError("Invalid start: ...")`` / ``ValueError("Invalid end: ...")`` for a bad
    timestamp and ``ValueError("Invalid time window: ...")`` when start is after end.
    """
    explicit_start = _explicit("start", start)
    explicit_end = _explicit("end", end)
    parsed = parse_time_expression(time_query, now)

    from_query_start = parsed.start if parsed is not None else None
    from_query_end = parsed.end if parsed is not None else None
    window_start = explicit_start if explicit_start is not None else from_query_start
    window_end = explicit_end if explicit_end is not None else from_query_end
    if window_start is None and window_end is None:
        return None

    # The expression is reported only if it still supplies one of the bounds.
    used_expression = (explicit_start is None and from_query_start is not None) or (
        explicit_end is None and from_query_end is not None
    )
    expression = parsed.expression if parsed is not None and used_expression else None
    window = TimeWindow(window_start, window_end, expression)
    if window.start is not None and window.end is not None and window.start > window.end:
        # Engram choice (AutoMem silently returns nothing here): an empty window is a 400.
        raise ValueError(
            f"Invalid time window: start {window.start.isoformat()} is after "
            f"end {window.end.isoformat()}"
        )
    return window
