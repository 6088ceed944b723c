"""The enrichment worker's queue and scan schedule (service/enrichment/jobs.py): pure bookkeeping, no engine."""

from __future__ import annotations

import time

import pytest

from service.enrichment.jobs import Job, JobQueue, ScanSchedule


def test_a_memory_is_queued_once_and_a_full_queue_reports_the_rest():
    dropped = []
    jobs = JobQueue(2, on_drop=lambda: dropped.append(1))
    jobs.backlog = False
    assert jobs.put(["a", "a", "b"]) == 2
    assert jobs.put(["c"]) == 0  # full: left pending in the engine for the next scan
    assert dropped == [1] and jobs.backlog
    assert jobs.size() == 2 and jobs.room() == 0 and jobs.capacity == 2
    assert jobs.counts() == (2, 0)


def test_taken_jobs_are_in_flight_until_done_and_not_queued_again_meanwhile():
    jobs = JobQueue(10)
    jobs.put(["a", "b", "c"])
    taken = jobs.take(2, timeout=0.1)
    assert [j.memory_id for j in taken] == ["a", "b"]
    assert jobs.counts() == (1, 2)
    assert jobs.unknown(["a", "b", "c", "d"]) == ["d"]
    assert jobs.put(["a"]) == 0  # held by a worker thread
    assert jobs.put(["a"], requeue=True) == 1  # its guarded commit failed: enriched again
    jobs.done(taken)
    assert jobs.counts() == (2, 0) and not jobs.idle()
    assert [j.memory_id for j in jobs.take(10, timeout=0.1)] == ["c", "a"]


def test_forced_marks_reach_the_job_even_when_it_was_queued_before():
    jobs = JobQueue(10)
    jobs.put(["a"])
    assert jobs.put(["a"], forced=True) == 0  # queued already, but now forced
    (job,) = jobs.take(10, timeout=0.1)
    assert job.forced
    jobs.done([job])
    jobs.put(["a"])
    (again,) = jobs.take(10, timeout=0.1)
    assert not again.forced  # the mark was used up


def test_an_empty_queue_gives_nothing_after_the_timeout_and_is_idle():
    jobs = JobQueue(10)
    assert jobs.take(5, timeout=0.01) == []
    assert jobs.idle()


def test_a_retry_comes_back_after_its_backoff_and_timers_can_be_cancelled():
    jobs = JobQueue(10)
    jobs.put_later(Job("now", attempt=1), delay=0)
    assert jobs.counts() == (1, 0)
    jobs.put_later(Job("soon", attempt=2, forced=True), delay=0.05)
    jobs.put_later(Job("never", attempt=1), delay=30)
    # A scan finds a waiting retry pending in the engine; queued from there it would skip its backoff.
    assert jobs.unknown(["never", "other"]) == ["other"]
    deadline = time.monotonic() + 5
    while jobs.counts()[0] < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    taken = {j.memory_id: j for j in jobs.take(10, timeout=0.1)}
    assert set(taken) == {"now", "soon"}
    assert taken["soon"].attempt == 2 and taken["soon"].forced
    jobs.cancel_timers()
    assert jobs.unknown(["never"]) == ["never"]


def test_a_retry_waiting_out_its_backoff_is_not_idle():
    # The worker looked idle while a failed batch's memories waited for their retry, so a caller that
    # waits for the worker to settle (the tests, a bulk import) read memories not yet enriched.
    jobs = JobQueue(10)
    jobs.put_later(Job("later", attempt=1), delay=0.2)
    assert jobs.counts() == (0, 0) and not jobs.idle()
    deadline = time.monotonic() + 5
    while jobs.counts()[0] < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not jobs.idle()  # queued now
    jobs.done(jobs.take(10, timeout=0.1))
    assert jobs.idle()
    jobs.put_later(Job("cancelled", attempt=1), delay=30)
    jobs.cancel_timers()
    assert jobs.idle()


@pytest.mark.parametrize("now, backlog, last, caught_up, due", [
    (0.0, False, float("-inf"), False, "full"),  # never looked
    (10.0, True, 9.0, False, "full"),  # a backlog may exist: at once
    (10.0, True, 9.0, True, "quick"),
    (14.0, False, 9.0, False, "full"),  # 5 s since the last look, not caught up yet
    (14.0, False, 9.0, True, "quick"),
    (70.0, False, 9.0, True, "quick"),  # caught up: never full again
    (12.0, False, 9.0, False, None),
    (13.9, False, 9.0, True, None),
])
def test_an_idle_worker_looks_every_few_seconds_fully_until_caught_up(now, backlog, last, caught_up, due):
    looks = ScanSchedule(last=last, caught_up=caught_up)
    assert looks.due(now, backlog=backlog) == due


@pytest.mark.parametrize("quick, short, caught_up", [
    (False, True, True),  # a full scan that found less than it had room for: nothing unmarked is left
    (False, False, False),  # a full page: more may wait
    (True, True, False),  # a quick scan cannot see unmarked edits
])
def test_only_a_short_full_scan_catches_up(quick, short, caught_up):
    looks = ScanSchedule()
    looks.ran(100.0, quick=quick, short=short)
    assert looks.caught_up is caught_up and looks.last == 100.0
    assert looks.due(104.0, backlog=False) is None and looks.due(105.0, backlog=False) == ("quick" if caught_up else "full")
