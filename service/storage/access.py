"""Access tracking's rule, as a file system's relatime: a memory's `last_accessed` is rewritten only
when it is older than RECALL_ACCESS_RESOLUTION_SECONDS. Pure but for the lock of RecentAccesses."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from datetime import datetime

from service.clock.instants import stored_datetime

# Accesses recorded by this process that are remembered (the oldest forgotten first); more than the
# memories a process recalls from within one resolution on any store measured.
RECENT_ACCESSES = 65_536


def access_is_stale(stored: str | None, now: datetime, resolution_s: float) -> bool:
    """Whether a stored last_accessed is old enough (or missing / unreadable) to be rewritten."""
    at = stored_datetime(stored) if resolution_s > 0 else None
    return at is None or (now - at).total_seconds() >= resolution_s


class RecentAccesses:
    """The accesses this process recorded lately ({id: when, epoch seconds}). A search sees a rewritten
    memory only after the index's next refresh (up to a second), so the recall right after one that
    recorded an access still reads the old `last_accessed`: without this record it would rewrite the
    memory again, with a version that is no longer current, lose the race (409), and retry after
    forcing a refresh of the index: 41 of 187 recorded accesses did so over the LoCoMo dev questions
    (`python -m bench.recall_stages --access`), consecutive questions about one conversation sharing
    memories."""

    def __init__(self, resolution_s: float, size: int = RECENT_ACCESSES):
        self.resolution_s = resolution_s
        self.size = size
        self._at: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    def stale(self, seen: Mapping[str, str | None], now: datetime) -> dict[str, str | None]:
        """The part of `seen` ({id: stored last_accessed}) whose access is due for a rewrite: stale as
        stored, and not recorded by this process within the resolution."""
        res = self.resolution_s
        due = {mid: stored for mid, stored in seen.items() if access_is_stale(stored, now, res)}
        if not due or res <= 0 or not self._at:
            return due
        t = now.timestamp()
        with self._lock:
            return {mid: stored for mid, stored in due.items() if t - self._at.get(mid, float("-inf")) >= res}

    def record(self, ids: list[str], now: datetime) -> None:
        if self.resolution_s <= 0 or not ids:
            return
        t = now.timestamp()
        with self._lock:
            for mid in ids:
                self._at[mid] = t
                self._at.move_to_end(mid)
            while len(self._at) > self.size:
                self._at.popitem(last=False)
