"""Temporal recall (spec 004): a date phrase in the query or a `time` object -> window, facets, mode.

- A `time` object wins (`source: "request"`): its start/end (validated instants, models.TimeOptions)
  bound the window, its facets (default: all six) say which stored times must fall in it, `mode`
  auto|timeline|filter.
- Otherwise the first phrase of the query naming one whole day (service/clock/phrases.py, the
  detector every surface shares) becomes that day's window in RECALL_DATE_TIMEZONE (`source:
  "query"`) and the rest of the query the content query.
- mode `auto` is `timeline` when no content query is left (the window's memories in time order)
  and `filter` otherwise (the content query ranked inside the window).

Pure: `now` and the zone come in; ValueError messages are fit for a 400.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo
from typing import Any

from service.api.signet.models import TimeOptions
from service.clock.instants import stored_datetime
from service.clock.phrases import extract_date_phrase
from service.clock.terms import memory_date_terms, window_terms

# The facets a date phrase (or a `time` without facets) searches, in the order spec 004's example reports them.
DEFAULT_FACETS = ("session", "source", "occurred", "observed", "valid", "captured")


def js_iso(dt: datetime) -> str:
    """A UTC instant as JavaScript's toISOString writes it (Signet's wire format): 2026-05-13T06:00:00.000Z."""
    return dt.astimezone(timezone.utc).replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"


@dataclass(frozen=True)
class Temporal:
    mode: str  # timeline | filter
    source: str  # query | request
    original_query: str
    content_query: str
    start: datetime | None
    end: datetime | None
    facets: tuple[str, ...]
    phrase: str | None = None

    def to_meta(self) -> dict[str, Any]:
        return {
            "mode": self.mode, "source": self.source, "originalQuery": self.original_query, "contentQuery": self.content_query,
            "start": js_iso(self.start) if self.start else None, "end": js_iso(self.end) if self.end else None,
            "facets": list(self.facets),
        }


def resolve(query: str, time: TimeOptions | None, now: datetime, tz: tzinfo) -> Temporal | None:
    """The temporal side of a recall, or None when neither the query nor `time` names a window."""
    if time is not None:
        start, end = time.start, time.end
        if start and end and start > end:
            raise ValueError(f"time: start {start.isoformat()} is after end {end.isoformat()}")
        if start is None and end is None:
            return None
        facets = tuple(dict.fromkeys(time.facets or DEFAULT_FACETS))
        return Temporal(_mode(time.mode, query), "request", query, query, start, end, facets)
    phrase = extract_date_phrase(query, now, tz)
    if phrase is None:
        return None
    return Temporal(_mode("auto", phrase.content_query), "query", query, phrase.content_query, phrase.start, phrase.end, DEFAULT_FACETS, phrase.phrase)


def _mode(mode: str, content: str) -> str:
    if mode != "auto":
        return mode
    return "filter" if content.strip() else "timeline"


def facet_of(memory: Mapping[str, Any], t: Temporal) -> tuple[str, str | None, str | None] | None:
    """Which facet put a returned memory in the window: (facet, its start, its end), as Signet reports
    temporal_facet / temporal_start_at / temporal_end_at. `captured` is a point (start = end)."""
    ts = stored_datetime(memory.get("timestamp"))
    if "captured" in t.facets and ts is not None and _inside(ts, t.start, t.end):
        return "captured", js_iso(ts), js_iso(ts)
    valid_from, valid_to = stored_datetime(memory.get("t_valid")), stored_datetime(memory.get("t_invalid"))
    if "valid" in t.facets and valid_from is not None and (t.end is None or valid_from < t.end) and (
        valid_to is None or t.start is None or valid_to > t.start
    ):
        return "valid", js_iso(valid_from), js_iso(valid_to) if valid_to else None
    if "occurred" in t.facets:
        # The dates it was written on or speaks of: the stored date_terms, which no response shows,
        # are what memory_date_terms gives for its content and timestamp.
        met = set(memory_date_terms(memory.get("content"), ts)) & set(window_terms(t.start, t.end))
        if met:
            days = sorted(term[2:] for term in met if term.startswith("d:"))
            if not days:  # a whole month or year of the window
                return "occurred", js_iso(t.start), js_iso(t.end)
            first = datetime.fromisoformat(days[0]).replace(tzinfo=timezone.utc)
            last = datetime.fromisoformat(days[-1]).replace(tzinfo=timezone.utc) + timedelta(days=1)
            return "occurred", js_iso(first), js_iso(last)
    return None


def _inside(at: datetime, start: datetime | None, end: datetime | None) -> bool:
    return (start is None or at >= start) and (end is None or at < end)

