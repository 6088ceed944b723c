"""The enrichment worker during an engine outage (issue 23 item 5): with memories waiting, the engine
going away for a few seconds gives one log line when it goes and one when it returns (no
traceback per memory or batch), no attempt of any memory is spent on it, and every memory is
enriched once the engine is back."""

from __future__ import annotations

import logging
import time

from tests.integration.engine_proxy import EngineProxy
from tests.integration.support import mem
from tests.integration.test_enrichment import settle


def enriched(api, mid: str) -> bool:
    return (api.get(f"/memory/{mid}").json()["memory"].get("enrichment") or {}).get("status") == "done"


def test_an_outage_is_two_log_lines_and_costs_no_attempts(make_client, engine_url, caplog):
    proxy = EngineProxy(engine_url)
    try:
        api = make_client(opensearch_url=proxy.url, enrichment_enabled=True, enrichment_idle_sleep_seconds=0.1,
                          opensearch_timeout=10, enrichment_batch_size=2)
        worker = api.app.state.enrichment
        settle(api)
        with caplog.at_level(logging.INFO, logger="engram.enrichment"):
            worker.stop()  # memories are written while no worker runs, so they wait for it
            ids = [mem(api, f"Outage note {i} about Sarah Connor in Paris.") for i in range(12)]
            proxy.cut()
            worker.start()
            deadline = time.monotonic() + 30
            while not worker.outage.down:
                assert time.monotonic() < deadline, "the worker never noticed the outage"
                time.sleep(0.05)
            time.sleep(4)  # the outage lasts; a flood would be thousands of lines by now
            proxy.restore()
            deadline = time.monotonic() + 120  # the back-off may hold the next try up to its pause
            while not all(enriched(api, mid) for mid in ids):
                assert time.monotonic() < deadline, worker.status()
                time.sleep(0.2)
            status = settle(api)
        lines = [r for r in caplog.records if r.name == "engram.enrichment" and r.levelno >= logging.WARNING]
        assert [r.getMessage().split(":")[0] for r in lines] == ["enrichment paused", "enrichment resumed"], [(r.name, r.getMessage()[:150]) for r in caplog.records]
        assert all(r.exc_info is None for r in lines)
        assert status["stored"]["done"] >= len(ids) and status["stored"]["failed"] == 0
        for mid in ids:
            assert api.get(f"/memory/{mid}").json()["memory"]["enrichment"]["attempts"] == 1
    finally:
        proxy.close()
