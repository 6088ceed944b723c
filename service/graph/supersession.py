"""Supersession state, stored on the superseded memory (so recall filters on it inside the engine):
the entry an INVALIDATED_BY / EVOLVED_INTO edge A -> B adds to A, and the painless scripts that
record and clear entries atomically per document."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from service.graph.registry import Association
from service.timeparse import parse_iso_datetime


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


# Records one supersession on the superseded memory, atomically per document. The list keeps write
# order, so the newest edge is last ("newest edge wins"); re-posting the same (by, type) moves it last but keeps its first time unless
# an explicit time is given. superseded_at is the EARLIEST time — the moment the memory stopped being
# current — so recall filters with one range clause. Times are fixed-width strings (state_time),
# so compareTo is chronological.
RECORD_SUPERSESSION = """
List l = ctx._source.supersessions;
if (l == null) { l = new ArrayList(); }
String keptAt = null;
for (int i = l.size() - 1; i >= 0; i--) {
  Map e = l.get(i);
  if (params.entry.by.equals(e.by) && params.entry.type.equals(e.type)) {
    if (keptAt == null) { keptAt = e.at; }
    l.remove(i);
  }
}
Map n = new HashMap(params.entry);
if (keptAt != null && params.keep_at) { n.at = keptAt; }
l.add(n);
ctx._source.supersessions = l;
String first = null;
for (Map e : l) { if (first == null || e.at.compareTo(first) < 0) { first = e.at; } }
ctx._source.superseded_at = first;
ctx._source.superseded_by = n.by;
ctx._source.supersede_type = n.type;
if (params.t_invalid != null) { ctx._source.t_invalid = params.t_invalid; }
"""

# Drops the entries whose superseding memory was deleted and recomputes the summary fields.
CLEAR_SUPERSESSIONS = """
List l = ctx._source.supersessions;
if (l == null) { ctx.op = 'noop'; return; }
for (int i = l.size() - 1; i >= 0; i--) {
  Map e = l.get(i);
  if (params.ids.contains(e.by)) { l.remove(i); }
}
if (l.isEmpty()) {
  ctx._source.remove('supersessions');
  ctx._source.remove('superseded_at');
  ctx._source.remove('superseded_by');
  ctx._source.remove('supersede_type');
} else {
  String first = null;
  for (Map e : l) { if (first == null || e.at.compareTo(first) < 0) { first = e.at; } }
  Map last = l.get(l.size() - 1);
  ctx._source.superseded_at = first;
  ctx._source.superseded_by = last.by;
  ctx._source.supersede_type = last.type;
}
"""
