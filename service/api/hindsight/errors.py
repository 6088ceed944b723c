"""Hindsight's error shapes on its own routes (the rest of the service keeps AutoMem's).

- Invalid input that FastAPI's validation catches (body, path, query): 422 with FastAPI's own
  `{"detail": [{"type", "loc", "msg", "input", "ctx"}, ...]}`, as Hindsight's server answers
  (spec 002 "Other responses: 422 Validation Error").
- Every other error: Hindsight's `{"detail": "<message>"}` (its HTTPException), which also carries
  the service's `status` / `code` / `message`, so either kind of client can read it.

A route class (FastAPI's documented way to customise one router's request handling), so the
app-wide handlers in service/errors.py stay as they are for every other route.
"""

from __future__ import annotations

from typing import Any

from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from starlette.responses import Response

from service.api.errors import error_body, surface_route
from service.api.responses import SafeJSONResponse
from service.errors import EngramError


class HindsightError(EngramError):
    """An error Hindsight answers with its own status (422 for content it cannot take, 501 for reflect)."""


def hindsight_body(code: int, message: str, **extra: Any) -> dict:
    return {"detail": message, **error_body(code, message, **extra)}


def validation_response(exc: RequestValidationError) -> Response:
    return SafeJSONResponse({"detail": jsonable_encoder(exc.errors())}, status_code=422)


HindsightRoute = surface_route(hindsight_body, validation_response)


# OpenAPI: what each Hindsight route can answer besides its 200.
def _described(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"example": {"detail": "...", "status": "error", "code": 0, "message": "..."}}}}


HINDSIGHT_ERRORS: dict[int | str, dict[str, Any]] = {
    400: _described("Invalid input the schema cannot express (a bad timestamp, a reranker floor without a reranker, ...)"),
    401: _described("No valid API token (Authorization: Bearer <token>)"),
    404: _described("No such bank or memory, or a token scoped to other banks"),
    503: _described("OpenSearch is unreachable or failing"),
}
