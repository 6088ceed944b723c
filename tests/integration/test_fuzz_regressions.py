"""What the schema fuzzer found, each pinned by a test against a real server on the real engine."""

from __future__ import annotations

import json
import re
import socket

import pytest

from service.api.http_protocol import SERVER_OPTIONS
from tests.conftest import ADMIN, TOKEN
from tests.integration.live_server import serve
from tests.integration.support import assert_error, by_id, ids, mem, recall


def raw(api, method: str, path: str, body: str):
    return api.request(method, path, content=body.encode(), headers={"content-type": "application/json"})


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
    """A running server (the production HTTP options) for the app of a test client. The client has
    started the app already: the server does not run its lifespan a second time."""
    api = make_client()
    with serve(api.app, lifespan="off", **SERVER_OPTIONS) as base:
        yield api, base


SERVICE_KEYS = {"status", "code", "message"}


@pytest.mark.parametrize(
    "request_bytes, keys",
    [
        pytest.param(b"GET /memory/abc HTTP/1.1\r\nHost: x\r\nX-API-Key: a\x00b\r\nConnection: close\r\n\r\n", SERVICE_KEYS, id="NUL in a header"),
        pytest.param(b"GET /recall?query=" + b"a" * 70_000 + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", SERVICE_KEYS, id="70 kB URL"),
        pytest.param(b"GET /health HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n", SERVICE_KEYS, id="header without colon"),
        # Found by the schema fuzzer: Signet's route documents its 400 with `error` required.
        pytest.param(b"GET /memory/search?query=" + b"%C3%A9" * 12_000 + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", SERVICE_KEYS | {"error"}, id="72 kB URL to Signet's route"),
        pytest.param(b"GET /v1/default/banks/b/memories/list?q=" + b"a" * 70_000 + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", SERVICE_KEYS | {"detail"}, id="70 kB URL to Hindsight's route"),
        pytest.param(b"GET /api/memory/m1 HTTP/1.1\r\nHost: x\r\nX-API-Key: a\x01b\r\nConnection: close\r\n\r\n", SERVICE_KEYS | {"error"}, id="control character to Signet's route"),
    ],
)
def test_a_request_the_http_parser_refuses_gets_the_error_shape_of_its_route(live, request_bytes, keys):
    # uvicorn answers these itself, before the app, with text/plain "Invalid HTTP request received."
    _, base = live
    status, headers, body = raw_request(base, request_bytes)
    assert status == 400
    assert headers["content-type"] == "application/json"
    parsed = json.loads(body)
    assert set(parsed) == keys and parsed["status"] == "error" and parsed["code"] == 400, parsed
    assert parsed.get("error", parsed["message"]) == parsed.get("detail", parsed["message"]) == parsed["message"]
    assert "URL" in parsed["message"] and "header" in parsed["message"]


def test_an_answer_before_routing_meets_the_error_schema_its_route_documents(api):
    # For every route (from the app's own OpenAPI document), the body given before routing, for a
    # concrete path of that route, has the fields the route's documented 4xx schemas require.
    from service.api.errors import unrouted_body
    spec = api.app.openapi()
    checked = 0
    for template, methods in spec["paths"].items():
        path = re.sub(r"\{[^}]+\}", "x1", template)
        for method, op in methods.items():
            body = unrouted_body(api.app, method.upper(), path, 400, "refused")
            for status, response in op.get("responses", {}).items():
                schema = response.get("content", {}).get("application/json", {}).get("schema", {})
                if "$ref" in schema:
                    schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
                if status.startswith("4") and (required := set(schema.get("required", ()))):
                    checked += 1
                    assert required <= set(body), (method, template, status, required)
    assert checked > 0
    # ... and the routes without a shape of their own get exactly the service's.
    assert set(unrouted_body(api.app, "POST", "/memory", 413, "too large")) == SERVICE_KEYS
    assert set(unrouted_body(api.app, "GET", "/no/such/route", 400, "refused")) == SERVICE_KEYS


def _send_slowly(base: str, head: bytes, chunk: int = 65536) -> tuple[int, dict[str, str], bytes]:
    """Send `head` in chunks, as a client streaming headers does, then read the answer; the server
    may answer and close before everything is sent."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        try:
            for i in range(0, len(head), chunk):
                sock.sendall(head[i:i + chunk])
        except (BrokenPipeError, ConnectionResetError):
            pass
        data = b""
        try:
            while part := sock.recv(65536):
                data += part
        except ConnectionResetError:
            pass
    first, _, body = data.partition(b"\r\n\r\n")
    lines = first.decode("latin-1").split("\r\n")
    return int(lines[0].split()[1]), {k.lower(): v for k, v in (line.split(": ", 1) for line in lines[1:])}, body


@pytest.mark.parametrize("head", [
    pytest.param(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 5_000_000 + b"\r\n\r\n", id="one 5 MB header"),
    pytest.param(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 140_000 + b"\r\n\r\n", id="one 140 kB header"),
    pytest.param(b"GET /health HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-H%d: %s\r\n" % (i, b"v" * 100) for i in range(20_000)) + b"\r\n", id="20,000 headers"),
])
@pytest.mark.parametrize("chunk", [65536, None], ids=["streamed", "one chunk"])
def test_a_request_head_over_the_limit_is_a_431_and_the_connection_closes(live, head, chunk):
    from service.api.http_protocol import MAX_REQUEST_HEAD_BYTES

    _, base = live
    status, headers, body = _send_slowly(base, head, chunk=chunk or len(head))
    assert status == 431
    assert headers["content-type"] == "application/json" and headers["connection"] == "close"
    parsed = json.loads(body)
    assert parsed["code"] == 431 and str(MAX_REQUEST_HEAD_BYTES) in parsed["message"]


def test_heads_within_the_limit_and_large_bodies_are_served(live):
    api, base = live
    auth = f"Authorization: Bearer {TOKEN}\r\n".encode()
    big_header = b"X-Note: " + b"n" * 60_000 + b"\r\n"
    status, _, _ = _send_slowly(base, b"GET /health HTTP/1.1\r\nHost: x\r\n" + big_header + b"Connection: close\r\n\r\n")
    assert status == 200
    # A body far larger than the head limit, arriving with the head in the same chunks, is not head.
    content = json.dumps({"content": "x" * 300_000}).encode()
    post = (b"POST /memory HTTP/1.1\r\nHost: x\r\n" + auth + b"Content-Type: application/json\r\nContent-Length: "
            + str(len(content)).encode() + b"\r\nConnection: close\r\n\r\n" + content)
    status, _, body = _send_slowly(base, post, chunk=len(post))
    assert status != 431, body
    assert status in (400, 413), body  # refused for its size by the app (not as a head)


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


# --- integers beyond 64 bits: accepted, stored, then every read that returned them answered 500 --------
@pytest.mark.parametrize("value", [2**64, -(2**63) - 1, 10**400])
def test_metadata_integers_beyond_64_bits_are_refused(api, value):
    mid = mem(api, "a memory to update")
    body = f'{{"content": "x", "metadata": {{"n": [1, {value}]}}}}'
    for resp in (raw(api, "POST", "/memory", body), raw(api, "PATCH", f"/memory/{mid}", body),
                 raw(api, "POST", "/memory/batch", f'{{"memories": [{body}]}}')):
        assert_error(resp, 400, "metadata.n[1]", "64 bits")
    assert api.get(f"/memory/{mid}").json()["memory"]["content"] == "a memory to update"


def test_metadata_integers_at_the_64_bit_bounds_round_trip(api):
    mid = mem(api, "bounds", metadata={"max": 2**64 - 1, "min": -(2**63)})
    assert api.get(f"/memory/{mid}").json()["memory"]["metadata"] == {"max": 2**64 - 1, "min": -(2**63)}


@pytest.mark.own_app('writes a fixed id and reads the engine directly')
def test_a_stored_huge_integer_never_fails_a_read(api, os_client):
    """Written straight into the engine (bypassing validation): recall, GET, by-tag and PATCH still answer 200.
    (orjson reads 10**30 back as a float; 10**400 only the standard json module reads, as an int.)"""
    good = mem(api, "healthy memory about the deploy pipeline", tags=["ops"])
    alias = api.app.state.settings.memories_alias
    vector = api.app.state.embedder.embed_documents(["huge memory about the deploy pipeline"])[0]
    doc = {
        "id": "huge-1", "bank": "default", "content": "huge memory about the deploy pipeline", "tags": ["ops"],
        "tags_norm": ["ops"], "tag_prefixes": ["ops"], "type": "Context", "importance": 0.9, "confidence": 0.5,
        "timestamp": "2026-01-01T00:00:00+00:00", "metadata": {"n": 10**400}, "embedding": vector,
    }
    os_client.index(index=alias, id="huge-1", body=json.dumps(doc), refresh=True)

    body = recall(api, query="deploy pipeline", limit=5)
    assert set(ids(body)) == {good, "huge-1"}
    assert by_id(body)["huge-1"]["memory"]["metadata"] == {"n": str(10**400)}
    assert api.get("/memory/huge-1").json()["memory"]["metadata"] == {"n": str(10**400)}
    assert api.get("/memory/by-tag", params={"tags": "ops"}).json()["count"] == 2
    patched = api.patch("/memory/huge-1", json={"importance": 0.4})
    assert patched.status_code == 200, patched.text


# --- associations ---------------------------------------------------------------------------------
def test_a_lone_surrogate_in_an_edge_property_is_a_400_not_a_500(api):
    a, b = mem(api, "first"), mem(api, "second")
    body = f'{{"memory1_id": "{a}", "memory2_id": "{b}", "type": "EVOLVED_INTO", "reason": "bad \\ud800"}}'
    assert_error(raw(api, "POST", "/associate", body), 400, "reason", "Unicode")
    batch = raw(api, "POST", "/associate", f'{{"associations": [{body}]}}')
    assert batch.status_code == 207 and "reason" in batch.json()["failed"][0]["reason"], batch.text
    assert api.get(f"/memories/{a}/related").json()["count"] == 0


def test_observations_beyond_64_bits_are_refused(api):
    a, b = mem(api, "first"), mem(api, "second")
    resp = api.post("/associate", json={"memory1_id": a, "memory2_id": b, "type": "REINFORCES", "observations": 2**64})
    assert_error(resp, 400, "observations")
    ok = api.post("/associate", json={"memory1_id": a, "memory2_id": b, "type": "REINFORCES", "observations": 2**63 - 1})
    assert ok.status_code == 201, ok.text


def test_an_invalidation_dated_before_the_year_1000_is_stored_whole(api):
    # The supersession time was written as "999-05-05T...": the engine refused it after the edge was
    # stored (503 "edge stored but the supersession state was not").
    old, new = mem(api, "the old plan"), mem(api, "the new plan")
    resp = api.post("/associate", json={"memory1_id": old, "memory2_id": new, "type": "INVALIDATED_BY", "timestamp": "0999-05-05T00:00:00Z"})
    assert resp.status_code == 201, resp.text
    memory = api.get(f"/memory/{old}").json()["memory"]
    assert memory["superseded_at"].startswith("0999-05-05T00:00:00"), memory
    assert memory["superseded_by"] == new


def test_a_batch_item_echoing_a_lone_surrogate_id_is_reported_not_a_500(api):
    # The failed item echoes the ids it was given; the 207 body was rendered with the standard json
    # module, which cannot encode a lone surrogate as UTF-8.
    a = mem(api, "first")
    body = f'{{"associations": [{{"memory1_id": "{a}", "memory2_id": "\\ud800"}}, {{"memory1_id": "", "memory2_id": "x"}}]}}'
    resp = raw(api, "POST", "/associate", body)
    assert resp.status_code == 207, resp.text
    failed = resp.json()["failed"]
    assert [f["index"] for f in failed] == [0, 1] and failed[0]["memory2_id"] == "\ufffd"
