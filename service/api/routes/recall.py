"""GET /recall (spec 000). Thin: parse and validate parameters, run the pipeline, return its body."""

from __future__ import annotations

import orjson
from fastapi import APIRouter, BackgroundTasks, Request, Response

from service.api.deps import ApiAuth
from service.recall.params import parse_recall_params
from service.stream.emit import EmitDep
from service.writes import utcnow

router = APIRouter(dependencies=[ApiAuth], tags=["recall"])


@router.get("/recall")
def recall(request: Request, background: BackgroundTasks, emit: EmitDep) -> Response:
    state = request.app.state
    now = utcnow()
    params = parse_recall_params(request.query_params, state.settings, dimension=state.embedder.dimension, now=now)
    body = state.recall.recall(params, now, defer=background.add_task)
    emit.recalled(params, body)
    # The body is plain JSON types already: orjson skips FastAPI's jsonable_encoder walk.
    return Response(orjson.dumps(body), media_type="application/json", background=background)
