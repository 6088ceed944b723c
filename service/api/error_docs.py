"""The one error body, as a model for the OpenAPI page, and the error responses each route documents."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class ErrorBody(BaseModel):
    status: str = Field("error", description="Always `error`")
    code: int = Field(..., description="The HTTP status, repeated")
    message: str = Field(..., description="What went wrong, naming the field or setting concerned")
    request_id: str | None = Field(None, description="5xx only: the request's id (its X-Request-ID header), also on every log line of the request")

    model_config = {"json_schema_extra": {"examples": [{"status": "error", "code": 400, "message": "limit: Input should be greater than or equal to 1"}]}}


def _error(description: str) -> dict[str, Any]:
    return {"model": ErrorBody, "description": description}


# Every authenticated route can answer these (FastAPI's own 422 is never sent: validation errors are 400).
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: _error("Invalid input: a parameter or field is missing, malformed or out of bounds"),
    401: _error("No valid API token (Authorization: Bearer, X-API-Key or ?api_key=)"),
    413: _error("The request body is larger than MAX_REQUEST_BYTES"),
    503: _error("OpenSearch is unreachable or failing; for writes the message says whether a retry is safe"),
}
NOT_FOUND = {404: _error("No such memory")}
CONFLICT = {409: _error("The Idempotency-Key was already used for a different memory")}
ADMIN_RESPONSES = {403: _error("An admin token is required (X-Admin-Token)")}
