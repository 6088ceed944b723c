"""What the metrics record from a request and a recall body: bounded labels, seconds from milliseconds."""

from __future__ import annotations

import asyncio

import pytest
from fastapi import APIRouter, FastAPI
from fastapi.testclient import TestClient
from starlette.responses import PlainTextResponse, StreamingResponse

from service.observability.http_metrics import HttpMetricsMiddleware
from service.observability.metrics import MAX_STAGES, Metrics


def sample(metrics: Metrics, name: str, **labels) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def test_http_requests_by_template_method_and_status():
    m = Metrics()
    m.observe_http("GET", "/memory/{memory_id}", "200", 0.02)
    m.observe_http("GET", "/memory/{memory_id}", "200", 0.02)
    m.observe_http("other", "none", "405", 0.01)
    assert sample(m, "engram_http_requests_total", method="GET", handler="/memory/{memory_id}", status="200") == 2
    assert sample(m, "engram_http_requests_total", method="other", handler="none", status="405") == 1
    assert sample(m, "engram_http_request_duration_seconds_sum", method="GET", handler="/memory/{memory_id}", status="200") == pytest.approx(0.04)


def _app(observed: list) -> FastAPI:
    app = FastAPI()
    router = APIRouter(prefix="/v1")

    @router.get("/memory/{memory_id}")
    async def get_memory(memory_id: str) -> dict:
        return {"id": memory_id}

    @router.get("/slow-body")
    async def slow_body() -> StreamingResponse:
        async def body():
            yield b"a"
            await asyncio.sleep(0.5)
            yield b"b"
        return StreamingResponse(body())

    @router.get("/boom")
    async def boom() -> None:
        raise RuntimeError("boom")

    async def plain(request):
        return PlainTextResponse("ok")

    app.include_router(router)
    app.add_route("/plain/{name}", plain)
    app.mount("/assets", PlainTextResponse("asset"))

    class Guard:  # answers before routing, as RequestGuard's 413 does
        def __init__(self, inner):
            self.inner = inner

        async def __call__(self, scope, receive, send):
            if scope.get("query_string") == b"reject":
                await PlainTextResponse("too large", status_code=413)(scope, receive, send)
            else:
                await self.inner(scope, receive, send)

    app.add_middleware(Guard)
    app.add_middleware(HttpMetricsMiddleware, observe=lambda *args: observed.append(args))
    return app


def test_the_middleware_labels_requests_by_the_route_template_the_router_matched():
    observed: list = []
    with TestClient(_app(observed), raise_server_exceptions=False) as client:
        client.get("/v1/memory/abc")
        client.delete("/v1/memory/abc")  # a route of another method: its template, 405
        client.get("/plain/x")
        client.get("/assets/app.js")
        client.get("/no/such/path")
        client.request("BREW", "/v1/memory/abc")
        client.get("/v1/slow-body")
        client.get("/v1/boom")
        client.get("/v1/memory/abc?reject")
        client.get("/no/such/path?reject")
    labels = [args[:3] for args in observed]
    assert labels == [
        ("GET", "/v1/memory/{memory_id}", "200"),
        ("DELETE", "/v1/memory/{memory_id}", "405"),
        ("GET", "/plain/{name}", "200"),
        ("GET", "/assets", "200"),
        ("GET", "none", "404"),
        ("other", "/v1/memory/{memory_id}", "405"),
        ("GET", "/v1/slow-body", "200"),
        ("GET", "/v1/boom", "500"),
        ("GET", "/v1/memory/{memory_id}", "413"),
        ("GET", "none", "413"),
    ]
    # Latency is the time to the response's start, not to the end of a streamed body.
    assert observed[6][3] < 0.4


def test_recall_stages_in_seconds_with_a_bounded_label_set():
    m = Metrics()
    m.observe_recall({"timings": {"embed": 4.0, "search": 12.5, "Bad Stage": 1.0, "rank": "fast"}, "query_time_ms": 20.0})
    m.observe_recall({"timings": {"embed": 6.0}, "query_time_ms": 10.0})
    assert sample(m, "engram_recall_stage_seconds_count", stage="embed") == 2
    assert sample(m, "engram_recall_stage_seconds_sum", stage="embed") == pytest.approx(0.010)
    assert sample(m, "engram_recall_stage_seconds_sum", stage="search") == pytest.approx(0.0125)
    assert sample(m, "engram_recall_stage_seconds_count", stage="Bad Stage") is None
    assert sample(m, "engram_recall_stage_seconds_count", stage="rank") is None
    assert sample(m, "engram_recall_duration_seconds_sum") == pytest.approx(0.030)
    m.observe_recall({"timings": {f"s{i}": 1.0 for i in range(MAX_STAGES + 10)}})
    assert len({s.labels["stage"] for metric in m.recall_stage.collect() for s in metric.samples}) == MAX_STAGES
    m.observe_recall({"timings": None})  # nothing to observe, nothing raised


def test_apps_have_registries_of_their_own():
    a, b = Metrics(), Metrics()
    a.observe_recall({"query_time_ms": 5.0})
    assert sample(a, "engram_recall_duration_seconds_count") == 1 and sample(b, "engram_recall_duration_seconds_count") == 0
    # The process-wide engine error counter is in both.
    assert sample(a, "engram_engine_errors_total", kind="rejected") == sample(b, "engram_engine_errors_total", kind="rejected")
