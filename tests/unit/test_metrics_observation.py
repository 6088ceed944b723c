"""What the metrics record from a request and a recall body: bounded labels, seconds from milliseconds."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from service.observability.metrics import MAX_STAGES, Metrics


def sample(metrics: Metrics, name: str, **labels) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def info(method="GET", handler="/memory/{memory_id}", status="200", duration=0.05, ttfb=0.02):
    return SimpleNamespace(method=method, modified_handler=handler, modified_status=status, modified_duration=duration,
                           modified_duration_without_streaming=ttfb)


def test_http_requests_by_template_method_and_status():
    m = Metrics()
    m.observe_http(info())
    m.observe_http(info())
    m.observe_http(info(method="BREW", handler="none", status="405", ttfb=0.0, duration=0.01))
    assert sample(m, "engram_http_requests_total", method="GET", handler="/memory/{memory_id}", status="200") == 2
    assert sample(m, "engram_http_requests_total", method="other", handler="none", status="405") == 1
    # Latency is the time to the response's start; a response that never started counts its whole time.
    assert sample(m, "engram_http_request_duration_seconds_sum", method="GET", handler="/memory/{memory_id}", status="200") == pytest.approx(0.04)
    assert sample(m, "engram_http_request_duration_seconds_sum", method="other", handler="none", status="405") == pytest.approx(0.01)


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
