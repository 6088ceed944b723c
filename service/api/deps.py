"""The app's resources (made in the lifespan, service/main.py) as Annotated dependencies (STYLE.md
practice 3): the one module that reads `request.app.state`; routes declare what they use.

Stores and services serve every bank: a route passes its bank scope's `bank` (service/api/scope.py)
to each call. Dependencies that do no I/O are `async def` (here, in service/auth/tokens.py and the
surfaces' deps): FastAPI runs a plain `def` dependency on the thread pool, a round trip per
dependency and request.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from opensearchpy import OpenSearch

from service.api.auth import require_admin_token, require_api_token
from service.config import Settings
from service.consolidation.scheduler import ConsolidationService
from service.embedding import Embedder
from service.enrichment.worker import EnrichmentWorker
from service.graph.links import AssociationService
from service.observability.metrics import Metrics
from service.recall.pipeline import RecallService
from service.storage.access_writer import AccessWriter
from service.storage.banks import BankRegistry
from service.storage.edges import EdgeStore
from service.storage.ledger import RecallLedger
from service.storage.memories import MemoryStore
from service.stream import EventBus
from service.writes.writer import MemoryWriter


def _resource(name: str):
    async def resource(request: Request):
        return getattr(request.app.state, name)

    resource.__name__ = f"{name}_resource"
    return resource


SettingsDep = Annotated[Settings, Depends(_resource("settings"))]
EmbedderDep = Annotated[Embedder, Depends(_resource("embedder"))]
ClientDep = Annotated[OpenSearch, Depends(_resource("client"))]
StoreDep = Annotated[MemoryStore, Depends(_resource("memories"))]
AccessDep = Annotated[AccessWriter, Depends(_resource("access_writer"))]
EdgesDep = Annotated[EdgeStore, Depends(_resource("edges"))]
WriterDep = Annotated[MemoryWriter, Depends(_resource("writer"))]
RecallDep = Annotated[RecallService, Depends(_resource("recall"))]
AssociationsDep = Annotated[AssociationService, Depends(_resource("associations"))]
LedgerDep = Annotated[RecallLedger, Depends(_resource("ledger"))]
RegistryDep = Annotated[BankRegistry, Depends(_resource("banks"))]
ConsolidationDep = Annotated[ConsolidationService, Depends(_resource("consolidation"))]
EnrichmentDep = Annotated[EnrichmentWorker, Depends(_resource("enrichment"))]
EventsDep = Annotated[EventBus, Depends(_resource("events"))]
MetricsDep = Annotated[Metrics, Depends(_resource("metrics"))]  # METRICS_ENABLED: GET /metrics exists only then

ApiAuth = Depends(require_api_token)
AdminAuth = Depends(require_admin_token)
