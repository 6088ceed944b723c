"""Signet's error shape on its own routes (the rest of the service keeps AutoMem's; Hindsight's keep
Hindsight's): `{"error": "<message>"}`, as Signet's daemon answers (`c.json({error}, status)`), which
also carries the service's `status` / `code` / `message`, so either kind of client can read it.
Validation errors are a 400, as Signet's are (never FastAPI's 422).

A route class (FastAPI's documented way to customise one router's request handling), so the
app-wide handlers in service/api/errors.py stay as they are for every other route. Errors raised
before the app routes a request (a body over MAX_REQUEST_BYTES, a request line the HTTP parser
refuses) take the shape of the route it was for too (`errors.unrouted_body`).
"""

from __future__ import annotations

from typing import Any

from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, Field
from starlette.responses import Response

from service.api.errors import describe_validation, error_body, surface_route
from service.api.responses import SafeJSONResponse


def signet_body(code: int, message: str, **extra: Any) -> dict:
    return {"error": message, **error_body(code, message, **extra)}


def _invalid(exc: RequestValidationError) -> Response:
    return SafeJSONResponse(signet_body(400, describe_validation(exc)), status_code=400)


SignetRoute = surface_route(signet_body, _invalid)


class SignetError(BaseModel):
    error: str = Field(..., description="What went wrong (Signet's field)")
    status: str = Field("error", description="Always `error` (the service's shape, alongside)")
    code: int = Field(..., description="The HTTP status, repeated")
    message: str = Field(..., description="The same as `error`")

    model_config = {"json_schema_extra": {"examples": [{"error": "query is required", "status": "error", "code": 400, "message": "query is required"}]}}


def _error(description: str) -> dict[str, Any]:
    return {"model": SignetError, "description": description}


# What each Signet route can answer besides its 200.
SIGNET_ERRORS: dict[int | str, dict[str, Any]] = {
    400: _error("Invalid input: a field is missing, malformed or out of bounds"),
    401: _error("No valid API token (Authorization: Bearer, X-API-Key or ?api_key=)"),
    403: _error("The token lacks the permission this route needs"),
    404: _error("No such memory or bank, or a token scoped to other banks"),
    503: _error("OpenSearch is unreachable or failing; for writes the message says whether a retry is safe"),
}
# POST /api/memory/remember: its idempotencyKey names the memory stored first (a retry answers it).
SIGNET_CONFLICT: dict[int | str, dict[str, Any]] = {409: _error("The idempotencyKey was already used for a different memory")}
