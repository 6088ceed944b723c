"""In-process publish/subscribe for the SSE stream (spec 003: Stream).

`publish(event_type, data)` never blocks: it serialises the event once and offers it to every
subscriber's bounded queue under a short lock. A subscriber whose queue is full is too slow to
follow; it is dropped (its stream ends) instead of slowing the writer or growing without bound.
AutoMem drops the event and keeps the slow client; dropping the client tells it to reconnect
rather than silently missing events.

Writers run in worker threads (sync routes, the consolidation scheduler, enrichment workers),
subscribers in the event loop: a queue is a deque guarded by the bus lock, and a subscriber is
woken with `loop.call_soon_threadsafe`, which only writes to the loop's self-pipe.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import deque
from collections.abc import AsyncIterator
from datetime import datetime, timezone
from typing import Any

import orjson

log = logging.getLogger("engram.stream")


def utc_now_iso() -> str:
    return datetime.now(timezone.utc).isoformat()


def encode_event(event_type: str, data: dict[str, Any], timestamp: str) -> str:
    """The JSON of one event: {"type", "timestamp", "data"} (spec 003). Values that are not JSON
    types (datetimes, sets) are stringified rather than failing the writer."""
    event = {"type": event_type, "timestamp": timestamp, "data": data}
    return orjson.dumps(event, default=str, option=orjson.OPT_NON_STR_KEYS).decode()


class Subscriber:
    """One stream client: a bounded queue of encoded events, consumed by `events()`."""

    def __init__(self, bus: EventBus, loop: asyncio.AbstractEventLoop, maxsize: int, banks: frozenset[str] | None = None):
        self._bus = bus
        self.banks = banks  # None: every bank's events (an unscoped token); else only these banks' 
        self._loop = loop
        self._items: deque[str] = deque()
        self._maxsize = maxsize
        self._wake = asyncio.Event()
        self.dropped = False
        self.closed = False

    def may_see(self, bank: str | None) -> bool:
        return self.banks is None or (bank is not None and bank in self.banks)

    # Called with the bus lock held.
    def _offer(self, payload: str) -> bool:
        if len(self._items) >= self._maxsize:
            self.dropped = True
            self._notify()
            return False
        self._items.append(payload)
        self._notify()
        return True

    def _notify(self) -> None:
        try:
            self._loop.call_soon_threadsafe(self._wake.set)
        except RuntimeError:  # the loop is closed: nobody is listening any more
            self.closed = True

    def close(self) -> None:
        self.closed = True
        self._notify()

    @property
    def pending(self) -> int:
        return len(self._items)

    async def events(self) -> AsyncIterator[str]:
        """Encoded events as they arrive; ends when the subscriber is dropped or closed."""
        try:
            while True:
                with self._bus.lock:
                    item = self._items.popleft() if self._items else None
                    if item is None:
                        if self.dropped or self.closed:
                            return
                        self._wake.clear()
                if item is not None:
                    yield item
                    continue
                await self._wake.wait()
        finally:
            self._bus.unsubscribe(self)


class EventBus:
    def __init__(self, queue_size: int = 100):
        self.queue_size = queue_size
        self.lock = threading.Lock()
        self._subscribers: set[Subscriber] = set()
        self.published = 0
        self.dropped_subscribers = 0

    def subscribe(self, loop: asyncio.AbstractEventLoop | None = None, banks: frozenset[str] | None = None) -> Subscriber:
        """A new subscriber; `banks` limits it to those banks' events (a bank-scoped token's stream)."""
        sub = Subscriber(self, loop or asyncio.get_running_loop(), self.queue_size, banks)
        with self.lock:
            self._subscribers.add(sub)
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        with self.lock:
            self._subscribers.discard(sub)

    @property
    def subscriber_count(self) -> int:
        with self.lock:
            return len(self._subscribers)

    def queue_sizes(self) -> list[int]:
        """Events waiting in each subscriber's queue (GET /metrics)."""
        with self.lock:
            return [sub.pending for sub in self._subscribers]

    def publish(self, event_type: str, data: dict[str, Any], bank: str | None = None) -> None:
        """Offer one event to every subscriber that may see `bank`; never blocks, never raises into the
        writer. An event of no known bank goes only to unscoped subscribers: never leak across banks."""
        try:
            payload = encode_event(event_type, data, utc_now_iso())
        except Exception:  # noqa: BLE001 - an event is never worth failing a write
            log.warning("event %s could not be encoded; not published", event_type, exc_info=True)
            return
        with self.lock:
            self.published += 1
            if not self._subscribers:
                return
            slow = [sub for sub in self._subscribers if sub.may_see(bank) and not sub._offer(payload)]
            for sub in slow:
                self._subscribers.discard(sub)
            self.dropped_subscribers += len(slow)
        for _ in slow:
            log.warning("stream subscriber dropped: its queue of %d events was full (a slow client)", self.queue_size)

    # The enrichment worker's callback signature: on_event(type, data).
    on_event = publish

    def close(self) -> None:
        """End every stream (service shutdown)."""
        with self.lock:
            subs = list(self._subscribers)
            self._subscribers.clear()
        for sub in subs:
            sub.close()
