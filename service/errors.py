"""Domain exceptions and the one error shape: {"status": "error", "code": N, "message": "..."}.

Every handler lives here (STYLE.md practice 10), including FastAPI's own validation errors, which
the spec wants as 400 rather than 422.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from service.api.responses import SafeJSONResponse as JSONResponse
from service.observability.request_id import current_request_id

log = logging.getLogger("engram.errors")


class EngramError(Exception):
    status_code = 500

    def __init__(self, message: str, *, status_code: int | None = None, extra: dict | None = None, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.message = message
        if status_code is not None:
            self.status_code = status_code
        self.extra = extra or {}
        self.headers = headers


class BadRequest(EngramError):
    status_code = 400


class Unauthorized(EngramError):
    status_code = 401


class Forbidden(EngramError):
    status_code = 403


class NotFound(EngramError):
    status_code = 404


class Conflict(EngramError):
    status_code = 409


class EngineUnavailable(EngramError):
    """OpenSearch cannot be reached or refused the request for a reason that is not the caller's fault."""

    status_code = 503


def error_body(code: int, message: str, **extra) -> dict:
    """A 5xx also names the request id (the X-Request-ID header), so a report can be matched to the log."""
    body = {"status": "error", "code": code, "message": message, **extra}
    if code >= 500 and "request_id" not in body and (rid := current_request_id()):
        body["request_id"] = rid
    return body


def _describe_validation(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = [str(p) for p in err.get("loc", ()) if p not in ("body", "query", "path")]
        where = ".".join(loc)
        if err.get("type") == "json_invalid":
            return "Malformed JSON body"
        msg = err.get("msg", "invalid value")
        parts.append(f"{where}: {msg}" if where else msg)
    return "; ".join(parts) or "Invalid request"


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(EngramError)
    async def _engram(_: Request, exc: EngramError) -> JSONResponse:
        return JSONResponse(error_body(exc.status_code, exc.message, **exc.extra), status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(error_body(400, _describe_validation(exc)), status_code=400)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse(error_body(exc.status_code, str(exc.detail)), status_code=exc.status_code, headers=getattr(exc, "headers", None))
    # Unexpected exceptions are answered by service.api.middleware.RequestGuard, which (unlike an
    # `Exception` handler here, which Starlette re-raises into the server) keeps the connection usable.
