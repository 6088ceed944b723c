"""Hostile input on every Signet route: a clear 4xx with the error shape, never a 5xx, nothing stored
or recorded by a refused request, and the service still answers afterwards."""

from __future__ import annotations

import json
import uuid

import pytest

from service.storage.bootstrap import drop_prefix
from tests.conftest import AUTH, TOKEN
from tests.integration.support import assert_error


@pytest.fixture(scope="module")
def api(engine_url, embedder, os_client):
    """One app for the module (refused requests change nothing, so the cases can share it)."""
    from fastapi.testclient import TestClient

    from service.config import Settings
    from service.main import create_app

    prefix = f"t{uuid.uuid4().hex[:10]}"
    settings = Settings(opensearch_url=engine_url, index_prefix=prefix, automem_api_token=TOKEN, enrichment_enabled=False, write_refresh="true")
    with TestClient(create_app(settings, embedder=embedder), raise_server_exceptions=False) as client:
        client.headers.update(AUTH)
        assert client.post("/memory", json={"content": "A memory to find: the vault code is in the safe"}).status_code == 201
        yield client
    drop_prefix(os_client, prefix)


def post_raw(api, path: str, text: str):
    return api.post(path, content=text.encode("utf-8", "surrogatepass"), headers={"content-type": "application/json"})


def nested(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


RECALL_BODIES = [
    ('{"query": "lone \\ud800 surrogate"}', "query"),
    ('{"query": "ok", "sessionKey": "s\\udfff"}', "sessionKey"),
    ('{"query": "ok", "agentId": "\\ud800"}', "agentId"),
    ('{"query": "ok", "who": "\\ud800"}', "who"),
    ('{"query": "ok", "project": "\\ud800"}', "project"),
    ('{"query": "ok", "type": "\\ud800"}', "type"),
    ('{"query": "ok", "tags": "a,\\ud800"}', "tags"),
    ('{"query": "ok", "scope": "\\ud800"}', "scope"),
    ('{"query": "ok", "since": "\\ud800"}', "since"),
    ('{"query": "ok", "importance_min": NaN}', "importance_min"),
    ('{"query": "ok", "importance_min": Infinity}', "importance_min"),
    ('{"query": "ok", "importance_min": 1.5}', "importance_min"),
    ('{"query": "ok", "limit": "ten"}', "limit"),
    ('{"query": "ok", "limit": 2.5}', "limit"),
    ('{"query": "ok", "limit": 1e400}', "limit"),
    ('{"query": 42}', "query"),
    ('{"query": ["a", "b"]}', "query"),
    ('{"query": {"nested": true}}', "query"),
    ('{"query": "ok", "time": "yesterday"}', "time"),
    ('{"query": "ok", "time": {"start": "soon"}}', "time.start"),
    ('{"query": "ok", "time": {"start": "2026-01-01T00:00:00Z", "facets": "captured"}}', "facets"),
    ('{"query": "ok", "time": {"start": "2026-01-01T00:00:00Z", "facets": ["captured", "weather"]}}', "facets"),
    ('{"query": "ok", "time": {"start": "2026-01-01T00:00:00Z", "mode": "sideways"}}', "mode"),
    ('{"query": "ok", "time": {"start": "\\ud800"}}', "time.start"),
    ('{"query": "ok", "aggregateBudget": "infinite"}', "aggregateBudget"),
    ('{"query": "ok", "includeRecalled": "perhaps"}', "includeRecalled"),
    ('{"query": "ok", "pinned": {"x": 1}}', "pinned"),
    ('{"query": "ok", "tags": [1, 2]}', "tags"),
    ('{"query": "ok", "since": "2026-99-01"}', "since"),
    ('{"query": "ok", "sessionKey": "' + "s" * 600 + '"}', "sessionKey"),
    ('{"query": "ok", "who": "' + "w" * 300 + '"}', "who"),
    ('{"query": "' + "q" * 10_001 + '"}', "query"),
    ('{"query": "ok", "tags": "' + ",".join(f"t{i}" for i in range(300)) + '"}', "tags"),
    ('{"query": "ok", "tags": "' + "t" * 300 + '"}', "tags"),
    ('{"query": "ok", "scope": "../../etc"}', "bank"),
    ('{"query": "ok",', "Malformed JSON"),
    ('["query", "ok"]', ""),
    ('"just a string"', ""),
    ("null", "object"),
    (nested(5000), ""),
    ('{"query": "ok", "time": ' + nested(3000) + "}", ""),
]


@pytest.mark.parametrize(("body", "fragment"), RECALL_BODIES)
def test_recall_refuses_hostile_bodies(api, body, fragment):
    resp = post_raw(api, "/api/memory/recall", body)
    assert_error(resp, 400, fragment)


@pytest.mark.parametrize(
    "params",
    [
        {"q": "ok", "limit": "x"}, {"q": "ok", "importance_min": "NaN"}, {"q": "ok", "importance_min": "-1"},
        {"q": "ok", "session_key": "s" * 600}, {"q": "ok", "include_recalled": "maybe"},
        {"q": "ok", "pinned": "sometimes"}, {"q": "ok", "since": "yesterday-ish"}, {"q": "ok", "until": "2026-13-01"},
        {"q": "ok", "tags": ",".join(f"t{i}" for i in range(300))}, {"q": "q" * 10_001}, {}, {"q": "  "},
        {"q": "ok", "agentId": "a" * 300}, {"q": "ok", "tags": "t" * 300},
    ],
)
def test_get_search_refuses_hostile_parameters(api, params):
    assert_error(api.get("/api/memory/search", params=params), 400)


@pytest.mark.parametrize(
    "params",
    [
        {"limit": "x"}, {"q": "ok", "importance_min": "NaN"}, {"importance_min": "Infinity"}, {"since": "whenever"},
        {"q": "q" * 10_001}, {"distinct": "d" * 100}, {"pinned": "sometimes"}, {"who": "w" * 300}, {"tags": "t" * 300},
    ],
)
def test_legacy_search_refuses_hostile_parameters(api, params):
    assert_error(api.get("/memory/search", params=params), 400)


@pytest.mark.parametrize("path", ["/api/memory/search?q=", "/memory/search?q=", "/memory/search?who=", "/memory/similar?id=",
                                  "/api/memory/search?q=ok&sessionKey=", "/api/memory/search?q=ok&who="])
def test_undecodable_query_strings_are_harmless(api, path):
    # A lone surrogate cannot be sent in a URL: its bytes (%ED%A0%80) are not UTF-8 and arrive as U+FFFD.
    resp = api.get(path + "%ED%A0%80")
    assert resp.status_code in (200, 404), resp.text
    resp.json()


def test_legacy_search_takes_odd_but_valid_values(api):
    assert api.get("/memory/search", params={"q": "vault", "limit": "-5"}).status_code == 200  # bounded to 1
    assert api.get("/memory/search", params={"q": "vault", "limit": "100000"}).status_code == 200  # bounded to 1000
    assert api.get("/memory/search", params={"distinct": "what"}).json() == {"results": []}  # only `who` is special
    assert api.get("/memory/search", params={"q": "AND OR NOT ( ) * \" :"}).status_code == 200  # no query syntax to break
    long_q = " ".join(f"w{i}" for i in range(1500))
    assert api.get("/memory/search", params={"q": long_q}).status_code == 200  # more terms than the engine's clause limit


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({}, 400), ({"id": ""}, 400), ({"id": "   "}, 400), ({"id": "x" * 300}, 400), ({"id": "../etc/passwd"}, 404),
        ({"id": "a b"}, 404), ({"id": "ok", "k": "NaN"}, 400), ({"id": "ok", "k": "1e9"}, 400), ({"id": "ok", "type": "t" * 300}, 400),
    ],
)
def test_similar_refuses_hostile_parameters(api, params, code):
    assert_error(api.get("/memory/similar", params=params), code)


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ('{"summary": "s"}', "harness"),
        ('{"harness": "h"}', "summary"),
        ('{"harness": "h", "summary": "   "}', "summary are required"),
        ('{"harness": "\\ud800", "summary": "s"}', "harness"),
        ('{"harness": "h", "summary": "lone \\ud800"}', "content"),
        ('{"harness": "h", "summary": "s", "sessionKey": "\\ud800"}', "sessionKey"),
        ('{"harness": "h", "summary": "s", "project": "' + "p" * 300 + '"}', "project"),
        ('{"harness": "h", "summary": "' + "x" * 20_001 + '"}', "content"),
        ('{"harness": "h", "summary": 7}', "summary"),
        (nested(4000), ""),
    ],
)
def test_compaction_hook_refuses_hostile_bodies(api, body, fragment):
    before = api.get("/health").json()["memory_count"]
    assert_error(post_raw(api, "/api/hooks/compaction-complete", body), 400, fragment)
    assert api.get("/health").json()["memory_count"] == before  # nothing stored


def test_refused_requests_record_nothing_and_the_service_still_answers(api):
    for body, _ in RECALL_BODIES[:10]:
        post_raw(api, "/api/memory/recall", body.replace('"query": "ok"', '"query": "vault code", "sessionKey": "victim"'))
    first = api.post("/api/memory/recall", json={"query": "vault code", "sessionKey": "victim"}).json()
    assert len(first["results"]) == 1 and first["meta"]["dedupe"]["suppressed"] == 0


def test_odd_but_valid_sessions_and_queries(api):
    for key in ("agent:", "agent::", ":::", "🔑 session", "a" * 512, "x\ny", "null"):
        resp = api.post("/api/memory/recall", json={"query": "vault code", "sessionKey": key})
        assert resp.status_code == 200, (key, resp.text)
    for query in ("2026-02-30", "9999-12-31 vault", "May 32 2026", "yesterday yesterday yesterday", "💾 vault", "*"):
        assert api.post("/api/memory/recall", json={"query": query}).status_code == 200, query
    many = " ".join(["2026-05-13"] * 500)
    assert api.post("/api/memory/recall", json={"query": many}).status_code == 200
    assert api.post("/api/memory/recall", json={"query": "vault", "time": {"start": "0001-01-01T00:00:00Z", "end": "9999-12-31T23:59:59Z"}}).status_code == 200
    assert json.loads(api.get("/api/memory/search", params={"q": "vault", "limit": "-1"}).text)["results"]
