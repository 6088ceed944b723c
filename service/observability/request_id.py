"""Request ids: `X-Request-ID` taken from the client when it is safe, else made; echoed on every
response (errors, 413 and 500 included), on every log line of the request and in 5xx bodies.

asgi-correlation-id does the ASGI part (a contextvar per request, the response header); the
request id is read back with `current_request_id()`. It is the outermost middleware, so even the
answers of RequestGuard (413, 500) carry it.
"""

from __future__ import annotations

import logging
import re
import uuid

from asgi_correlation_id import CorrelationIdMiddleware
from asgi_correlation_id.context import correlation_id
from fastapi import FastAPI

HEADER = "X-Request-ID"
# Safe in a header, a log line and a URL, as request ids of proxies and tracers are (UUIDs, hex,
# nginx's $request_id, AWS's Root=1-...; ...): no blanks, quotes, control characters or commas;
# bounded so a client cannot make every log line of its requests long.
MAX_LENGTH = 128
_SAFE = re.compile(r"[A-Za-z0-9._:;=+/@-]+")


def valid_request_id(value: str) -> bool:
    return 0 < len(value) <= MAX_LENGTH and _SAFE.fullmatch(value) is not None


def new_request_id() -> str:
    return uuid.uuid4().hex


def current_request_id() -> str | None:
    """The id of the request being served (in its worker threads and background tasks too), or None."""
    return correlation_id.get()


def install_request_ids(app: FastAPI) -> None:
    """Call after every other middleware is added: the last one added is the outermost."""
    app.add_middleware(CorrelationIdMiddleware, header_name=HEADER, generator=new_request_id, validator=valid_request_id)


class RequestIdFilter(logging.Filter):
    """Puts the current request id on each record as `request_id` (a handler filter, so records of
    every logger get it); records outside a request get none."""

    def filter(self, record: logging.LogRecord) -> bool:
        rid = correlation_id.get()
        if rid is not None and not hasattr(record, "request_id"):
            record.request_id = rid
        return True
