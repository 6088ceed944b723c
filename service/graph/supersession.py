"""Supersession state, stored on the superseded memory (so recall filters on it inside the engine):
the entry an INVALIDATED_BY / EVOLVED_INTO edge A -> B adds to A, and the painless scripts that
record and clear entries atomically per document."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from service.graph.registry import Association
from service.clock.instants import parse_iso_datetime


def state_time(moment: datetime) -> str:
    """A fixed-width UTC ISO time (always microseconds, always +00:00): supersession times are compared
    as strings by the painless script that maintains them, which is only right with one width."""
    utc = moment.astimezone(timezone.utc)
    # strftime's %Y does not pad years before 1000 ("999-..."), which the engine's date field refuses.
    return f"{utc.year:04d}-" + utc.strftime("%m-%dT%H:%M:%S.%f+00:00")


def supersession_entry(assoc: Association, now: datetime) -> tuple[dict[str, Any], bool]:
    """The entry stored on the superseded memory (assoc.source_id) and whether a re-post keeps the
    original time: an explicit INVALIDATED_BY timestamp sets the time, otherwise the first write does."""
    explicit = assoc.properties.get("timestamp")
    at = state_time(parse_iso_datetime(explicit)) if explicit else state_time(now)
    return {"by": assoc.target_id, "type": assoc.type, "at": at, "strength": assoc.strength}, not explicit


