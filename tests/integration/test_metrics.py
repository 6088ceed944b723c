"""GET /metrics against a real engine: token-protected on the API port (or open on METRICS_PORT),
requests per route template and status, recall stage timings, engine errors, queue sizes."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from opensearchpy import OpenSearch
from prometheus_client.parser import text_string_to_metric_families

from service.errors import EngramError
from service.storage.client import engine_errors
from tests.conftest import TOKEN
from tests.integration.live_server import free_port
from tests.integration.support import held_access_writes


def scrape(text: str) -> dict[tuple[str, tuple], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for family in text_string_to_metric_families(text) for s in family.samples}


def value(samples: dict, name: str, **labels) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


def metrics(api) -> dict:
    resp = api.get("/metrics")
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("text/plain")
    return scrape(resp.text)


def test_metrics_need_a_token(make_client):
    api = make_client(metrics_token="scrape-only")
    token = api.headers.pop("Authorization")
    try:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"X-API-Key": "wrong"}):
            resp = api.get("/metrics", headers=headers)
            assert resp.status_code == 401 and resp.headers["www-authenticate"] == 'Bearer realm="engram"'
            assert resp.json()["message"] == "GET /metrics needs METRICS_TOKEN or the API token (Authorization: Bearer <token>)"
        assert api.get("/metrics", headers={"Authorization": "Bearer scrape-only"}).status_code == 200
        assert api.get("/metrics", headers={"X-API-Key": "scrape-only"}).status_code == 200
        assert api.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
        # The scrape token opens nothing else.
        assert api.get("/recall", params={"query": "x"}, headers={"Authorization": "Bearer scrape-only"}).status_code == 401
    finally:
        api.headers["Authorization"] = token
    openmetrics = api.get("/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    assert openmetrics.headers["content-type"].startswith("application/openmetrics-text") and openmetrics.text.endswith("# EOF\n")


def test_requests_by_route_template_never_by_raw_path(api):
    ids = [api.post("/memory", json={"content": f"memory {n}"}).json()["memory_id"] for n in range(3)]
    for mid in ids:
        assert api.get(f"/memory/{mid}").status_code == 200
    assert api.get("/memory/does-not-exist").status_code == 404
    assert api.post("/memory", json={"content": ""}).status_code == 400
    for n in range(3):
        assert api.get(f"/random/path/{n}").status_code == 404
    assert api.request("BREW", "/memory").status_code == 405
    text = api.get("/metrics").text
    samples = scrape(text)
    assert value(samples, "engram_http_requests_total", method="POST", handler="/memory", status="201") == 3
    assert value(samples, "engram_http_requests_total", method="POST", handler="/memory", status="400") == 1
    assert value(samples, "engram_http_requests_total", method="GET", handler="/memory/{memory_id}", status="200") == 3
    assert value(samples, "engram_http_requests_total", method="GET", handler="/memory/{memory_id}", status="404") == 1
    assert value(samples, "engram_http_requests_total", method="GET", handler="none", status="404") == 3
    assert value(samples, "engram_http_requests_total", method="other", handler="/memory", status="405") == 1
    assert value(samples, "engram_http_request_duration_seconds_count", method="GET", handler="/memory/{memory_id}", status="200") == 3
    assert value(samples, "engram_http_request_duration_seconds_bucket", method="GET", handler="/memory/{memory_id}", status="200", le="+Inf") == 3
    for raw in (*ids, "does-not-exist", "/random/path", "BREW"):
        assert raw not in text, raw


def test_a_413_from_the_guard_is_counted(make_client):
    api = make_client(max_request_bytes=2048)
    assert api.post("/memory", json={"content": "x" * 5000}).status_code == 413
    assert value(metrics(api), "engram_http_requests_total", method="POST", handler="/memory", status="413") == 1


def test_recall_stage_timings_are_observed_and_the_body_is_unchanged(api):
    api.post("/memory", json={"content": "PostgreSQL chosen for the primary database", "tags": ["db"]})
    bodies = [api.get("/recall", params={"query": "database choice"}).json() for _ in range(2)]
    for body in bodies:
        assert set(body["timings"]) == {"embed", "search", "score", "state", "rank", "expand", "hydrate"}
        assert body["count"] == 1
    samples = metrics(api)
    for stage in bodies[0]["timings"]:
        assert value(samples, "engram_recall_stage_seconds_count", stage=stage) == 2
        total = sum(b["timings"][stage] for b in bodies) / 1000
        assert value(samples, "engram_recall_stage_seconds_sum", stage=stage) == pytest.approx(total, rel=1e-6, abs=1e-9)
    assert value(samples, "engram_recall_duration_seconds_sum") == pytest.approx(sum(b["query_time_ms"] for b in bodies) / 1000)


def test_engine_errors_are_counted_where_they_are_mapped(api, engine_url):
    before = metrics(api)
    # The real engine refuses a query Engram could never build (a 400: "rejected") ...
    with pytest.raises(EngramError):
        api.app.state.memories.search({"query": {"no_such_query_type": {}}})
    # ... and a node that is not there is "unreachable".
    dead = OpenSearch(hosts=[f"http://127.0.0.1:{free_port()}"], timeout=2, max_retries=0)
    with pytest.raises(EngramError), engine_errors("probe a dead node"):
        dead.info()
    after = metrics(api)
    for kind in ("rejected", "unreachable"):
        assert value(after, "engram_engine_errors_total", kind=kind) == value(before, "engram_engine_errors_total", kind=kind) + 1
    assert value(after, "engram_engine_errors_total", kind="too_large") == value(before, "engram_engine_errors_total", kind="too_large")


def test_queue_sizes_of_enrichment_and_the_stream(make_client):
    api = make_client(enrichment_enabled=True, enrichment_queue_size=123, stream_queue_size=7)
    state = api.app.state
    samples = metrics(api)
    assert value(samples, "engram_enrichment_running") == 1
    assert value(samples, "engram_enrichment_queue_capacity") == 123
    assert value(samples, "engram_enrichment_queue_size") == state.enrichment.queue_counts()["queue_size"]
    assert value(samples, "engram_stream_subscribers") == 0
    loop = asyncio.new_event_loop()
    try:
        slow, idle = state.events.subscribe(loop), state.events.subscribe(loop)
        published = value(samples, "engram_stream_events_published_total")
        for n in range(3):
            state.events.publish("memory.store", {"n": n})
        samples = metrics(api)
        assert value(samples, "engram_stream_subscribers") == 2
        assert value(samples, "engram_stream_queued_events") == 6 and value(samples, "engram_stream_queue_fill_max") == 3
        assert value(samples, "engram_stream_queue_capacity") == 7
        assert value(samples, "engram_stream_events_published_total") == published + 3
        for n in range(5):  # 8 > 7: both queues overflow, both subscribers are dropped
            state.events.publish("memory.store", {"n": n})
        samples = metrics(api)
        assert value(samples, "engram_stream_subscribers") == 0 and value(samples, "engram_stream_subscribers_dropped_total") == 2
        assert slow.dropped and idle.dropped
    finally:
        loop.close()
    # The enrichment worker's work shows up as it happens.
    api.post("/memory", json={"content": "Alice met Bob in Paris"})
    end = time.monotonic() + 30
    while time.monotonic() < end and value(metrics(api), "engram_enrichment_memories_total", outcome="successes") < 1:
        time.sleep(0.2)
    assert value(metrics(api), "engram_enrichment_memories_total", outcome="successes") >= 1


def test_the_access_writers_queue(make_client):
    api = make_client(recall_access_resolution_seconds=0)
    writer = api.app.state.access_writer
    mid = api.post("/memory", json={"content": "the ladder hangs in the shed"}).json()["memory_id"]
    with held_access_writes(api) as entered:
        assert api.get("/recall", params={"query": "ladder", "limit": 3}).status_code == 200
        assert entered.wait(5)
        samples = metrics(api)
        assert value(samples, "engram_access_writes_pending") == 1 and value(samples, "engram_access_writes_dropped_total") == 0
        writer.queue_size = 1  # full: the next recall's accesses are not queued
        assert api.get("/recall", params={"query": "ladder", "limit": 3}).status_code == 200
        assert value(metrics(api), "engram_access_writes_dropped_total") == 1
    assert writer.flush(30) and value(metrics(api), "engram_access_writes_pending") == 0
    assert api.get(f"/memory/{mid}").json()["memory"]["last_accessed"] is not None


def test_a_separate_metrics_port_needs_no_token_and_leaves_the_api(make_client):
    port = free_port()
    api = make_client(metrics_port=port)
    assert api.get("/metrics").status_code == 404
    api.get("/health")
    resp = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10)
    assert resp.status_code == 200
    assert value(scrape(resp.text), "engram_http_requests_total", method="GET", handler="/health", status="200") == 1
    assert value(scrape(resp.text), "process_resident_memory_bytes") > 0
    api.__exit__(None, None, None)  # the app stops: so does its listener
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2)


def test_metrics_can_be_turned_off(make_client):
    api = make_client(metrics_enabled=False)
    assert api.get("/metrics").status_code == 404
    assert api.get("/health").headers["x-request-id"]
