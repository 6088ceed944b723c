"""The background workers' outage bookkeeping (service/observability/outage.py): one line when the
engine goes, one when it returns, a doubling pause capped at a minute in between, and the engine
client's own line per failed request muted while the outage is known."""

from __future__ import annotations

import logging

from service.observability.oplog import ENGINE_REQUEST_FAILED, quiet_engine_log
from service.observability.outage import Outage


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_one_line_out_one_line_back_and_a_capped_back_off(caplog):
    clock = Clock()
    outage = Outage(logging.getLogger("test.outage"), what="enrichment", waiting="memories stay pending", clock=clock, first=1.0, cap=8.0)
    outage.recovered()  # nothing to report while the engine is up
    with caplog.at_level(logging.INFO, logger="test.outage"):
        pauses = [outage.failed("OpenSearch is unreachable") for _ in range(6)]
        assert outage.down
        clock.now += 42
        outage.recovered()
        outage.recovered()
    assert pauses == [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    assert not outage.down
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "enrichment paused: the engine is unavailable (OpenSearch is unreachable); retrying with back-off, memories stay pending",
        "enrichment resumed: the engine is back after 42 s",
    ]
    assert outage.failed("again") == 1.0  # a new outage starts over


def test_the_worker_is_named_in_its_lines(caplog):
    clock = Clock()
    outage = Outage(logging.getLogger("test.outage"), what="consolidation scheduler", waiting="due tasks wait", clock=clock)
    with caplog.at_level(logging.INFO, logger="test.outage"):
        outage.failed("list banks: OpenSearch is unreachable")
        clock.now += 61
        outage.recovered()
    assert [r.getMessage() for r in caplog.records] == [
        "consolidation scheduler paused: the engine is unavailable (list banks: OpenSearch is unreachable); retrying with back-off, due tasks wait",
        "consolidation scheduler resumed: the engine is back after 61 s",
    ]


def test_quiet_mutes_the_engine_client_only_while_the_outage_is_known(caplog):
    quiet_engine_log()
    engine = logging.getLogger("opensearch")

    def failed_request():
        engine.warning(ENGINE_REQUEST_FAILED, "POST", "http://127.0.0.1:9/engram-memories/_search", "N/A", 0.0)

    outage = Outage(logging.getLogger("test.outage"), what="enrichment", waiting="memories stay pending")
    with caplog.at_level(logging.INFO):
        with outage.quiet():
            failed_request()  # the first failure: the client's line says what failed
        outage.failed("OpenSearch is unreachable")
        for _ in range(3):
            with outage.quiet():
                failed_request()  # known: the outage's one line stands for these
        outage.recovered()
        with outage.quiet():
            failed_request()  # a new failure after the engine came back is heard again
    assert [r.name for r in caplog.records] == ["opensearch", "test.outage", "test.outage", "opensearch"]
