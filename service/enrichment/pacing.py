"""Clients first: while the API serves requests, each enrichment thread works only a share of the
time (ENRICHMENT_DUTY_WHILE_SERVING), so a large backlog (every memory of a big import is pending)
does not hold the engine's cores against recalls. Idle, the worker runs at full speed.

    foreground = Foreground()          create_app; RequestGuard calls foreground.touch() per request
    foreground.active()                a request started within the last second
    pause_after(batch_s, duty)         the rest after a batch that took batch_s
"""

from __future__ import annotations

import time
from collections.abc import Callable

# A request within this long counts as clients being served.
ACTIVE_WINDOW_SECONDS = 1.0
# Probes of monitors and scrapers are not clients: a health check every few seconds would otherwise
# keep the worker paced forever.
NOT_CLIENTS = frozenset({"/health", "/ready", "/metrics"})


class Foreground:
    def __init__(self, clock: Callable[[], float] = time.monotonic, window_s: float = ACTIVE_WINDOW_SECONDS):
        self._clock = clock
        self._window = window_s
        self._last = float("-inf")

    def touch(self, path: str = "") -> None:
        if path not in NOT_CLIENTS:
            self._last = self._clock()

    def active(self) -> bool:
        return self._clock() - self._last < self._window


def pause_after(batch_seconds: float, duty: float) -> float:
    """Seconds to rest after a batch so that work takes `duty` of the time (1.0 never rests)."""
    if duty >= 1.0 or batch_seconds <= 0.0:
        return 0.0
    return batch_seconds * (1.0 - duty) / duty
