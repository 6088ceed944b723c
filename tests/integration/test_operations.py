"""What an operator sees: logs without secrets, health that answers whatever the engine does, a
connection that survives an unexpected error, pools sized together."""

from __future__ import annotations

import logging
import os
import signal
import time

import httpx
import pytest

from service.config import Settings
from service.engine.local_node import LocalNode
from service.main import create_app
from tests.conftest import TOKEN
from tests.integration.live_server import serve
from tests.integration.support import mem

SECRET_QUERY = "whereabouts of the zebra-7719 prototype"


def test_logs_hold_no_token_and_no_query_text(api, caplog):
    mem(api, "The zebra-7719 prototype sits in lab B")
    with caplog.at_level(logging.DEBUG):
        headers = {"Authorization": ""}
        resp = api.get("/recall", params={"query": SECRET_QUERY, "api_key": TOKEN}, headers=headers)
        assert resp.status_code == 200 and resp.json()["count"] == 1
        api.get("/recall", params={"query": SECRET_QUERY, "api_key": "wrong-token"}, headers=headers)
        bad = api.post("/memory", content='{"content": "note: %s", "metadata": {"k": NaN}}' % SECRET_QUERY, headers={"Content-Type": "application/json"})
        assert bad.status_code == 400
    # The test client's own `httpx` logger prints the URLs it calls; everything else is the service.
    service_lines = [r for r in caplog.records if not r.name.startswith("httpx")]
    text = "\n".join(f"{r.name} {r.getMessage()}" for r in service_lines)
    assert "engram.access" in text and "GET /recall 200" in text
    for secret in (TOKEN, "wrong-token", "zebra", "whereabouts"):
        assert secret not in text, secret


def test_an_unexpected_error_is_a_500_with_the_error_shape_and_the_connection_survives(make_client):
    state = make_client().app.state
    app = create_app(state.settings, embedder=state.embedder)

    def boom():
        raise RuntimeError("unexpected")

    app.add_api_route("/boom", boom)
    with serve(app) as url, httpx.Client(base_url=url) as client:
        resp = client.get("/boom", headers={"X-Request-ID": "boom-1"})
        assert resp.status_code == 500 and resp.headers["x-request-id"] == "boom-1"
        assert resp.json() == {"status": "error", "code": 500, "message": "Internal error; the service log has the details", "request_id": "boom-1"}
        for _ in range(3):
            assert client.get("/health").status_code == 200
        assert len(client._transport._pool.connections) == 1  # one keep-alive connection served all four


def test_urls_up_to_60_kb_get_json_answers(api):
    resp = api.get("/recall", params={"query": "x" * 60_000})
    assert resp.status_code == 200 and resp.json()["status"] == "success"


def test_engine_client_pool_is_sized_with_the_handler_threads(make_client):
    api = make_client(worker_threads=12)
    connection = api.app.state.client.transport.connection_pool.connections[0]
    assert connection.pool_size == 12 + 8  # idle keep-alive connections kept (service/storage/connection.py)


def test_ready_is_open_and_reports_the_engine(api):
    api.headers.pop("Authorization")
    resp = api.get("/ready")
    assert resp.status_code == 200 and resp.json()["status"] == "ready"


@pytest.mark.skipif(bool(os.environ.get("ENGRAM_TEST_OPENSEARCH_URL") or os.environ.get("ENGRAM_TEST_ENGINE")), reason="needs the local node launcher")
def test_health_answers_fast_while_the_engine_is_frozen(embedder):
    """SIGSTOP freezes the test's own node: /health stays 200 "degraded" within its timeout, names no
    address and no exception text; /ready is 503; both recover when the node resumes."""
    from fastapi.testclient import TestClient

    node = LocalNode(f"frozen-{os.getpid()}", heap="512m")
    node.wipe()
    try:
        url = node.start()
        settings = Settings(opensearch_url=url, automem_api_token="t", index_prefix="frozen", health_timeout_seconds=1.5)
        with TestClient(create_app(settings, embedder=embedder), raise_server_exceptions=False) as api:
            assert api.get("/health").json()["status"] == "healthy"
            pid = node._state()["pid"]
            os.kill(pid, signal.SIGSTOP)
            try:
                body = api.get("/health").json()
                ready = api.get("/ready")
            finally:
                os.kill(pid, signal.SIGCONT)
            assert body["status"] == "degraded" and body["opensearch"]["connected"] is False
            assert body["opensearch"]["error"] == "OpenSearch did not answer within 1.5 s"
            assert "127.0.0.1" not in str(body) and str(node._state()["port"]) not in str(body)
            assert ready.status_code == 503 and ready.json()["code"] == 503
            deadline = time.monotonic() + 30
            while api.get("/health").json()["status"] != "healthy":
                assert time.monotonic() < deadline
                time.sleep(0.5)
            assert api.get("/ready").status_code == 200
    finally:
        node.wipe()
