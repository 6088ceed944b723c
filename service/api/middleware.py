"""RequestGuard: the outermost layer of our own, a plain ASGI middleware.

- Bodies larger than MAX_REQUEST_BYTES get a 413 with the error shape: at once when Content-Length
  says so, else as soon as the streamed body passes the limit (nothing larger is ever buffered).
  Routes that take uploads, which they stream to disk, have limits of their own (UPLOAD_PATHS:
  POST /admin/restore takes archives up to MAX_ARCHIVE_BYTES).
- An unexpected exception becomes a 500 with the error shape and a logged traceback. Starlette's
  own `Exception` handler re-raises into the server after answering, which can leave the
  keep-alive connection unusable; here the exception stops.
- The access log: method, path, status and duration — never the query string, which can hold
  `?api_key=` tokens and recall query text (spec 003 "Operational logging").
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from service.admin.restore import MAX_ARCHIVE_BYTES
from service.api.errors import unrouted_body
from service.api.responses import dumps

log = logging.getLogger("engram.errors")
access_log = logging.getLogger("engram.access")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


# Paths whose bodies are uploads streamed to disk, and their own limits.
UPLOAD_PATHS: dict[str, int] = {"/admin/restore": MAX_ARCHIVE_BYTES}


class BodyTooLarge(Exception):
    pass


class RequestGuard:
    def __init__(self, app, max_body_bytes: int, large_body_paths: dict[str, int] | None = None,
                 on_request: Callable[[str], None] | None = None):
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.on_request = on_request  # told each request's path (the enrichment worker's pacing)
        # Routes that take uploads (archives) have limits of their own.
        self.large_body_paths = UPLOAD_PATHS if large_body_paths is None else large_body_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        if self.on_request is not None:
            self.on_request(scope.get("path", ""))
        limit = self.large_body_paths.get(scope.get("path", ""), self.max_body_bytes)
        named = "MAX_REQUEST_BYTES" if limit == self.max_body_bytes else "the upload limit of this route"
        too_large = f"Request body is larger than {limit} bytes ({named})"
        state = {"status": None, "started": False, "too_large": False, "replaced": False}

        async def send_wrapper(message: Message) -> None:
            if state["replaced"]:
                return  # the app's own answer to a body it could not read; ours was sent instead
            if message["type"] == "http.response.start":
                if state["too_large"]:
                    # FastAPI turns any failure while reading the body into its own 400.
                    state["replaced"] = True
                    await send_raw(413, too_large)
                    return
                state["status"] = message["status"]
                state["started"] = True
            await send(message)

        async def send_raw(status: int, message: str) -> None:
            body = dumps(unrouted_body(scope.get("app"), scope.get("method", ""), scope.get("path", ""), status, message))
            state["status"], state["started"] = status, True
            await send({
                "type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
            })
            await send({"type": "http.response.body", "body": body})

        declared = _content_length(scope)
        try:
            if declared is not None and declared > limit:
                await send_raw(413, too_large)
                return
            received = 0

            async def limited_receive() -> Message:
                nonlocal received
                message = await receive()
                if message["type"] == "http.request":
                    received += len(message.get("body", b""))
                    if received > limit:
                        state["too_large"] = True
                        raise BodyTooLarge()
                return message

            await self.app(scope, limited_receive, send_wrapper)
        except BodyTooLarge:
            if not state["started"]:
                await send_raw(413, too_large)
        except Exception:  # noqa: BLE001 - the one place unexpected errors end
            log.exception("unhandled error on %s %s", scope.get("method"), scope.get("path"))
            if not state["started"]:
                await send_raw(500, "Internal error; the service log has the details")
        finally:
            access_log.info(
                "%s %s %s %.1fms", scope.get("method"), scope.get("path"), state["status"] or "-",
                (time.perf_counter() - started) * 1000,
            )


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
