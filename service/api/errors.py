"""The one error shape on the wire: {"status": "error", "code": N, "message": "..."}, mapped in one
place (STYLE.md practice 10) from the domain exceptions of service/errors.py, FastAPI's own
validation errors (a 400 rather than a 422) and Starlette's HTTP errors."""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.routing import Match

from service.api.responses import SafeJSONResponse as JSONResponse
from service.errors import EngramError
from service.observability.routing import route_for
from service.observability.request_id import current_request_id

log = logging.getLogger("engram.errors")


def error_body(code: int, message: str, **extra) -> dict:
    """A 5xx also names the request id (the X-Request-ID header), so a report can be matched to the log."""
    body = {"status": "error", "code": code, "message": message, **extra}
    if code >= 500 and "request_id" not in body and (rid := current_request_id()):
        body["request_id"] = rid
    return body


def unrouted_body(app: Any, method: str, path: str, code: int, message: str) -> dict:
    """An error answered before the app routes the request (the HTTP parser refused it, its head or
    body is too large, the guard's last resort), in the shape of the surface whose route it was for:
    the first route of `app` matching method and path, as the router picks, if that route's class has
    a shape of its own (`surface_route`); else the service's."""
    route, match = route_for(app, {"type": "http", "method": method, "path": path, "root_path": ""})
    if match is Match.FULL:
        return getattr(getattr(route, "original_route", route), "error_body", error_body)(code, message)
    return error_body(code, message)


def describe_validation(exc: RequestValidationError) -> str:
    """FastAPI's validation errors as one sentence naming each field."""
    parts = []
    for err in exc.errors():
        loc = [str(p) for p in err.get("loc", ()) if p not in ("body", "query", "path")]
        where = ".".join(loc)
        if err.get("type") == "json_invalid":
            return "Malformed JSON body"
        msg = err.get("msg", "invalid value")
        parts.append(f"{where}: {msg}" if where else msg)
    return "; ".join(parts) or "Invalid request"


def surface_route(body: Callable[..., dict], invalid: Callable[[RequestValidationError], Response]) -> type[APIRoute]:
    """A route class for a surface with an error shape of its own (Hindsight's, Signet's): `body(code,
    message, **extra)` shapes every error, `invalid` the validation errors. A route class is FastAPI's
    documented way to customise one router's handling; the app-wide handlers below stay for the rest."""

    class SurfaceRoute(APIRoute):
        error_body = staticmethod(body)  # also read for answers given before routing (unrouted_body)

        def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
            handler = super().get_route_handler()

            async def route(request: Request) -> Response:
                try:
                    return await handler(request)
                except RequestValidationError as exc:
                    return invalid(exc)
                except EngramError as exc:
                    return JSONResponse(body(exc.status_code, exc.message, **exc.extra), status_code=exc.status_code, headers=exc.headers)
                except StarletteHTTPException as exc:
                    return JSONResponse(body(exc.status_code, str(exc.detail)), status_code=exc.status_code, headers=getattr(exc, "headers", None))

            return route

    return SurfaceRoute


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(EngramError)
    async def _engram(_: Request, exc: EngramError) -> JSONResponse:
        return JSONResponse(error_body(exc.status_code, exc.message, **exc.extra), status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(error_body(400, describe_validation(exc)), status_code=400)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse(error_body(exc.status_code, str(exc.detail)), status_code=exc.status_code, headers=getattr(exc, "headers", None))
    # Unexpected exceptions are answered by service.api.middleware.RequestGuard, which (unlike an
    # `Exception` handler here, which Starlette re-raises into the server) keeps the connection usable.
