"""JSON responses that cannot fail: one odd stored value must never turn a whole read into a 500.

orjson (fast, used for every body) refuses strings with lone surrogates, integers beyond 64 bits and
nesting deeper than 254 levels. Writes refuse all three (service/memory/limits.py), but documents
written before those checks, restored from elsewhere or changed directly in the engine still can hold them. The fast path
serialises as is; only when that fails is the body sanitised (lone surrogates become U+FFFD, huge
integers their decimal string, levels past MAX_DEPTH a placeholder string) and a warning logged.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson
from starlette.responses import JSONResponse

from service.memory.index_only import CURATION_FIELDS, RANKING_FIELDS
from service.memory.limits import INT_MAX, INT_MIN

log = logging.getLogger("engram.responses")

# Below orjson's 254-level limit, with room for the envelope around a memory.
MAX_DEPTH = 200
TOO_DEEP = "[nested too deeply to serialise]"


def _clean_text(value: str) -> str:
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def sanitize(value: Any, depth: int = 0) -> Any:
    """A copy of `value` that orjson can always serialise."""
    if isinstance(value, str):
        return _clean_text(value)
    if depth >= MAX_DEPTH and isinstance(value, (dict, list, tuple)):
        return TOO_DEEP
    if isinstance(value, dict):
        return {_clean_text(str(k)): sanitize(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [sanitize(v, depth + 1) for v in value]
    if isinstance(value, int) and not isinstance(value, bool) and not INT_MIN <= value <= INT_MAX:
        return str(value)  # beyond orjson's 64 bits
    if isinstance(value, (int, float, bool)) or value is None:
        return value
    return _clean_text(str(value))


def dumps(content: Any) -> bytes:
    try:
        return orjson.dumps(content)
    except (orjson.JSONEncodeError, TypeError):
        log.warning("a response held a value that cannot be serialised as is (lone surrogate, huge integer, deep nesting or a foreign type); sent it sanitised")
        return orjson.dumps(sanitize(content))


# Stored fields no client sees: the vector, the bank (implied by the request), derived index fields
# the ranking aids and Hindsight's curation record (service/memory/index_only.py).
HIDDEN = ("embedding", "bank", "tags_norm", "metadata_terms", *RANKING_FIELDS, *CURATION_FIELDS)


def public_memory(memory_id: str, source: dict) -> dict:
    """A stored memory as clients see it; sanitised if it cannot be serialised as is (see api/responses)."""
    out = {k: v for k, v in source.items() if k not in HIDDEN}
    out["id"] = memory_id
    try:
        orjson.dumps(out)
    except (orjson.JSONEncodeError, TypeError):
        log.warning("memory %s holds a value that cannot be serialised as is; returned sanitised", sanitize(memory_id))
        out = sanitize(out)
    return out


class SafeJSONResponse(JSONResponse):
    """The app's default response class: orjson, with the sanitising fallback."""

    def render(self, content: Any) -> bytes:
        return dumps(content)
