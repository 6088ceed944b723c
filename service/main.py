"""create_app(): the FastAPI application. Resources are made in the lifespan (STYLE.md practice 3)."""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager

import anyio
from fastapi import FastAPI

from service import __version__
from service.api.docs import install_docs
from service.api.middleware import RequestGuard
from service.enrichment.pacing import Foreground
from service.api.responses import SafeJSONResponse
from service.api.automem import admin, associate, by_tag, consolidate, enrichment, graph, health, insights, memory, recall, stream
from service.api.signet import routes as signet
from service.api import hindsight
from service.api.hindsight.operations import RetainOperations, bank_emitter
from service.storage.access_writer import AccessWriter
from service.storage.banks import BankRegistry
from service.graph.links import AssociationService
from service.auth.tokens import TokenFileError, TokenRegistry
from service.config import Settings, get_settings
from service.consolidation.scheduler import build_consolidation
from service.embedding import Embedder
from service.enrichment.worker import EnrichmentWorker
from service.api.errors import install_error_handlers
from service.engine.local_node import local_node
from service.api.observability import Observability, install as install_observability
from service.observability.oplog import quiet_engine_log, redact_access_log
from service.recall.pipeline import RecallService
from service.storage.probe import probe_engine
from service.storage.bootstrap import ensure_indices
from service.storage.client import make_client
from service.storage.edges import EdgeStore
from service.storage.ledger import RecallLedger
from service.storage.memories import MemoryStore
from service.storage.operations import OperationStore
from service.stream import EventBus
from service.writes.backfill import Backfill
from service.writes.writer import MemoryWriter
from service.admin.reembed import warn_stale_vectors
from service.admin.reenrich import warn_older_rules
from service.admin.vector_repair import VectorRepair

log = logging.getLogger("engram")


OPENAPI_TAGS = [
    {"name": "memory", "description": "Store, read, update and delete memories (AutoMem: spec 003 Memory)"},
    {"name": "recall", "description": "Ranked hybrid recall (AutoMem: spec 000)"},
    {"name": "graph", "description": "Associations between memories and graph walks"},
    {"name": "health", "description": "Liveness and readiness; no token needed"},
    {"name": "signet", "description": "Signet's recall surface (spec 004): recall with session dedupe and date phrases, search, similar"},
    {"name": "hindsight: recall", "description": "Hindsight's recall (spec 002) on the same store: /v1/default/banks/{bank_id}/..."},
    {"name": "hindsight: memories", "description": "Hindsight's retain, list, get, delete, tags; reflect answers 501"},
    {"name": "hindsight: banks", "description": "Banks: list, create, update, statistics, delete"},
    {"name": "hindsight: operations", "description": "Async retains kept as operations: the status of one, the bank's list"},
]


class ConfigurationError(RuntimeError):
    pass


def quiet_engine_client_logs() -> None:
    """opensearch-py logs every request at INFO and, on `opensearchpy.trace`, whole bodies (recall
    query text, vectors) at DEBUG: neither belongs in our logs at any level."""
    quiet_engine_log()  # INFO off; a failed request is one WARNING line, without a traceback
    trace = logging.getLogger("opensearchpy.trace")
    trace.setLevel(logging.CRITICAL + 1)
    trace.propagate = False


def check_settings(settings: Settings) -> None:
    if not settings.automem_api_token:
        raise ConfigurationError(
            "AUTOMEM_API_TOKEN is not set: the service refuses to start without an API token "
            "(`make run` generates one for local use)"
        )


def create_app(settings: Settings | None = None, *, embedder: Embedder | None = None) -> FastAPI:
    """Build the app. Tests pass their own settings (own INDEX_PREFIX) and a shared embedder."""
    cfg = settings or get_settings()
    quiet_engine_client_logs()
    foreground = Foreground()  # requests being served: the enrichment worker paces itself by it

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        check_settings(cfg)
        try:
            app.state.tokens = TokenRegistry.load(cfg.engram_tokens_file)
        except TokenFileError as exc:
            raise ConfigurationError(str(exc)) from None
        url = cfg.opensearch_url
        if not url:
            node = local_node(cfg.local_node_name, cfg.local_node_port, cfg.local_node_heap)
            url = await anyio.to_thread.run_sync(node.start)
            log.info("OPENSEARCH_URL not set: using the local node at %s", url)
        # Route handlers run on this pool; the engine client's connection pool is sized from the same setting.
        anyio.to_thread.current_default_thread_limiter().total_tokens = cfg.worker_threads
        client = make_client(url, cfg)
        try:
            # Before the model loads: a wrong or unreachable engine fails the start in one line naming the URL.
            await anyio.to_thread.run_sync(lambda: probe_engine(client, url, setting="OPENSEARCH_URL" if cfg.opensearch_url else None))
            model = embedder or await anyio.to_thread.run_sync(lambda: Embedder.from_settings(cfg))
            await anyio.to_thread.run_sync(lambda: ensure_indices(client, cfg, model.dimension, embedder=model))
        except BaseException:
            client.close()
            raise
        state = app.state
        state.settings, state.client, state.embedder, state.opensearch_url = cfg, client, model, url
        # One of each for every bank: each call names its bank (service/api/scope.py resolves it per request).
        state.memories = MemoryStore(client, cfg.memories_alias, refresh=cfg.write_refresh, access_resolution_s=cfg.recall_access_resolution_seconds)
        state.edges = EdgeStore(client, cfg.edges_alias, refresh=cfg.write_refresh)
        writer = state.writer = MemoryWriter(cfg, state.memories, state.edges, model)
        missing = await anyio.to_thread.run_sync(lambda: warn_stale_vectors(state.memories, model.short_name, missing_too=not cfg.sync_auto_repair))
        repair = state.vector_repair = VectorRepair(state.memories, model, interval_s=cfg.sync_check_interval_seconds, excluded_types=cfg.excluded_types)
        if cfg.sync_auto_repair:
            repair.start(at_once=bool(missing))
        backfill = state.backfill = Backfill(state.memories)  # memories stored before recall's doc-value fields get them
        await anyio.to_thread.run_sync(backfill.start)
        access_writer = state.access_writer = AccessWriter(state.memories)  # recalls' accesses, written off the request path
        state.recall = RecallService(cfg, state.memories, model, state.edges, record_access=access_writer.submit)
        state.associations = AssociationService(state.memories, state.edges)
        state.ledger = RecallLedger(client, cfg.recall_ledger_alias, ttl_s=cfg.recall_ledger_ttl_seconds, max_items=cfg.recall_ledger_max_items)
        events = state.events = EventBus(cfg.stream_queue_size)
        observability = state.observability = Observability.start(cfg, client, state)  # the metrics port, the recall log
        enrichment = state.enrichment = EnrichmentWorker(cfg, state.memories, state.edges, on_event=events.on_event, serving=foreground.active)
        if cfg.enrichment_enabled:
            await anyio.to_thread.run_sync(lambda: warn_older_rules(state.memories))
            await anyio.to_thread.run_sync(enrichment.start)
        state.banks = BankRegistry(client, cfg)
        consolidation = state.consolidation = build_consolidation(cfg, client, state.memories, state.edges, writer, events.publish, banks=state.banks.all_banks)
        consolidation.start()
        # Async retains answered before a stop or a crash, and not yet stored, are resumed first.
        operations = state.hindsight_operations = RetainOperations(OperationStore(client, cfg.operations_alias), writer, state.memories,
                                                                   bank_emitter(events, enrichment, observability))
        operations.start()
        redact_access_log()
        log.info("engram %s ready: memories=%s model=%s (%d dims, %s)", __version__, cfg.memories_alias, model.short_name, model.dimension, getattr(model, "backend", "?"))
        try:
            yield
        finally:
            # What this run started, not what app.state holds now: a second run of the lifespan on the
            # same app (a test serving an app a TestClient already started) replaces app.state's.
            await anyio.to_thread.run_sync(operations.stop)
            await anyio.to_thread.run_sync(access_writer.close)
            await anyio.to_thread.run_sync(backfill.stop)
            await anyio.to_thread.run_sync(repair.stop)
            await anyio.to_thread.run_sync(enrichment.stop)
            consolidation.stop()
            await anyio.to_thread.run_sync(observability.stop)
            await anyio.to_thread.run_sync(writer.close)
            events.close()
            client.close()

    app = FastAPI(
        title="Engram",
        version=__version__,
        description=(
            "Memory recall for AI agents: the AutoMem memory API on OpenSearch.\n\n"
            "Authenticate with `Authorization: Bearer <AUTOMEM_API_TOKEN>` (or `X-API-Key`, or `?api_key=`). "
            "Errors are always `{\"status\": \"error\", \"code\": N, \"message\": \"...\"}`; invalid input is a 400, "
            "never a 422. Unknown parameters are accepted and named in the response's `warnings`."
        ),
        lifespan=lifespan,
        default_response_class=SafeJSONResponse,
        docs_url=None,
        redoc_url=None,
        openapi_tags=OPENAPI_TAGS,
    )
    install_error_handlers(app)
    install_docs(app)
    app.add_middleware(RequestGuard, max_body_bytes=cfg.max_request_bytes, on_request=foreground.touch)
    install_observability(app, cfg)  # after RequestGuard: metrics and request ids run around it
    # Routers are matched in this order: recall, the hottest route, first (matching a request against
    # every earlier router's routes cost ~0.2 ms of each recall).
    app.include_router(recall.router)
    app.include_router(health.router)
    app.include_router(by_tag.router)  # before memory: /memory/by-tag is not /memory/{memory_id}
    app.include_router(signet.router)  # before memory too: /memory/search and /memory/similar
    app.include_router(memory.router)
    app.include_router(associate.router)
    app.include_router(graph.router)
    app.include_router(enrichment.router)
    app.include_router(stream.router)
    app.include_router(consolidate.router)
    app.include_router(insights.router)
    app.include_router(admin.router)
    app.include_router(hindsight.router)
    return app
