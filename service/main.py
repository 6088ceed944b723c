"""create_app(): the FastAPI application. Resources are made in the lifespan (STYLE.md practice 3)."""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager

import anyio
from fastapi import FastAPI

from service import __version__
from service.api.routes import admin, associate, by_tag, graph, health, memory, recall
from service.associations import AssociationService
from service.config import Settings, get_settings
from service.embedding import Embedder
from service.errors import install_error_handlers
from service.localnode import LocalNode
from service.recall.pipeline import RecallService
from service.storage.bootstrap import ensure_indices
from service.storage.client import make_client
from service.storage.edges import EdgeStore
from service.storage.memories import MemoryStore
from service.writes import MemoryWriter

log = logging.getLogger("engram")


class ConfigurationError(RuntimeError):
    pass


def check_settings(settings: Settings) -> None:
    if not settings.automem_api_token:
        raise ConfigurationError(
            "AUTOMEM_API_TOKEN is not set: the service refuses to start without an API token "
            "(`make run` generates one for local use)"
        )


def create_app(settings: Settings | None = None, *, embedder: Embedder | None = None) -> FastAPI:
    """Build the app. Tests pass their own settings (own INDEX_PREFIX) and a shared embedder."""

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        cfg = settings or get_settings()
        check_settings(cfg)
        url = cfg.opensearch_url
        if not url:
            url = await anyio.to_thread.run_sync(LocalNode(cfg.local_node_name).start)
            log.info("OPENSEARCH_URL not set: using the local node at %s", url)
        client = make_client(url, cfg)
        model = embedder or await anyio.to_thread.run_sync(lambda: Embedder(cfg.embedding_model, batch_size=cfg.embedding_batch_size, backend=cfg.embedding_backend))
        await anyio.to_thread.run_sync(lambda: ensure_indices(client, cfg, model.dimension, embedder=model))
        state = app.state
        state.settings, state.client, state.embedder, state.opensearch_url = cfg, client, model, url
        state.memories = MemoryStore(
            client, cfg.memories_alias, refresh=cfg.write_refresh, bank=cfg.default_bank,
            access_resolution_s=cfg.recall_access_resolution_seconds,
        )
        state.edges = EdgeStore(client, cfg.edges_alias, refresh=cfg.write_refresh, bank=cfg.default_bank)
        state.writer = MemoryWriter(cfg, state.memories, state.edges, model)
        state.recall = RecallService(cfg, state.memories, model, state.edges)
        state.associations = AssociationService(state.memories, state.edges)
        log.info("engram %s ready: memories=%s model=%s (%d dims, %s)", __version__, cfg.memories_alias, model.short_name, model.dimension, getattr(model, "backend", "?"))
        try:
            yield
        finally:
            client.close()

    app = FastAPI(
        title="Engram",
        version=__version__,
        description="Memory recall for AI agents: the AutoMem memory API on OpenSearch.",
        lifespan=lifespan,
    )
    install_error_handlers(app)
    app.include_router(health.router)
    app.include_router(by_tag.router)  # before memory: /memory/by-tag is not /memory/{memory_id}
    app.include_router(memory.router)
    app.include_router(associate.router)
    app.include_router(graph.router)
    app.include_router(recall.router)
    app.include_router(admin.router)
    return app
