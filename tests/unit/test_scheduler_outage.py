"""The consolidation scheduler during an engine outage (or while its store is dropped): each skipped
tick is one warning line, never a traceback per tick (CI logs, 2026-12-02: 33 tracebacks of
"list banks: an index of the store is missing")."""

from __future__ import annotations

import logging
import time

from service.config import Settings
from service.consolidation.scheduler import ConsolidationService
from service.errors import EngineUnavailable


def test_an_outage_skips_ticks_with_one_line_each(caplog):
    calls = []

    def banks():
        calls.append(1)
        raise EngineUnavailable("list banks: an index of the store is missing; restart the service to recreate it")

    service = ConsolidationService(Settings(consolidation_tick_seconds=0.01), consolidator=None, history=None, banks=banks)
    with caplog.at_level(logging.INFO, logger="engram"):
        service.start()
        deadline = time.monotonic() + 5
        while len(calls) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        service.stop()
    skipped = [r for r in caplog.records if "tick skipped" in r.getMessage()]
    assert len(calls) >= 3 and len(skipped) >= 3
    assert all(r.levelno == logging.WARNING and r.exc_info is None for r in skipped)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
