"""A background worker while the engine is away: one log line when it goes, one when it returns,
and a growing pause between tries in between, instead of a traceback per memory and batch (an
outage of 40 s once wrote 728k lines) or a line per tick. While an outage is known, `quiet()`
also mutes the engine client's own line per failed request, which would repeat the one said.
Pure bookkeeping; the clock and the logger are passed in."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext

from service.observability.oplog import engine_log_muted

# Tries while the engine is away: 1 s, then doubling, at most a minute apart.
FIRST_PAUSE_S = 1.0
MAX_PAUSE_S = 60.0


class Outage:
    """`what` names the worker in its two lines ("enrichment"); `waiting` says what waits meanwhile."""

    def __init__(self, log: logging.Logger, *, what: str, waiting: str,
                 clock: Callable[[], float] = time.monotonic, first: float = FIRST_PAUSE_S, cap: float = MAX_PAUSE_S):
        self.log, self.what, self.waiting = log, what, waiting
        self.clock, self.first, self.cap = clock, first, cap
        self._lock = threading.Lock()
        self._since: float | None = None
        self._pause = 0.0

    @property
    def down(self) -> bool:
        return self._since is not None

    def failed(self, reason: str) -> float:
        """The engine failed a request: the seconds to wait before the next try. The first failure of
        an outage is logged (one line); the rest are not."""
        with self._lock:
            if self._since is None:
                self._since, self._pause = self.clock(), self.first
                self.log.warning("%s paused: the engine is unavailable (%s); retrying with back-off, %s",
                                 self.what, reason, self.waiting)
            else:
                self._pause = min(self.cap, self._pause * 2)
            return self._pause

    def recovered(self) -> None:
        """A request succeeded: an outage, if there was one, is over (one line)."""
        if self._since is None:
            return
        with self._lock:
            if self._since is None:
                return
            lasted, self._since, self._pause = self.clock() - self._since, None, 0.0
        self.log.warning("%s resumed: the engine is back after %.0f s", self.what, lasted)

    @contextmanager
    def quiet(self) -> Iterator[None]:
        """Around a try: while the outage is known, the engine client's per-request lines are muted."""
        with engine_log_muted() if self.down else nullcontext():
            yield
