"""The consolidation scheduler during an engine outage (or while its store is dropped): one warning
line when the outage starts and one when it ends, never a traceback, nor a line, per tick (CI logs,
2026-12-02: 33 tracebacks of "list banks: an index of the store is missing"; a stopped engine then
still wrote three lines a minute)."""

from __future__ import annotations

import logging
import time

from service.config import Settings
from service.consolidation.scheduler import ConsolidationService
from service.errors import EngineUnavailable


def run_ticks(banks, ticks: int, caplog) -> list[logging.LogRecord]:
    calls = []

    def counted():
        calls.append(1)
        return banks(len(calls))

    service = ConsolidationService(Settings(consolidation_tick_seconds=0.01), consolidator=None, history=None, banks=counted)
    with caplog.at_level(logging.INFO, logger="engram"):
        service.start()
        deadline = time.monotonic() + 5
        while len(calls) < ticks and time.monotonic() < deadline:
            time.sleep(0.01)
        service.stop()
    assert len(calls) >= ticks
    return [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_an_outage_is_one_line_when_it_starts_and_one_when_it_ends(caplog):
    def banks(call: int) -> list[str]:
        if call <= 5:
            raise EngineUnavailable("list banks: an index of the store is missing; restart the service to recreate it")
        return []

    lines = run_ticks(banks, 8, caplog)
    assert [r.getMessage().split(":")[0] for r in lines] == ["consolidation scheduler paused", "consolidation scheduler resumed"]
    assert "an index of the store is missing" in lines[0].getMessage()
    assert all(r.exc_info is None for r in lines)


def test_a_bank_that_meets_the_engine_away_does_not_starve_the_others(caplog):
    ticked = []

    def banks(call: int) -> list[str]:
        return ["a", "b"]

    service = ConsolidationService(Settings(), consolidator=None, history=None, banks=lambda: banks(0))

    def tick_bank(bank, now):
        ticked.append(bank)
        if bank == "a":
            raise EngineUnavailable("control of bank a: OpenSearch timed out")
        return [{"bank": bank}]

    service.tick_bank = tick_bank
    try:
        service.tick()
    except EngineUnavailable as exc:
        assert str(exc) == "bank a: control of bank a: OpenSearch timed out"
    else:
        raise AssertionError("the tick reports the bank the engine failed")
    assert ticked == ["a", "b"]
