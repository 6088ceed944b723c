"""Instants: the one reading of an ISO 8601 time, in a request or a stored document, and the one writing.

- `parse_iso_datetime` reads an ISO 8601 date or datetime into an aware UTC datetime: `Z`, numeric
  offsets (converted to UTC), no offset (taken as UTC, as AutoMem's time.py), a date alone (00:00 UTC
  that day), fractional seconds, lower-case `t`/`z` (RFC 3339), the basic format (20250115T100000Z).
  Anything else is a ValueError whose message is fit for a 400.
- `Instant` is that reading as a pydantic type, for every request model: the field's name comes with
  the error (`timestamp: 'soon' is not a valid ISO 8601 date or datetime`), a 400 on AutoMem's and
  Signet's routes and a 422 on Hindsight's, as each surface answers invalid input. Numbers are
  refused (a unix time is not ISO 8601; pydantic's own datetime would take one).
- `instant_param` is the same reading for a value that is no model field (a route's query
  parameter): None when absent, BadRequest naming it otherwise.
- `iso` writes every stored time: ISO 8601 in UTC, `+00:00`.
"""

from __future__ import annotations

from functools import lru_cache

from datetime import date, datetime, timedelta, timezone
from typing import Annotated, Any

from pydantic import PlainSerializer, PlainValidator, WithJsonSchema
from pydantic_core import PydanticCustomError

from service.errors import BadRequest

UTC = timezone.utc
_ZERO = timedelta(0)
# Bounds of what a datetime holds: windows that would fall outside are clamped to them.
MIN_UTC = datetime.min.replace(tzinfo=UTC)
MAX_UTC = datetime.max.replace(tzinfo=UTC)
# The longest instant a request may give ("2025-01-15T10:30:00.123456789+05:30" is 35 characters).
MAX_INSTANT_CHARS = 64
# How much of a rejected value is echoed back in an error message.
_MAX_ECHO = 64


def _echo(value: str) -> str:
    return repr(value if len(value) <= _MAX_ECHO else value[:_MAX_ECHO] + "...")


def parse_iso(value: object) -> tuple[datetime, bool]:
    """An ISO 8601 date or datetime: (aware UTC datetime, whether it was a date alone)."""
    if not isinstance(value, str):
        raise ValueError(f"expected an ISO 8601 string, got {type(value).__name__}")
    candidate = value.strip()  # AutoMem time.py (_normalize_timestamp) strips, and refuses an empty one
    if not candidate:
        raise ValueError("empty timestamp; expected an ISO 8601 date or datetime")
    # RFC 3339 section 5.6 allows lower-case "t" and "z"; ISO 8601's only letters are T, Z and W, so
    # upper-casing is safe, and fromisoformat wants upper case.
    candidate = candidate.upper()
    try:
        # Python 3.11: "Z", offsets, fractional seconds (beyond 6 digits truncated), date-only, basic format.
        parsed = datetime.fromisoformat(candidate)
    except ValueError:
        raise ValueError(f"{_echo(value)} is not a valid ISO 8601 date or datetime") from None
    try:
        date.fromisoformat(candidate)
        date_only = True
    except ValueError:
        date_only = False
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)  # AutoMem time.py: "assume UTC if naive"
    try:
        parsed = parsed.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"{_echo(value)} is out of range once converted to UTC") from None
    return parsed, date_only


def parse_iso_datetime(value: str) -> datetime:
    """An ISO 8601 date or datetime as an aware UTC datetime; ValueError (fit for a 400) otherwise."""
    return parse_iso(value)[0]


def to_utc(value: datetime) -> datetime:
    """Naive means UTC (the same rule as parse_iso_datetime)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def utcnow() -> datetime:
    return datetime.now(UTC)


def iso(dt: datetime) -> str:
    """How every time is stored: ISO 8601 in UTC."""
    return dt.astimezone(UTC).isoformat()


def iso_or_none(dt: datetime | None) -> str | None:
    return None if dt is None else iso(dt)


def stored_datetime(value: object) -> datetime | None:
    """A time read back from a stored document: None when missing or unparseable."""
    if not value:
        return None
    if isinstance(value, str):
        return _stored_text(value)
    try:
        return parse_iso_datetime(str(value))
    except ValueError:
        return None


# Cached: a recall reads two times for each of ~150 candidates, and the same memories (and the same
# session times) come back recall after recall. datetimes are immutable, so sharing them is safe.
@lru_cache(maxsize=65536)
def _stored_text(value: str) -> datetime | None:
    # Stored times were normalised when written, so fromisoformat alone reads them; anything else takes
    # the full parser's path.
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
        return parse_iso_datetime(value)
    except ValueError:
        return None


def to_instant(value: Any) -> datetime:
    """A request's instant: an ISO 8601 string (at most MAX_INSTANT_CHARS), or a datetime built by the
    service itself. ValueError otherwise."""
    if isinstance(value, datetime):
        return to_utc(value)
    if isinstance(value, str) and len(value) > MAX_INSTANT_CHARS:
        raise ValueError(f"{_echo(value)} is longer than an ISO 8601 instant ({MAX_INSTANT_CHARS} characters at most)")
    return parse_iso_datetime(value)


def _validated(value: Any) -> datetime:
    try:
        return to_instant(value)
    except ValueError as exc:
        raise PydanticCustomError("iso_instant", "{reason}", {"reason": str(exc)}) from None


def _validated_or_blank(value: Any) -> datetime | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    return _validated(value)


_SCHEMA = {"type": "string", "format": "date-time", "description": "ISO 8601 (no offset: UTC; a date alone: 00:00 UTC)"}
_AS_ISO = PlainSerializer(iso, return_type=str, when_used="json-unless-none")
# An ISO 8601 instant, as an aware UTC datetime. `Instant | None` for an optional one.
Instant = Annotated[datetime, PlainValidator(_validated), _AS_ISO, WithJsonSchema(_SCHEMA)]
# The same, where an empty string means "not given" (Signet's clients send "" for no bound).
InstantOrBlank = Annotated[datetime | None, PlainValidator(_validated_or_blank), _AS_ISO, WithJsonSchema({**_SCHEMA, "nullable": True})]


def instant_param(name: str, value: str | None, *, hint: str = "") -> datetime | None:
    """A query parameter or a dict field read as an instant: None when absent or empty, BadRequest
    naming `name` (then `hint`) when it is not one."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        return to_instant(value)
    except ValueError as exc:
        raise BadRequest(f"Invalid {name}{hint}: {exc}") from None
