"""Prometheus metrics of one app: HTTP traffic, recall stages, engine errors, background queues.

- HTTP (service/observability/http_metrics.py): the labels stay bounded: `handler` is the route
  template (`/memory/{memory_id}`, never the raw path; paths that match no route are `none`),
  `method` one of the HTTP methods (anything else: `other`), `status` the exact code. Latency is
  the time until the response started: what a client waits for, without streamed bodies
  (GET /stream) or the work a route defers until after its response.
- Recall: every stage the pipeline reports in its body's `timings` (embed, search, score, ...) and
  the whole `query_time_ms`, observed after the recall; the body is left as it is.
- Engine errors: counted where storage.client maps them (service/observability/counters.py).
- Queues, read at scrape time: the enrichment queue, the stream's subscribers and their queues,
  the recall log's queue, the access writer's.

Each app has its own registry (tests build many apps in one process); the process-wide engine
error counter and the process / platform / GC collectors are registered in each.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client import (CollectorRegistry, Counter, Histogram, disable_created_metrics, gc_collector, platform_collector,
                               process_collector)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.applications import Starlette

from service.observability.counters import ENGINE_ERRORS
from service.observability.http_metrics import HttpMetricsMiddleware

# No `*_created` series next to each counter and histogram: Prometheus does not need them, and they
# double the lines of every scrape.
disable_created_metrics()

# Seconds. Requests: from a cached health check (~1 ms) to a large import or backup (minutes).
HTTP_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
# Recall stages run from ~0.1 ms (rank) to ~100 ms (a cold kNN search); the whole recall adds the embedding.
STAGE_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
# Stage names are the pipeline's own (code, not input); a bound all the same, in case that changes.
MAX_STAGES = 32
_STAGE = re.compile(r"[a-z][a-z0-9_]{0,31}")


class Metrics:
    def __init__(self) -> None:
        self.registry = registry = CollectorRegistry()
        registry.register(ENGINE_ERRORS)
        process_collector.ProcessCollector(registry=registry)
        platform_collector.PlatformCollector(registry=registry)
        gc_collector.GCCollector(registry=registry)
        labels = ("method", "handler", "status")
        self.requests = Counter("engram_http_requests", "HTTP requests by method, route template and status", labels, registry=registry)
        self.latency = Histogram(
            "engram_http_request_duration_seconds", "Time until the response started, by method, route template and status",
            labels, buckets=HTTP_BUCKETS, registry=registry,
        )
        self.recall = Histogram("engram_recall_duration_seconds", "Whole recall pipeline (the body's query_time_ms)",
                                buckets=STAGE_BUCKETS, registry=registry)
        self.recall_stage = Histogram("engram_recall_stage_seconds", "Recall pipeline stages (the body's `timings`)", ["stage"],
                                      buckets=STAGE_BUCKETS, registry=registry)
        self._stages: set[str] = set()

    # --- HTTP --------------------------------------------------------------------------------------
    def instrument(self, app: Starlette) -> None:
        app.add_middleware(HttpMetricsMiddleware, observe=self.observe_http)

    def observe_http(self, method: str, handler: str, status: str, seconds: float) -> None:
        self.requests.labels(method, handler, status).inc()
        self.latency.labels(method, handler, status).observe(seconds)

    # --- recall ------------------------------------------------------------------------------------
    def observe_recall(self, body: Mapping[str, Any]) -> None:
        total = body.get("query_time_ms")
        if isinstance(total, (int, float)):
            self.recall.observe(total / 1000.0)
        timings = body.get("timings")
        if not isinstance(timings, Mapping):
            return
        for stage, ms in timings.items():
            if not isinstance(ms, (int, float)) or not isinstance(stage, str) or not _STAGE.fullmatch(stage):
                continue
            if stage not in self._stages:
                if len(self._stages) >= MAX_STAGES:
                    continue
                self._stages.add(stage)
            self.recall_stage.labels(stage).observe(ms / 1000.0)

    # --- background queues ---------------------------------------------------------------------------
    def watch(self, state: Callable[[], Any]) -> None:
        """Report the queues of the app state `state()` returns, read at each scrape."""
        self.registry.register(QueueCollector(state))


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value)


class QueueCollector(Collector):
    def __init__(self, state: Callable[[], Any]):
        self._state = state

    def describe(self) -> list[Metric]:
        return []  # the families depend on what runs; nothing to check at registration

    def collect(self) -> Iterator[Metric]:
        state = self._state()
        if state is None:
            return
        enrichment = getattr(state, "enrichment", None)
        if enrichment is not None:
            q = enrichment.queue_counts()
            yield _gauge("engram_enrichment_running", "1 while the enrichment worker runs", 1.0 if enrichment.running else 0.0)
            yield _gauge("engram_enrichment_queue_size", "Memories waiting in the enrichment queue", q["queue_size"])
            yield _gauge("engram_enrichment_queue_capacity", "ENRICHMENT_QUEUE_SIZE", q["queue_capacity"])
            yield _gauge("engram_enrichment_inflight", "Memories being enriched now", q["inflight"])
            done = CounterMetricFamily("engram_enrichment_memories", "Memories the worker finished, by outcome", labels=["outcome"])
            for outcome in ("successes", "failures", "skipped", "cancelled", "dropped"):
                done.add_metric([outcome], q[outcome])
            yield done
        events = getattr(state, "events", None)
        if events is not None:
            sizes = events.queue_sizes()
            yield _gauge("engram_stream_subscribers", "Clients connected to GET /stream", len(sizes))
            yield _gauge("engram_stream_queued_events", "Events waiting in all subscribers' queues", sum(sizes))
            yield _gauge("engram_stream_queue_fill_max", "Events waiting in the fullest subscriber queue", max(sizes, default=0))
            yield _gauge("engram_stream_queue_capacity", "STREAM_QUEUE_SIZE (a subscriber whose queue is full is dropped)", events.queue_size)
            yield CounterMetricFamily("engram_stream_events_published", "Events published to the stream", value=events.published)
            yield CounterMetricFamily("engram_stream_subscribers_dropped", "Subscribers dropped because their queue was full",
                                      value=events.dropped_subscribers)
        accesses = getattr(state, "access_writer", None)
        if accesses is not None:
            yield _gauge("engram_access_writes_pending", "Recalls whose accesses (last_accessed) wait to be written", accesses.pending)
            yield CounterMetricFamily("engram_access_writes_dropped", "Recalls whose accesses were not recorded: the writer's queue was full",
                                      value=accesses.dropped)
        recall_log = getattr(state, "recall_log", None)
        if recall_log is not None:
            yield _gauge("engram_recall_log_queue_size", "Recall log documents waiting to be written", recall_log.queue_size)
            docs = CounterMetricFamily("engram_recall_log_documents", "Recall log documents, by outcome", labels=["outcome"])
            for outcome, count in recall_log.counts().items():
                docs.add_metric([outcome], count)
            yield docs
