"""The OpenSearch client, and the translation of transport failures into the project's errors."""

from __future__ import annotations

import logging
from contextlib import contextmanager
from collections.abc import Iterator, Sequence

import orjson
from opensearchpy import OpenSearch
from opensearchpy import exceptions as os_exc
from opensearchpy.serializer import JSONSerializer

from service.config import Settings
from service.storage.connection import connection_class
from service.errors import EngineUnavailable, EngramError, NotFound
from service.observability.counters import engine_error

log = logging.getLogger("engram.storage")


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


def engine_hosts(url: str) -> list[str]:
    """OPENSEARCH_URL may name several nodes of one cluster, comma-separated: requests go round-robin
    and a node that fails is skipped until it answers again."""
    return [h.strip() for h in url.split(",") if h.strip()]


def make_client(url: str, settings: Settings) -> OpenSearch:
    auth = (settings.opensearch_user, settings.opensearch_password) if settings.opensearch_user else None
    hosts = engine_hosts(url)
    return OpenSearch(
        hosts=hosts,
        http_auth=auth,
        connection_class=connection_class(hosts, auth),
        timeout=settings.opensearch_timeout,
        # One connection per handler thread (WORKER_THREADS, the same setting sizes the thread pool),
        # plus a few for background work (access tracking, health checks), so no thread waits for one.
        pool_maxsize=settings.worker_threads + 8,
        http_compress=False,
        retry_on_timeout=False,
        # A connection failure is retried on each other node (a single node: once).
        max_retries=max(1, len(hosts)),
        serializer=OrjsonSerializer(),
    )


class EngineRejected(EngramError):
    """The engine refused a request Engram built (its 400): our fault, not the caller's. Logged in full,
    answered as a 500 without the engine's text."""

    status_code = 500


class PayloadTooLarge(EngramError):
    status_code = 413


# Appended to a 503 of a write: the engine may have applied it before the connection failed.
MAYBE_APPLIED = "the write may have been applied; retrying with the same Idempotency-Key header (or client id) is safe"


@contextmanager
def engine_errors(what: str, *, write: bool = False) -> Iterator[None]:
    """Map every client exception to the project's errors: 503 when the engine is unreachable, busy or
    failing (recovering shards answer "all shards failed" with an empty root_cause) or when an index of
    the store is missing, 404 when a document or snapshot is missing,
    413 when the engine's body limit is hit, 500 when it rejects a request Engram built."""
    tail = f"; {MAYBE_APPLIED}" if write else ""
    try:
        yield
    except os_exc.NotFoundError as exc:
        if missing_index(exc):
            # An index under a search, a count or a write is gone (deleted by hand, a half-done
            # migration): the engine's state, never the caller's request.
            raise index_missing(what, engine_reason(exc.info if isinstance(exc.info, dict) else {"error": exc.error}), tail) from exc
        raise NotFound(f"{what}: not found") from exc
    except (os_exc.ConnectionError, os_exc.ConnectionTimeout) as exc:
        engine_error("unreachable")
        raise EngineUnavailable(f"{what}: OpenSearch is unreachable ({type(exc).__name__}); check OPENSEARCH_URL or the local node{tail}") from exc
    except os_exc.TransportError as exc:
        status = exc.status_code if isinstance(exc.status_code, int) else 503
        reason = engine_reason(exc.info if isinstance(exc.info, dict) else {"error": exc.error})
        engine_error({400: "rejected", 413: "too_large", 429: "overloaded"}.get(status, "error"))
        if status == 400:
            log.error("the engine rejected a request built by Engram (%s): %s", what, reason)
            raise EngineRejected(f"{what}: internal error (the engine rejected the request; see the service log)") from exc
        if status == 413:
            raise PayloadTooLarge(f"{what}: the request is larger than the engine accepts (http.max_content_length)") from exc
        if status == 429:
            raise EngineUnavailable(f"{what}: OpenSearch is overloaded (429), retry later{tail}") from exc
        raise EngineUnavailable(f"{what}: OpenSearch error {status} ({short(reason)}){tail}") from exc
    except os_exc.OpenSearchException as exc:  # serialisation and configuration errors of the client itself
        engine_error("client")
        log.error("engine client failure (%s): %s", what, type(exc).__name__, exc_info=True)
        raise EngineUnavailable(f"{what}: the engine client failed ({type(exc).__name__}){tail}") from exc


def index_missing(what: str, reason: str, tail: str = "") -> EngineUnavailable:
    engine_error("missing_index")
    log.error("an index of the store is missing (%s): %s", what, reason)
    return EngineUnavailable(f"{what}: an index of the store is missing; restart the service to recreate it{tail}")


def missing_index(exc: os_exc.NotFoundError) -> bool:
    """Whether a 404 is the engine's index_not_found_exception (not a missing document or snapshot)."""
    info = exc.info if isinstance(exc.info, dict) else {}
    err = info.get("error")
    kind = err.get("type") if isinstance(err, dict) else exc.error
    return kind == "index_not_found_exception"


def engine_reason(body: dict | None) -> str:
    """The most specific reason in an engine error body. `root_cause` may be missing or empty (a
    restarted node recovering its shards answers "all shards failed" with `root_cause: []`)."""
    err = (body or {}).get("error") if isinstance(body, dict) else body
    if isinstance(err, dict):
        causes = err.get("root_cause")
        root = causes[0] if isinstance(causes, list) and causes and isinstance(causes[0], dict) else {}
        return str(root.get("reason") or err.get("reason") or err.get("type") or "unknown error")
    return str(err or "unknown error")


def short(reason: str, limit: int = 200) -> str:
    return reason if len(reason) <= limit else reason[:limit] + "..."


def check_docs(resp: dict, what: str) -> list[dict]:
    """The docs of an `_mget` answer; a doc-level `error` (the index is gone, a shard failed) is mapped
    as a request's would be, never read as "not found"."""
    docs = resp.get("docs", [])
    for doc in docs:
        if "error" in doc:
            check_sub_response({"error": doc["error"], "status": 404 if _kind(doc["error"]) == "index_not_found_exception" else 503}, what)
    return docs


def _kind(err) -> str | None:
    return err.get("type") if isinstance(err, dict) else None


def msearch(client: OpenSearch, searches: Sequence[tuple[str, dict, str]], what: str) -> list[dict]:
    """Searches of any indexes, (index, body, what it reads) each, in one `_msearch` (`what` the whole
    request reads); every sub-response checked for its error key."""
    if not searches:
        return []
    lines: list[dict] = []
    for index, body, _ in searches:
        lines += [{"index": index}, body]
    with engine_errors(what):
        resp = client.msearch(body=lines)
    return [check_sub_response(sub, name) for (*_, name), sub in zip(searches, resp["responses"])]


def check_sub_response(sub: dict, what: str) -> dict:
    """One `_msearch` sub-response: its `error` mapped as `engine_errors` maps a whole request's."""
    if "error" not in sub:
        return sub
    status = sub.get("status") if isinstance(sub.get("status"), int) else 503
    reason = engine_reason(sub)
    err = sub.get("error")
    if isinstance(err, dict) and err.get("type") == "index_not_found_exception":
        raise index_missing(what, reason)
    engine_error({400: "rejected", 429: "overloaded"}.get(status, "error"))
    if status == 400:
        log.error("the engine rejected a query built by Engram (%s): %s", what, reason)
        raise EngineRejected(f"{what}: internal error (the engine rejected the query; see the service log)")
    raise EngineUnavailable(f"{what}: OpenSearch error {status} ({short(reason)})")
