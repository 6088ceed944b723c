"""The OpenSearch client, and the translation of transport failures into the project's errors."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import orjson
from opensearchpy import OpenSearch
from opensearchpy import exceptions as os_exc
from opensearchpy.serializer import JSONSerializer

from service.config import Settings
from service.errors import BadRequest, EngineUnavailable, NotFound


class OrjsonSerializer(JSONSerializer):
    """orjson for request and response bodies: recall responses carry ~100 hits per arm, and the
    standard json module was a visible share of recall time."""

    def loads(self, s):
        try:
            return orjson.loads(s)
        except orjson.JSONDecodeError:
            return super().loads(s)

    def dumps(self, data):
        if isinstance(data, str):
            return data
        try:
            return orjson.dumps(data, default=self.default, option=orjson.OPT_SERIALIZE_NUMPY).decode()
        except TypeError:
            return super().dumps(data)


def make_client(url: str, settings: Settings) -> OpenSearch:
    auth = (settings.opensearch_user, settings.opensearch_password) if settings.opensearch_user else None
    return OpenSearch(
        hosts=[url],
        http_auth=auth,
        timeout=settings.opensearch_timeout,
        # Connection reuse: one pool sized for uvicorn's worker threads plus bulk imports.
        pool_maxsize=32,
        http_compress=False,
        retry_on_timeout=False,
        max_retries=1,
        serializer=OrjsonSerializer(),
    )


@contextmanager
def engine_errors(what: str) -> Iterator[None]:
    """Map client exceptions to 503 (engine down), 404 (missing) or 400 (the engine rejected the request)."""
    try:
        yield
    except os_exc.NotFoundError as exc:
        raise NotFound(f"{what}: not found") from exc
    except (os_exc.ConnectionError, os_exc.ConnectionTimeout) as exc:
        raise EngineUnavailable(f"{what}: OpenSearch is unreachable ({type(exc).__name__}); check OPENSEARCH_URL or the local node") from exc
    except os_exc.TransportError as exc:
        status = exc.status_code if isinstance(exc.status_code, int) else 503
        reason = _reason(exc)
        if status == 400:
            raise BadRequest(f"{what}: {reason}") from exc
        if status == 429:
            raise EngineUnavailable(f"{what}: OpenSearch is overloaded (429), retry later") from exc
        raise EngineUnavailable(f"{what}: OpenSearch error {status}: {reason}") from exc


def _reason(exc: os_exc.TransportError) -> str:
    info = exc.info if isinstance(exc.info, dict) else {}
    err = info.get("error")
    if isinstance(err, dict):
        root = (err.get("root_cause") or [{}])[0]
        return root.get("reason") or err.get("reason") or str(exc.error)
    return str(err or exc.error)
