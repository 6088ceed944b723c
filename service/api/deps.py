"""Resources made in the lifespan, exposed to routes as Annotated dependencies (STYLE.md practice 3)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from service.auth import require_admin_token, require_api_token
from service.config import Settings
from service.embedding import Embedder
from service.storage.edges import EdgeStore
from service.storage.memories import MemoryStore
from service.writes import MemoryWriter


def _settings(request: Request) -> Settings:
    return request.app.state.settings


def _store(request: Request) -> MemoryStore:
    return request.app.state.memories


def _edges(request: Request) -> EdgeStore:
    return request.app.state.edges


def _embedder(request: Request) -> Embedder:
    return request.app.state.embedder


def _writer(request: Request) -> MemoryWriter:
    return request.app.state.writer


SettingsDep = Annotated[Settings, Depends(_settings)]
StoreDep = Annotated[MemoryStore, Depends(_store)]
EdgesDep = Annotated[EdgeStore, Depends(_edges)]
EmbedderDep = Annotated[Embedder, Depends(_embedder)]
WriterDep = Annotated[MemoryWriter, Depends(_writer)]

ApiAuth = Depends(require_api_token)
AdminAuth = Depends(require_admin_token)
