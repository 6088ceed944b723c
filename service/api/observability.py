"""Observability wired into the app: middlewares, GET /metrics, what runs in the lifespan.

    install(app, settings)            create_app: the middlewares and GET /metrics
    Observability.start(...)          the lifespan: the metrics port, the recall log writer
    observability.observe_recall()    after each recall (stream.emit): stage timings, the log document

Middleware order, outermost first: request ids (so every answer carries X-Request-ID, RequestGuard's
413 and 500 included), HTTP metrics (so those answers are counted too), then RequestGuard.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Mapping
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Request, Response
from fastapi.security import HTTPAuthorizationCredentials
from prometheus_client import start_http_server
from prometheus_client.exposition import choose_encoder

from service.api.auth import CHALLENGE, bearer_scheme, header_scheme
from service.api.deps import MetricsDep, SettingsDep
from service.config import Settings
from service.errors import Unauthorized
from service.observability.metrics import Metrics
from service.recall.log import RecallLog
from service.storage.recall_log import RecallLogStore
from service.observability.request_id import current_request_id, install_request_ids
from service.storage.probe import StartupError
from service.api.error_docs import ERROR_RESPONSES

log = logging.getLogger("engram.observability")

def install(app: FastAPI, settings: Settings) -> None:
    """Call once in create_app, after RequestGuard is added (the last middleware added runs first)."""
    if settings.metrics_enabled:
        metrics = app.state.metrics = Metrics()
        metrics.instrument(app)
        metrics.watch(lambda: app.state)
        if not settings.metrics_port:
            app.include_router(router)
    install_request_ids(app)


async def _metrics_token(
    settings: SettingsDep,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)] = None,
    header: Annotated[str | None, Depends(header_scheme)] = None,
) -> None:
    """METRICS_TOKEN (a scrape-only token) or AUTOMEM_API_TOKEN, as a bearer token or X-API-Key."""
    given = bearer.credentials if bearer is not None else header
    accepted = [t for t in (settings.metrics_token, settings.automem_api_token) if t]
    if given is None or not any(secrets.compare_digest(given.encode("utf-8", "surrogatepass"), t.encode("utf-8", "surrogatepass")) for t in accepted):
        raise Unauthorized("GET /metrics needs METRICS_TOKEN or the API token (Authorization: Bearer <token>)", headers=CHALLENGE)


router = APIRouter(tags=["health"])


@router.get("/metrics", response_class=Response, responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text format"},
                                                               401: ERROR_RESPONSES[401]})
def metrics(request: Request, registry: MetricsDep, _: Annotated[None, Depends(_metrics_token)]) -> Response:
    """Prometheus metrics: requests and latency per route template and status, recall stage timings,
    engine errors, enrichment / stream / recall-log queues. Needs METRICS_TOKEN or the API token;
    with METRICS_PORT set it moves to that port (without a token) and leaves this one."""
    encoder, content_type = choose_encoder(request.headers.get("accept", ""))
    return Response(encoder(registry.registry), media_type=content_type)


class Observability:
    """What runs for the app's lifetime: the metrics listener (METRICS_PORT) and the recall log."""

    def __init__(self, metrics: Metrics | None, recall_log: RecallLog | None, server: Any = None):
        self.metrics = metrics
        self.recall_log = recall_log
        self._server = server

    @classmethod
    def start(cls, settings: Settings, client: Any, state: Any) -> Observability:
        metrics: Metrics | None = getattr(state, "metrics", None)
        server = None
        if metrics is not None and settings.metrics_port:
            try:
                server, _ = start_http_server(settings.metrics_port, settings.metrics_host, registry=metrics.registry)
            except OSError as exc:
                raise StartupError(f"METRICS_PORT={settings.metrics_port}: cannot listen on {settings.metrics_host}:{settings.metrics_port} ({exc.strerror or exc})") from None
            log.info("metrics on http://%s:%d/metrics", settings.metrics_host, settings.metrics_port)
        recall_log = None
        if settings.recall_log_enabled:
            recall_log = RecallLog(RecallLogStore(client, settings.recall_log_alias), queue_size=settings.recall_log_queue_size,
                                   include_query=settings.recall_log_include_query, retention_days=settings.recall_log_retention_days)
            recall_log.start()
        state.recall_log = recall_log
        return cls(metrics, recall_log, server)

    def observe_recall(self, req: Any, body: Mapping[str, Any]) -> None:
        """After a recall succeeded; cheap (the log document is written by another thread)."""
        if self.metrics is not None:
            self.metrics.observe_recall(body)
        if self.recall_log is not None:
            self.recall_log.submit(req, body, current_request_id())

    def stop(self) -> None:
        if self.recall_log is not None:
            self.recall_log.stop()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
