"""GET /recall (spec 000). Thin: the typed query becomes the pipeline's RecallRequest; the pipeline's
body goes out as is."""

from __future__ import annotations

from fastapi import APIRouter, Response

from service.api.deps import EmbedderDep, RecallDep, SettingsDep
from service.api.scope import ReadScope
from service.api.responses import dumps
from service.api.error_docs import ERROR_RESPONSES
from service.api.automem.recall_models import RecallQuery, RecallResponse
from service.api.query_model import query_params
from service.stream.emit import EmitDep
from service.clock.instants import utcnow

# No router-level ApiAuth: ReadScope authenticates (require_api_token is its principal), and FastAPI
# would walk that dependency's tree a second time on every recall (cached or not: ~0.05 ms).
router = APIRouter(tags=["recall"])
RecallParams = query_params(RecallQuery)


@router.get("/recall", response_model=RecallResponse, responses=ERROR_RESPONSES)
def recall(scope: ReadScope, service: RecallDep, settings: SettingsDep, embedder: EmbedderDep, emit: EmitDep,
           params: RecallParams) -> Response:
    """Ranked hybrid recall: vector, BM25 and metadata arms in one engine round trip, re-ranked by the
    ten weighted components; optional graph and entity expansion; current-state filtering."""
    now = utcnow()
    req = params.to_request(settings, dimension=embedder.dimension, now=now, bank=scope.bank)
    body = service.recall(req, now)
    emit.recalled(req, body)
    # The body is plain JSON types already: orjson skips FastAPI's jsonable_encoder walk.
    return Response(dumps(body), media_type="application/json")
