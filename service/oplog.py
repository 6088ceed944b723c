"""Operational logging (spec 003): application events append their fields as JSON; access logs
lose their query strings.

`memory_stored`, `batch_stored`, `recall_complete`, ... are logged with `extra={...}`; the
formatter appends those fields as one JSON object after the usual timestamp/level/logger/message
line. A record without extra fields keeps the plain format; a value JSON cannot hold becomes a
placeholder; an exception's traceback still follows the line. The service's own access log
(service.api.middleware) never holds query strings; when uvicorn's access log is on as well (run
with `uvicorn` directly), its lines lose theirs too: they can carry a recall's query text or an
`api_key`.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import orjson

PLAIN_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Every attribute a bare LogRecord has (plus the two Formatter adds): anything else came from `extra`.
_STANDARD = frozenset(vars(logging.LogRecord("x", logging.INFO, "x", 0, "x", None, None))) | {"message", "asctime", "taskName"}


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


def configure_logging(level: str = "info") -> None:
    """Root handler with the JSON-fields formatter (for `python -m service`)."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFieldsFormatter(PLAIN_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    redact_access_log()
