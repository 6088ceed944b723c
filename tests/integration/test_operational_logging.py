"""Operational logging over a real server run: application events carry JSON fields, and neither
they nor the access log ever hold a recall's query text (spec 003: Operational logging)."""

from __future__ import annotations

import logging

import httpx
import orjson

from service.observability.oplog import PLAIN_FORMAT, JsonFieldsFormatter
from tests.conftest import AUTH, TOKEN
from tests.integration.live import live_app

SECRET = "zebra quartz mandolin"


def fields(line: str) -> dict:
    return orjson.loads(line[line.index(" {") + 1:])


def test_a_run_logs_its_fields_and_never_the_query(engine_url, embedder, os_client, caplog):
    caplog.set_level(logging.INFO)
    with live_app(engine_url, embedder, os_client, consolidation_tick_seconds=0) as (_, url):
        with httpx.Client(base_url=url, headers=AUTH, timeout=60) as api:
            one = api.post("/memory", json={"content": "The launch code is in the blue folder", "tags": ["ops"]}).json()["memory_id"]
            api.post("/memory/batch", json={"memories": [{"content": "first"}, {"content": "second"}]})
            assert api.get("/recall", params={"query": SECRET, "limit": 3}).status_code == 200
            assert httpx.get(f"{url}/recall", params={"query": SECRET, "api_key": TOKEN}).status_code == 200
            api.patch(f"/memory/{one}", json={"importance": 0.9})
            api.post("/consolidate", json={"mode": "decay", "dry_run": True})
    fmt = JsonFieldsFormatter(PLAIN_FORMAT)
    lines = {r.getMessage(): fmt.format(r) for r in caplog.records if r.name == "engram.api" or r.name == "engram.consolidation"}
    # Left out: this test's own HTTP client (httpx logs the URLs it calls), and opensearchpy.trace (a
    # curl line per request, bodies included), which has no handler in the service (test_oplog
    # checks) but gets pytest's capture handlers here.
    records = [r for r in caplog.records if not r.name.startswith(("httpx", "httpcore", "opensearchpy.trace"))]
    everything = "\n".join(fmt.format(r) for r in records)
    assert "zebra" not in everything and "quartz" not in everything
    assert TOKEN not in everything  # the access log never holds the query string (nor ?api_key=)

    stored = fields(lines["memory_stored"])
    assert stored == {
        "memory_id": one, "type": stored["type"], "importance": 0.5, "tags_count": 1, "content_length": 37,
        "latency_ms": stored["latency_ms"], "embedding_status": "generated", "storage_status": "stored",
    } and stored["latency_ms"] > 0
    assert {k: v for k, v in fields(lines["batch_stored"]).items() if k != "latency_ms"} == {
        "count": 2, "requested": 2, "failed_count": 0, "storage_status": "stored"}
    recalled = fields(lines["recall_complete"])
    assert set(recalled) == {"result_count", "limit", "latency_ms", "has_query", "query_length", "tags_count", "state_mode", "vector_matched", "expanded_count"}
    assert recalled["has_query"] is True and recalled["query_length"] == len(SECRET)
    assert fields(lines["memory_updated"])["fields"] == ["importance"]
    run = fields(lines["consolidation_run"])
    assert (run["mode"], run["dry_run"], run["success"], run["trigger"]) == ("decay", True, True, "manual")
    # Records without extra fields keep the plain format.
    (ready,) = [r for r in caplog.records if isinstance(r.msg, str) and r.msg.startswith("engram %s ready")]
    assert fmt.format(ready).split(" ", 2)[2].startswith("INFO engram: engram ") and not fmt.format(ready).endswith("}")
    access = [r.getMessage() for r in caplog.records if r.name == "engram.access"]
    assert sum(m.startswith("GET /recall 200 ") for m in access) == 2
    assert all("?" not in m for m in access)
