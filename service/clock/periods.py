"""Days and calendar periods in a time zone: the one rule for "today", "yesterday", "last week".

Every reader passes its zone explicitly: a request's dates are read in RECALL_DATE_TIMEZONE (default
UTC), a memory's own content in UTC against its timestamp (its `date_terms` are stored, so they must
not move with a setting). The rule, whatever the zone:

- today is the calendar day `now` falls on in the zone; yesterday the day before; a day is
  [its midnight, the next midnight) in the zone (23 or 25 hours across DST changes);
- weeks start on Monday (AutoMem time.py "this week"); "last week" is the previous calendar week,
  "last month" the previous calendar month, "last year" the previous calendar year;
- an hour is the clock hour in the zone.

Bounds beyond what a datetime holds are clamped to MIN_UTC / MAX_UTC (AutoMem would raise
OverflowError, a 500, for "next year" in 9999). Pure: no I/O, no clock.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta, tzinfo
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from service.clock.instants import MAX_UTC, MIN_UTC, UTC, to_utc

UNITS = ("hour", "day", "week", "month", "year")


def zone(name: str) -> tzinfo:
    """An IANA zone by name (`UTC`, `America/Denver`); ValueError names an unknown one."""
    return _zone(name.strip())


@lru_cache(maxsize=32)
def _zone(name: str) -> tzinfo:
    if name.upper() in ("UTC", "Z", "GMT"):
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {name!r}: use an IANA name such as UTC or America/Denver") from exc


def local_day(moment: datetime, tz: tzinfo) -> date:
    """The calendar day `moment` falls on in `tz` (a naive moment is UTC)."""
    return to_utc(moment).astimezone(tz).date()


def day_start(day: date, tz: tzinfo, shift: int = 0) -> datetime:
    """Midnight (in `tz`) of the day `shift` days after `day`, as a UTC instant, clamped to the calendar."""
    try:
        target = day + timedelta(days=shift)
    except OverflowError:
        return MIN_UTC if shift < 0 else MAX_UTC
    try:
        return datetime.combine(target, time.min, tzinfo=tz).astimezone(UTC)
    except OverflowError:  # the first or last day of the calendar, in a zone east or west of UTC
        return MIN_UTC if target.year == date.min.year else MAX_UTC


def day_window(day: date, tz: tzinfo) -> tuple[datetime, datetime]:
    """[midnight of `day`, the next midnight) in `tz`, as UTC instants."""
    return day_start(day, tz), day_start(day, tz, 1)


def days_window(first: date, last: date, tz: tzinfo) -> tuple[datetime, datetime]:
    """The days first..last (inclusive) in `tz`: [midnight of first, midnight after last)."""
    return day_start(first, tz), day_start(last, tz, 1)


def _month_start(year: int, month_index: int, tz: tzinfo) -> datetime:
    """Midnight of the 1st of the month `month_index` months after January of `year` (may be < 0)."""
    y, m0 = divmod(month_index, 12)
    y += year
    if y < date.min.year:
        return MIN_UTC
    if y > date.max.year:
        return MAX_UTC
    return day_start(date(y, m0 + 1, 1), tz)


def _add(moment: datetime, delta: timedelta) -> datetime:
    try:
        return moment + delta
    except OverflowError:
        return MAX_UTC if delta > timedelta(0) else MIN_UTC


def period(now: datetime, unit: str, offset: int, tz: tzinfo) -> tuple[datetime, datetime]:
    """The calendar `unit` containing `now` in `tz`, shifted by `offset` units (-1 last, 0 this, +1 next):
    [start, end) as UTC instants."""
    if unit == "hour":
        # Spec 001 ("this hour"): the clock hour, by analogy with AutoMem's start_of_day.
        floor = to_utc(to_utc(now).astimezone(tz).replace(minute=0, second=0, microsecond=0))
        return _add(floor, timedelta(hours=offset)), _add(floor, timedelta(hours=offset + 1))
    today = local_day(now, tz)
    if unit == "day":
        return day_start(today, tz, offset), day_start(today, tz, offset + 1)
    if unit == "week":
        monday = -today.weekday()
        return day_start(today, tz, monday + 7 * offset), day_start(today, tz, monday + 7 * (offset + 1))
    if unit == "month":
        index = today.month - 1 + offset
        return _month_start(today.year, index, tz), _month_start(today.year, index + 1, tz)
    if unit == "year":
        return _month_start(today.year + offset, 0, tz), _month_start(today.year + offset + 1, 0, tz)
    raise AssertionError(f"unknown unit {unit!r}")  # pragma: no cover - internal misuse


def period_days(today: date, unit: str, offset: int) -> tuple[date, date] | None:
    """The calendar `unit` (day, week, month, year) containing `today`, shifted by `offset`: its first
    and last days; None beyond the calendar."""
    try:
        if unit == "day":
            d = today + timedelta(days=offset)
            return d, d
        if unit == "week":
            monday = today - timedelta(days=today.weekday()) + timedelta(weeks=offset)
            return monday, monday + timedelta(days=6)
        if unit == "month":
            y, m0 = divmod(today.month - 1 + offset, 12)
            first = date(today.year + y, m0 + 1, 1)
            return first, month_last(first)
        if unit == "year":
            return date(today.year + offset, 1, 1), date(today.year + offset, 12, 31)
    except (ValueError, OverflowError):
        return None
    raise AssertionError(f"unknown unit {unit!r}")  # pragma: no cover - internal misuse


def next_month(d: date) -> date | None:
    """The first day of the month after d's; None after December 9999 (the calendar's last)."""
    if d.month < 12:
        return date(d.year, d.month + 1, 1)
    return date(d.year + 1, 1, 1) if d.year < date.max.year else None


def month_last(d: date) -> date:
    """The last day of d's month."""
    nxt = next_month(d)
    return nxt - timedelta(days=1) if nxt else date.max
