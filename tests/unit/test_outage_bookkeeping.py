"""The enrichment worker's outage bookkeeping (service/enrichment/outage.py): one line when the
engine goes, one when it returns, a doubling pause capped at a minute in between."""

from __future__ import annotations

import logging

from service.enrichment.outage import Outage


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_one_line_out_one_line_back_and_a_capped_back_off(caplog):
    clock = Clock()
    outage = Outage(logging.getLogger("test.outage"), clock=clock, first=1.0, cap=8.0)
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
