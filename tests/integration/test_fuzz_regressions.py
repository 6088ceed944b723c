"""What the schema fuzzer found, each pinned by a test against a real server on the real engine."""

from __future__ import annotations

import json
import socket

import pytest

from service.api.http_protocol import SERVER_OPTIONS
from tests.conftest import ADMIN, TOKEN
from tests.integration.live_server import serve


def raw_request(base: str, request: bytes) -> tuple[int, dict[str, str], bytes]:
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), {k.lower(): v for k, v in headers.items()}, body


@pytest.fixture
def live(make_client):
    """A running server (the production HTTP options) for the app of a test client."""
    api = make_client()
    with serve(api.app, **SERVER_OPTIONS) as base:
        yield api, base


@pytest.mark.parametrize(
    "request_bytes",
    [
        pytest.param(b"GET /memory/abc HTTP/1.1\r\nHost: x\r\nX-API-Key: a\x00b\r\nConnection: close\r\n\r\n", id="NUL in a header"),
        pytest.param(b"GET /recall?query=" + b"a" * 70_000 + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", id="70 kB URL"),
        pytest.param(b"GET /health HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n", id="header without colon"),
    ],
)
def test_a_request_the_http_parser_refuses_gets_the_error_shape(live, request_bytes):
    # uvicorn answers these itself, before the app, with text/plain "Invalid HTTP request received."
    _, base = live
    status, headers, body = raw_request(base, request_bytes)
    assert status == 400
    assert headers["content-type"] == "application/json"
    parsed = json.loads(body)
    assert set(parsed) == {"status", "code", "message"} and parsed["status"] == "error" and parsed["code"] == 400, parsed
    assert "URL" in parsed["message"] and "header" in parsed["message"]


def test_the_server_still_serves_after_a_malformed_request(live):
    api, base = live
    raw_request(base, b"GET /health HTTP/1.1\r\nHost: x\r\nX-API-Key: \x00\r\n\r\n")
    status, _, body = raw_request(base, f"GET /health HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n".encode())
    assert status == 200 and json.loads(body)["status"] in ("healthy", "degraded")


def documented(api, method: str, path: str) -> set[str]:
    return set(api.app.openapi()["paths"][path][method]["responses"])


def test_enrichment_routes_document_their_error_statuses(api):
    assert {"200", "400", "401", "503"} <= documented(api, "get", "/enrichment/status")
    assert {"202", "400", "401", "403", "413", "503"} <= documented(api, "post", "/enrichment/reprocess")
    # ... and answer them with the error shape.
    no_ids = api.post("/enrichment/reprocess", json=None, headers={"X-Admin-Token": ADMIN})
    assert no_ids.status_code == 400 and no_ids.json()["code"] == 400
    no_admin = api.post("/enrichment/reprocess", json={"ids": ["a"]})
    assert no_admin.status_code == 403 and no_admin.json()["code"] == 403
    assert api.get("/enrichment/status", headers={"Authorization": "Bearer wrong"}).json()["code"] == 401
