"""X-Request-ID: taken when safe, else made; on every response (errors, 413 and 500 included), on every
log line of the request and in 5xx bodies. 401s carry WWW-Authenticate."""

from __future__ import annotations

import logging
import re

import pytest

from service.errors import EngineUnavailable
from service.observability.request_id import RequestIdFilter

MADE = re.compile(r"[0-9a-f]{32}")


@pytest.fixture
def app_client(make_client):
    api = make_client(max_request_bytes=2048)

    def boom():
        raise RuntimeError("unexpected")

    def engine_down():
        raise EngineUnavailable("recall: OpenSearch is unreachable (ConnectionError); check OPENSEARCH_URL or the local node")

    api.app.add_api_route("/test/boom", boom)
    api.app.add_api_route("/test/engine-down", engine_down)
    return api


@pytest.fixture
def records():
    """Records as the service's handler sees them (its request id filter included)."""
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    handler = Keep()
    handler.addFilter(RequestIdFilter())
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield seen
    root.removeHandler(handler)
    root.setLevel(old_level)


def test_a_safe_client_id_is_echoed_and_an_unsafe_one_replaced(app_client):
    assert app_client.get("/health", headers={"X-Request-ID": "client-id-1"}).headers["x-request-id"] == "client-id-1"
    made = app_client.get("/health").headers["x-request-id"]
    assert MADE.fullmatch(made)
    assert app_client.get("/health").headers["x-request-id"] != made
    for unsafe in ("x" * 129, "two words", "a,b", "<script>alert(1)</script>", "caf\u00e9"):
        got = app_client.get("/health", headers={"X-Request-ID": unsafe.encode("utf-8")}).headers["x-request-id"]
        assert MADE.fullmatch(got), unsafe
    assert app_client.get("/health", headers={"X-Request-ID": "y" * 128}).headers["x-request-id"] == "y" * 128


@pytest.mark.parametrize(("method", "path", "kwargs", "status"), [
    ("GET", "/memory/nope", {}, 404),
    ("GET", "/recall", {"params": {"limit": "lots"}}, 400),
    ("POST", "/memory", {"content": b"{not json", "headers": {"Content-Type": "application/json"}}, 400),
    ("POST", "/memory", {"json": {"content": "x" * 4000}}, 413),  # RequestGuard, before the app reads the body
    ("GET", "/no/such/route", {}, 404),
    ("DELETE", "/health", {}, 405),
    ("GET", "/test/boom", {}, 500),  # RequestGuard's own answer to an unhandled exception
    ("GET", "/test/engine-down", {}, 503),
])
def test_every_answer_carries_the_id_and_5xx_bodies_name_it(app_client, method, path, kwargs, status):
    headers = {**kwargs.pop("headers", {}), "X-Request-ID": f"req-{status}"}
    resp = app_client.request(method, path, headers=headers, **kwargs)
    assert resp.status_code == status
    assert resp.headers["x-request-id"] == f"req-{status}"
    body = resp.json()
    assert body["status"] == "error" and body["code"] == status
    if status >= 500:
        assert body["request_id"] == f"req-{status}"
    else:
        assert "request_id" not in body


def test_401s_carry_the_challenge_and_the_id(app_client):
    token = app_client.headers.pop("Authorization")
    try:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"X-API-Key": "wrong"}):
            resp = app_client.get("/recall", params={"query": "x"}, headers={**headers, "X-Request-ID": "who-1"})
            assert resp.status_code == 401, headers
            assert resp.headers["www-authenticate"] == 'Bearer realm="engram"'
            assert resp.headers["x-request-id"] == "who-1"
            assert resp.json() == {"status": "error", "code": 401, "message": resp.json()["message"]}
    finally:
        app_client.headers["Authorization"] = token


def test_the_id_is_on_every_log_line_of_the_request(app_client, records):
    mid = app_client.post("/memory", json={"content": "a line with an id"}, headers={"X-Request-ID": "trace-store"}).json()["memory_id"]
    assert app_client.get("/recall", params={"query": "line"}, headers={"X-Request-ID": "trace-recall"}).status_code == 200
    app_client.get("/test/boom", headers={"X-Request-ID": "trace-boom"})
    by_id: dict[str | None, list[str]] = {}
    for r in records:
        if r.name.startswith(("httpx", "httpcore")):  # the test client's own lines, outside any request
            continue
        by_id.setdefault(getattr(r, "request_id", None), []).append(f"{r.name}: {r.getMessage()}")
    assert "engram.api: memory_stored" in by_id["trace-store"] and "engram.access: POST /memory 201" in " ".join(by_id["trace-store"])
    assert "engram.api: recall_complete" in by_id["trace-recall"] and any(m.startswith("engram.access: GET /recall 200") for m in by_id["trace-recall"])
    assert any(m.startswith("engram.errors: unhandled error on GET /test/boom") for m in by_id["trace-boom"])
    assert any(m.startswith("engram.access: GET /test/boom 500") for m in by_id["trace-boom"])
    # Every line a request wrote carries its id: nothing of these requests was logged without one.
    untagged = " ".join(by_id.get(None, []))
    assert "/memory" not in untagged and "recall_complete" not in untagged and "/test/boom" not in untagged
    assert mid
