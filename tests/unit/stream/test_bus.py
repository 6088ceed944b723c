"""The event bus: fan-out, bounded queues, slow subscribers dropped, writers never blocked."""

from __future__ import annotations

import asyncio
import threading

import orjson

from service.stream.bus import EventBus, encode_event


def decode(payload: str) -> dict:
    return orjson.loads(payload)


async def take(sub, n: int, timeout: float = 2.0) -> list[dict]:
    out = []

    async def run():
        async for payload in sub.events():
            out.append(decode(payload))
            if len(out) == n:
                return

    await asyncio.wait_for(run(), timeout)
    return out


def test_encode_event_shape_and_non_json_values():
    event = decode(encode_event("memory.store", {"id": "a", "none": None, "n": 1}, "2026-01-01T00:00:00+00:00"))
    assert event == {"type": "memory.store", "timestamp": "2026-01-01T00:00:00+00:00", "data": {"id": "a", "none": None, "n": 1}}
    from datetime import datetime, timezone

    assert decode(encode_event("x", {"at": datetime(2026, 1, 1, tzinfo=timezone.utc)}, "t"))["data"]["at"] == "2026-01-01T00:00:00+00:00"


def test_every_subscriber_gets_every_event_in_order():
    async def main():
        bus = EventBus(queue_size=10)
        a, b = bus.subscribe(), bus.subscribe()
        assert bus.subscriber_count == 2
        for i in range(3):
            bus.publish("memory.store", {"i": i})
        got_a, got_b = await take(a, 3), await take(b, 3)
        assert [e["data"]["i"] for e in got_a] == [0, 1, 2] == [e["data"]["i"] for e in got_b]
        assert got_a[0]["type"] == "memory.store" and got_a[0]["timestamp"].endswith("+00:00")

    asyncio.run(main())


def test_publish_from_other_threads_wakes_the_subscriber():
    async def main():
        bus = EventBus()
        sub = bus.subscribe()
        threads = [threading.Thread(target=bus.publish, args=("memory.recall", {"t": t})) for t in range(5)]
        consumer = asyncio.create_task(take(sub, 5))
        await asyncio.sleep(0.05)  # the consumer is waiting when the events arrive
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        got = await consumer
        assert sorted(e["data"]["t"] for e in got) == [0, 1, 2, 3, 4]

    asyncio.run(main())


def test_a_full_queue_drops_the_subscriber_not_the_writer():
    async def main():
        bus = EventBus(queue_size=3)
        slow, fast = bus.subscribe(), bus.subscribe()
        fast_task = asyncio.create_task(take(fast, 10))
        for i in range(10):
            bus.publish("memory.store", {"i": i})  # never waits for anyone
            await asyncio.sleep(0)  # let the fast consumer drain
        assert slow.dropped and bus.subscriber_count == 1 and bus.dropped_subscribers == 1
        assert [e["data"]["i"] for e in await fast_task] == list(range(10))
        # The dropped stream delivers what it had queued, then ends.
        leftovers = [decode(p)["data"]["i"] async for p in slow.events()]
        assert leftovers == [0, 1, 2]

    asyncio.run(main())


def test_events_before_subscribing_are_not_replayed_and_close_ends_streams():
    async def main():
        bus = EventBus()
        bus.publish("memory.delete", {"id": "x"})
        assert bus.published == 1
        sub = bus.subscribe()
        ended = asyncio.create_task(take(sub, 1))
        await asyncio.sleep(0.01)
        bus.close()
        assert await ended == []  # the stream ended without an event
        assert bus.subscriber_count == 0

    asyncio.run(main())


def test_unencodable_event_is_skipped_not_raised():
    bus = EventBus()
    bus.publish("memory.store", {"bad": "\ud800"})  # a lone surrogate cannot be UTF-8
    assert bus.published == 0


def test_on_event_is_publish():
    bus = EventBus()
    bus.on_event("enrichment.start", {"memory_id": "a"})
    assert bus.published == 1


def test_a_bank_scoped_subscriber_sees_only_its_banks_events():
    async def main():
        bus = EventBus(queue_size=10)
        everything, team_a, nothing = bus.subscribe(), bus.subscribe(banks=frozenset({"team-a"})), bus.subscribe(banks=frozenset())
        bus.publish("memory.store", {"i": 0}, bank="team-b")
        bus.publish("memory.store", {"i": 1}, bank="team-a")
        bus.publish("enrichment.start", {"i": 2})  # no known bank: only for unscoped subscribers
        bus.publish("memory.store", {"i": 3}, bank="team-a")
        assert [e["data"]["i"] for e in await take(everything, 4)] == [0, 1, 2, 3]
        assert [e["data"]["i"] for e in await take(team_a, 2)] == [1, 3]
        assert nothing.pending == 0 and team_a.pending == 0

    asyncio.run(main())
