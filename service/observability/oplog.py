"""Operational logging (spec 003): application events append their fields as JSON; access logs
lose their query strings; LOG_FORMAT=json makes every line one JSON object.

`memory_stored`, `batch_stored`, `recall_complete`, ... are logged with `extra={...}`; the
formatter appends those fields as one JSON object after the usual timestamp/level/logger/message
line. A record without extra fields keeps the plain format; a value JSON cannot hold becomes a
placeholder; an exception's traceback still follows the line. The service's own access log
(service.api.middleware) never holds query strings; when uvicorn's access log is on as well (run
with `uvicorn` directly), its lines lose theirs too: they can carry a recall's query text or an
`api_key`.

Inside a request every record also carries its `request_id` (service/observability/request_id.py),
as one more field. With LOG_FORMAT=json the same formatter writes one JSON object per line instead:
`time`, `level`, `logger`, `message`, the fields, and `exception` for a traceback.

opensearch-py logs each request at INFO (silenced) and each failed request at WARNING with a
traceback; the failure is mapped and answered by storage.client, so its line stays, without the
traceback, once for the client's immediate retry of the same request, and a 404 (an answer, not a
failure) is not logged.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime, timezone
from typing import Any

import orjson

from service.observability.request_id import RequestIdFilter, current_request_id

PLAIN_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Every attribute a bare LogRecord has (plus the two Formatter adds): anything else came from `extra`.
# uvicorn's `color_message` (its message with ANSI colours) is not a field either.
_STANDARD = frozenset(vars(logging.LogRecord("x", logging.INFO, "x", 0, "x", None, None))) | {"message", "asctime", "taskName", "color_message"}


def extra_fields(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")}


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return f"<{type(value).__name__}>"


class JsonFieldsFormatter(logging.Formatter):
    """The plain line plus its fields as JSON; with `json_lines`, the whole record as one JSON object."""

    def __init__(self, fmt: str = PLAIN_FORMAT, *, json_lines: bool = False):
        super().__init__(fmt)
        self.json_lines = json_lines

    def format(self, record: logging.LogRecord) -> str:
        if not self.json_lines:
            return super().format(record)
        doc: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname, "logger": record.name, "message": record.getMessage(),
        }
        for key, value in extra_fields(record).items():
            doc.setdefault(key, value)
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            doc["stack"] = self.formatStack(record.stack_info)
        doc = _jsonable(doc)
        try:
            return orjson.dumps(doc).decode()
        except (TypeError, ValueError):  # lone surrogates, which no UTF-8 line can hold: "?" instead
            return json.dumps(doc, ensure_ascii=False).encode("utf-8", "replace").decode("utf-8")

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
        line = super().formatMessage(record)
        fields = extra_fields(record)
        if not fields:
            return line
        try:
            encoded = orjson.dumps(_jsonable(fields)).decode()
        except (TypeError, ValueError):  # e.g. lone surrogates in a string
            encoded = orjson.dumps({k: "<unserializable>" for k in fields}).decode()
        return f"{line} {encoded}"


class RedactQueryString(logging.Filter):
    """Uvicorn's access record: args = (client, method, full_path, http_version, status)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str) and "?" in args[2]:
            record.args = (*args[:2], args[2].split("?", 1)[0], *args[3:])
        return True


def redact_access_log(logger_name: str = "uvicorn.access") -> None:
    """Idempotent: install the query-string filter on the access logger."""
    logger = logging.getLogger(logger_name)
    if not any(isinstance(f, RedactQueryString) for f in logger.filters):
        logger.addFilter(RedactQueryString())


# opensearch-py's line for a failed request (opensearchpy/connection/base.py log_request_fail).
ENGINE_REQUEST_FAILED = "%s %s [status:%s request:%.3fs]"
_engine_muted: ContextVar[bool] = ContextVar("engine_log_muted", default=False)


class EngineRequestLog(logging.Filter):
    def __init__(self) -> None:
        super().__init__()
        # This thread's last line in a request: the client retries a failed connection at once
        # (service/storage/client.py; on a single node, once), and each try writes the same line.
        self._last = threading.local()

    def filter(self, record: logging.LogRecord) -> bool:
        if _engine_muted.get():
            return False
        if record.msg == ENGINE_REQUEST_FAILED and record.levelno >= logging.WARNING:
            args = record.args if isinstance(record.args, tuple) else ()
            if len(args) >= 3 and args[2] == 404:
                return False
            record.exc_info, record.exc_text = None, None
            request = current_request_id()
            line, last = (*args[:3], request), getattr(self._last, "line", None)
            self._last.line = line
            if request is not None and line == last:
                return False
        return True


@contextmanager
def engine_log_muted() -> Iterator[None]:
    """No opensearch-py records from this thread meanwhile (a probe that reports its own failure)."""
    token = _engine_muted.set(True)
    try:
        yield
    finally:
        _engine_muted.reset(token)


def quiet_engine_log(logger_name: str = "opensearch") -> None:
    """Idempotent: the per-request INFO lines off, failed requests as one line (see the module doc)."""
    logger = logging.getLogger(logger_name)
    logger.setLevel(logging.WARNING)
    if not any(isinstance(f, EngineRequestLog) for f in logger.filters):
        logger.addFilter(EngineRequestLog())


def configure_logging(level: str = "info", fmt: str = "text") -> None:
    """Root handler with the JSON-fields formatter (for `python -m service`): `fmt` is LOG_FORMAT
    (text or json); every record of a request carries its request id."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFieldsFormatter(PLAIN_FORMAT, json_lines=fmt == "json"))
    handler.addFilter(RequestIdFilter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    redact_access_log()
    quiet_engine_log()
