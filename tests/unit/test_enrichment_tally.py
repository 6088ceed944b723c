"""The enrichment worker's Tally: counts added from many threads, each bank's last outcome its own."""

from __future__ import annotations

import threading

from service.enrichment.stats import BANK_FIELDS, Tally


def test_counts_from_many_threads_add_up():
    tally = Tally()

    def work():
        for _ in range(2000):
            tally.add(processed_total=1, successes=1, busy_seconds=0.5)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert tally.totals("successes", "failures") == {"successes": 8000, "failures": 0}
    assert tally.stats.processed_total == 8000 and tally.stats.busy_seconds == 4000.0


def test_a_bank_sees_only_its_own_last_outcome():
    tally = Tally()
    tally.add("a", {"last_success_id": "m1", "last_success_at": "t1"}, successes=1)
    tally.add("b", {"last_error": "boom", "last_error_at": "t2"}, failures=1)
    tally.add("a", {"last_success_id": "m3", "last_success_at": "t3"}, successes=1)
    a, b, c = tally.report("a"), tally.report("b"), tally.report("c")
    assert {k: a[k] for k in BANK_FIELDS} == {"last_success_id": "m3", "last_success_at": "t3", "last_error": None, "last_error_at": None}
    assert {k: b[k] for k in BANK_FIELDS} == {"last_success_id": None, "last_success_at": None, "last_error": "boom", "last_error_at": "t2"}
    assert all(c[k] is None for k in BANK_FIELDS)
    assert a["successes"] == b["successes"] == 2 and a["failures"] == 1  # the totals are the worker's, every bank's


def test_counts_without_a_bank_record_no_outcome():
    tally = Tally()
    tally.add(None, {"last_success_id": "m1"}, skipped=1)
    assert tally.report("default")["last_success_id"] is None and tally.stats.skipped == 1
