"""Resources made in the lifespan, exposed to routes as Annotated dependencies (STYLE.md practice 3).

Stores, the writer and the association service come bound to the request's bank (service/banks/scope.py):
`Read*` dependencies need the recall permission, `Write*` the remember permission.

Dependencies that do no I/O are `async def` (here, in service/auth/tokens.py and the surfaces' deps): FastAPI
runs a plain `def` dependency on the thread pool, a round trip per dependency and request.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Query, Request

from service.api.auth import require_admin_token, require_api_token
from service.auth.tokens import RECALL, REMEMBER, Principal
from service.banks.scope import BankScope, resolve_bank
from service.config import Settings
from service.embedding import Embedder
from service.graph.links import AssociationService
from service.storage.edges import EdgeStore
from service.storage.memories import MemoryStore
from service.writes.writer import MemoryWriter


async def _settings(request: Request) -> Settings:
    return request.app.state.settings


async def _embedder(request: Request) -> Embedder:
    return request.app.state.embedder


BankHeader = Annotated[str | None, Header(alias="X-Bank", description="The memory bank to act on (default DEFAULT_BANK); `bank` in the query string also works")]
BankQuery = Annotated[str | None, Query(alias="bank", include_in_schema=False)]


def _scope(permission: str):
    async def scope(request: Request, principal: Annotated[Principal, Depends(require_api_token)], header: BankHeader = None, query: BankQuery = None) -> BankScope:
        scope = resolve_bank(principal, header or query, request.app.state.settings.default_bank, permission)
        request.state.bank = scope.bank  # the stream events of this request belong to it
        return scope

    return scope


ReadScope = Annotated[BankScope, Depends(_scope(RECALL))]
WriteScope = Annotated[BankScope, Depends(_scope(REMEMBER))]


async def _store(request: Request, scope: ReadScope) -> MemoryStore:
    return request.app.state.memories.for_bank(scope.bank)


async def _edges(request: Request, scope: ReadScope) -> EdgeStore:
    return request.app.state.edges.for_bank(scope.bank)


async def _writer(request: Request, scope: WriteScope) -> MemoryWriter:
    return request.app.state.writer.for_bank(scope.bank)


async def _associations(request: Request, scope: WriteScope) -> AssociationService:
    return request.app.state.associations.for_bank(scope.bank)


SettingsDep = Annotated[Settings, Depends(_settings)]
EmbedderDep = Annotated[Embedder, Depends(_embedder)]
StoreDep = Annotated[MemoryStore, Depends(_store)]
EdgesDep = Annotated[EdgeStore, Depends(_edges)]
WriterDep = Annotated[MemoryWriter, Depends(_writer)]
AssociationsDep = Annotated[AssociationService, Depends(_associations)]

ApiAuth = Depends(require_api_token)
AdminAuth = Depends(require_admin_token)
