"""service/storage/access_writer.py: recalls' accesses queued and written on the writer's own thread.
The writer's only call is MemoryStore.touch (its writes are tested against the real node through the
API: tests/integration/test_recall.py, test_vectors_outside_source.py); here a stand-in store records
the calls, to pin what the queue does with them."""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime, timedelta

from service.storage.access_writer import AccessWriter

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class Store:
    """touch() recorded; with `hold`, the first call waits until it is released."""

    def __init__(self, hold: bool = False, fail_first: bool = False):
        self.calls: list[tuple] = []
        self.entered, self.release = threading.Event(), threading.Event()
        if not hold:
            self.release.set()
        self.fail_first = fail_first

    def touch(self, bank, seen, now, versions):
        self.entered.set()
        self.release.wait(10)
        self.calls.append((bank, dict(seen), now, dict(versions)))
        if self.fail_first and len(self.calls) == 1:
            raise RuntimeError("engine down")


def test_submit_returns_at_once_and_flush_waits_for_the_write():
    store = Store(hold=True)
    writer = AccessWriter(store)
    writer.submit("b", {"m1": None}, T0, {})  # returns while the write is held
    assert store.entered.wait(5) and store.calls == []
    assert not writer.flush(timeout=0.05)
    store.release.set()
    assert writer.flush(timeout=5)
    assert store.calls == [("b", {"m1": None}, T0, {})]
    writer.close()


def test_what_queues_during_a_write_goes_out_in_one_write_per_bank():
    store = Store(hold=True)
    writer = AccessWriter(store)
    writer.submit("b", {"m1": None}, T0, {})
    assert store.entered.wait(5)
    writer.submit("b", {"m2": None, "m3": "2025-01-01T00:00:00Z"}, T0 + timedelta(seconds=1), {"m2": ([0.1], 3, 1)})
    writer.submit("other", {"x": None}, T0 + timedelta(seconds=2), {})
    writer.submit("b", {"m2": None, "m4": None}, T0 + timedelta(seconds=3), {"m2": ([0.2], 5, 1)})
    store.release.set()
    assert writer.flush(timeout=5)
    assert store.calls == [
        ("b", {"m1": None}, T0, {}),
        # the union, at the latest recall's time, with the version read last
        ("b", {"m2": None, "m3": "2025-01-01T00:00:00Z", "m4": None}, T0 + timedelta(seconds=3), {"m2": ([0.2], 5, 1)}),
        ("other", {"x": None}, T0 + timedelta(seconds=2), {}),
    ]
    writer.close()


def test_a_failed_write_is_logged_and_the_writer_goes_on(caplog):
    store = Store(fail_first=True)
    writer = AccessWriter(store)
    with caplog.at_level(logging.WARNING, logger="engram.access"):
        writer.submit("b", {"m1": None}, T0, {})
        assert writer.flush(timeout=5)
    assert "recording 1 recalls' accesses failed" in caplog.text
    writer.submit("b", {"m2": None}, T0, {})
    assert writer.flush(timeout=5) and [c[1] for c in store.calls] == [{"m1": None}, {"m2": None}]
    writer.close()


def test_close_writes_what_is_queued_and_stops_the_thread():
    store = Store(hold=True)
    writer = AccessWriter(store)
    for i in range(3):
        writer.submit("b", {f"m{i}": None}, T0, {})
    threading.Timer(0.1, store.release.set).start()
    writer.close(timeout=5)
    assert {mid for c in store.calls for mid in c[1]} == {"m0", "m1", "m2"}
    assert not writer._thread.is_alive()


def test_a_full_queue_drops_and_counts_what_it_cannot_take():
    store = Store(hold=True)
    writer = AccessWriter(store, queue_size=2)
    writer.submit("b", {"m1": None}, T0, {})
    assert store.entered.wait(5)  # m1 is being written: still pending
    writer.submit("b", {"m2": None}, T0, {})
    writer.submit("b", {"m3": None}, T0, {})  # full
    assert (writer.pending, writer.dropped) == (2, 1)
    store.release.set()
    assert writer.flush(timeout=5)
    assert [c[1] for c in store.calls] == [{"m1": None}, {"m2": None}]
    writer.close()
