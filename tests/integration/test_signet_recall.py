"""Signet's POST /api/memory/recall and GET /api/memory/search (spec 004) against the real engine:
every request field, every response field, the spec's example request, scope = bank, aggregate."""

from __future__ import annotations

import pytest

from service.embedding import EmbeddingError
from tests.integration.support import assert_error, settle_accesses

ROW_FIELDS = {
    "id", "content", "content_length", "truncated", "score", "source", "type", "tags", "pinned", "importance", "who", "project",
    "created_at", "subject_type", "subject_id", "supplementary", "already_recalled",
}
TEMPORAL_FIELDS = {"temporal_facet", "temporal_start_at", "temporal_end_at"}

# spec 004's request body, word for word
SPEC_REQUEST = {
    "query": "user preferences for editor", "limit": 10, "type": "preference", "tags": "editor,ui", "who": "claude-code",
    "pinned": False, "importance_min": 0.5, "since": "2026-01-01T00:00:00Z",
    "time": {"start": "2026-05-13T00:00:00.000Z", "end": "2026-05-14T00:00:00.000Z", "facets": ["session", "occurred", "source", "captured"], "mode": "auto"},
    "aggregate": False, "aggregateBudget": "small", "saveAggregate": True, "agentId": "alice", "sessionKey": "session-uuid",
    "includeRecalled": False, "scope": "world:alpha",
}


@pytest.fixture
def api(make_client):
    return make_client(write_refresh="true", recall_date_timezone="America/Denver")


def put(api, content: str, bank: str | None = None, **fields) -> str:
    resp = api.post("/memory", json={"content": content, **fields}, headers={"X-Bank": bank} if bank else {})
    assert resp.status_code == 201, resp.text
    return resp.json()["memory_id"]


def signet(api, **body) -> dict:
    resp = api.post("/api/memory/recall", json=body)
    assert resp.status_code == 200, resp.text
    return resp.json()


def ids(body: dict) -> list[str]:
    return [r["id"] for r in body["results"]]


def test_the_spec_example_request(api):
    match = dict(type="Preference", tags=["preference", "editor", "ui"], who="claude-code", importance=0.9, timestamp="2026-05-13T10:00:00Z")
    m1 = put(api, "User prefers vim keybindings in the editor", "world:alpha", **match)
    # each decoy fails exactly one of the request's filters
    decoys = [
        put(api, "User prefers emacs keybindings in the editor", "world:alpha", **{**match, "type": "Decision"}),
        put(api, "User prefers nano in the editor", "world:alpha", **{**match, "tags": ["preference", "editor"]}),
        put(api, "User prefers helix in the editor", "world:alpha", **{**match, "who": "cursor"}),
        put(api, "User prefers kakoune in the editor", "world:alpha", **{**match, "importance": 0.3}),
        put(api, "User prefers vscode in the editor", "world:alpha", **{**match, "timestamp": "2026-05-14T00:00:00Z"}),
        put(api, "User prefers sublime in the editor", "world:alpha", **{**match, "timestamp": "2025-12-31T00:00:00Z"}),
        put(api, "User prefers vim keybindings in the editor (default bank)", None, **match),
    ]
    body = signet(api, **SPEC_REQUEST)
    assert ids(body) == [m1] and m1 not in decoys
    row = body["results"][0]
    assert set(row) == ROW_FIELDS | TEMPORAL_FIELDS
    assert {k: row[k] for k in ROW_FIELDS - {"score", "id", "subject_id", "source"}} == {
        "content": "User prefers vim keybindings in the editor", "content_length": 42, "truncated": False, "type": "preference",
        "tags": "preference,editor,ui", "pinned": False, "importance": 0.9, "who": "claude-code", "project": None,
        "created_at": "2026-05-13T10:00:00.000Z", "subject_type": "memory", "supplementary": False, "already_recalled": False,
    }
    assert (row["subject_id"], row["source"]) == (m1, "hybrid") and 0 < row["score"]
    assert (row["temporal_facet"], row["temporal_start_at"], row["temporal_end_at"]) == ("captured", "2026-05-13T10:00:00.000Z", "2026-05-13T10:00:00.000Z")
    assert (body["query"], body["method"]) == ("user preferences for editor", "hybrid")
    meta = body["meta"]
    assert set(meta) == {"totalReturned", "hasSupplementary", "noHits", "timings", "dedupe", "temporal"}
    assert (meta["totalReturned"], meta["hasSupplementary"], meta["noHits"]) == (1, False, False)
    assert meta["dedupe"] == {"enabled": True, "contextEpoch": 0, "suppressed": 0, "repeatedReturned": 0}
    assert meta["temporal"] == {
        "mode": "filter", "source": "request", "originalQuery": "user preferences for editor", "contentQuery": "user preferences for editor",
        "start": "2026-05-13T00:00:00.000Z", "end": "2026-05-14T00:00:00.000Z", "facets": ["session", "occurred", "source", "captured"],
    }
    stages = [s["name"] for s in meta["timings"]["stages"]]
    assert stages[:2] == ["embed", "search"] and {"ledger_read", "ledger_write"} <= set(stages)
    assert all(s["durationMs"] >= 0 for s in meta["timings"]["stages"]) and meta["timings"]["totalMs"] > 0
    assert "aggregate" not in body
    # the same request again: the session saw m1 already
    again = signet(api, **SPEC_REQUEST)
    assert again["results"] == [] and again["meta"]["dedupe"]["suppressed"] == 1 and again["meta"]["noHits"] is True


def test_each_filter_alone(api):
    base = dict(timestamp="2026-03-01T12:00:00Z")
    a = put(api, "Editor setting: tabs are four spaces", type="Preference", tags=["editor", "ui"], who="claude-code", importance=0.9, pinned=True, project="web", **base)
    b = put(api, "Editor setting: the theme is dark", type="Decision", tags=["editor"], who="cursor", importance=0.4, project="api", timestamp="2026-04-01T12:00:00Z")
    c = put(api, "Editor setting: font is Iosevka", tags=["ui"], importance=0.6, timestamp="2026-02-01T12:00:00Z")
    table = [
        ({}, {a, b, c}),
        ({"type": "preference"}, {a}),
        ({"type": "Decision"}, {b}),
        ({"tags": "editor"}, {a, b}),
        ({"tags": "editor,ui"}, {a}),
        ({"tags": ["ui"]}, {a, c}),
        ({"who": "cursor"}, {b}),
        ({"project": "web"}, {a}),
        ({"pinned": True}, {a}),
        ({"pinned": False}, {a, b, c}),
        ({"importance_min": 0.5}, {a, c}),
        ({"importanceMin": 0.7}, {a}),
        ({"since": "2026-02-15T00:00:00Z"}, {a, b}),
        ({"until": "2026-03-15T00:00:00Z"}, {a, c}),
        ({"since": "2026-02-15T00:00:00Z", "until": "2026-03-15T00:00:00Z"}, {a}),
    ]
    for fields, expected in table:
        got = signet(api, query="editor setting", **fields)
        assert set(ids(got)) == expected, fields
        got = api.get("/api/memory/search", params={"q": "editor setting", **{k: str(v).lower() if isinstance(v, bool) else (",".join(v) if isinstance(v, list) else v) for k, v in fields.items()}})
        assert got.status_code == 200 and set(ids(got.json())) == expected, fields


def test_limit_defaults_to_10_and_is_bounded(api):
    made = {put(api, f"Kubernetes deploy note number {i}") for i in range(14)}
    assert len(ids(signet(api, query="kubernetes deploy note"))) == 10
    assert len(ids(signet(api, query="kubernetes deploy note", limit=3))) == 3
    assert set(ids(signet(api, query="kubernetes deploy note", limit=500))) == made  # bounded to 100: all 14
    assert len(ids(signet(api, query="kubernetes deploy note", limit=0))) == 1
    assert len(api.get("/api/memory/search", params={"q": "kubernetes deploy note"}).json()["results"]) == 10
    assert len(api.get("/api/memory/search", params={"q": "kubernetes deploy note", "limit": 2}).json()["results"]) == 2


def test_time_facets_and_modes(api):
    captured = put(api, "Release notes drafted for the mobile app", timestamp="2026-05-13T15:00:00Z")
    later = put(api, "Release notes reviewed for the mobile app", timestamp="2026-05-13T20:00:00Z")
    valid = put(api, "Release freeze for the mobile app", timestamp="2026-04-01T00:00:00Z", t_valid="2026-05-10T00:00:00Z")
    put(api, "Release notes from April for the mobile app", timestamp="2026-04-20T00:00:00Z")
    window = {"start": "2026-05-13T00:00:00Z", "end": "2026-05-14T00:00:00Z"}
    assert set(ids(signet(api, query="mobile app release", time=window))) == {captured, later, valid}
    assert set(ids(signet(api, query="mobile app release", time={**window, "facets": ["captured"]}))) == {captured, later}
    got = signet(api, query="mobile app release", time={**window, "facets": ["valid"]})
    assert ids(got) == [valid]
    assert (got["results"][0]["temporal_facet"], got["results"][0]["temporal_start_at"], got["results"][0]["temporal_end_at"]) == (
        "valid", "2026-05-10T00:00:00.000Z", None)
    assert signet(api, query="mobile app release", time={**window, "facets": ["session", "source", "observed"]})["results"] == []
    # occurred: the dates a memory was written on or speaks of ("yesterday", written the day after)
    spoke = put(api, "Yesterday the mobile app release notes were approved", timestamp="2026-05-14T09:00:00Z")
    got = signet(api, query="mobile app release", time={**window, "facets": ["occurred"]})
    assert set(ids(got)) == {captured, later, spoke}
    facet = {r["id"]: (r["temporal_facet"], r["temporal_start_at"], r["temporal_end_at"]) for r in got["results"]}
    assert facet[spoke] == ("occurred", "2026-05-13T00:00:00.000Z", "2026-05-14T00:00:00.000Z")
    assert set(ids(signet(api, query="mobile app release", time={**window, "facets": ["captured"]}))) == {captured, later}
    assert spoke in ids(signet(api, query="mobile app release on 2026-05-13"))  # a date phrase searches every facet
    timeline = signet(api, query="mobile app release", time={**window, "facets": ["captured"], "mode": "timeline"})
    assert ids(timeline) == [captured, later] and timeline["meta"]["temporal"]["mode"] == "timeline"
    assert_error(api.post("/api/memory/recall", json={"query": "x", "time": {**window, "facets": ["weather"]}}), 400, "facets")
    assert_error(api.post("/api/memory/recall", json={"query": "x", "time": {"start": "2026-05-14T00:00:00Z", "end": "2026-05-13T00:00:00Z"}}), 400, "after end")


def test_method_is_keyword_without_vectors(api, monkeypatch):
    mid = put(api, "The staging database password rotates monthly")

    class NoVectors:
        def embed_query(self, text):
            raise EmbeddingError("model unavailable")

    monkeypatch.setattr(api.app.state.recall, "embedder", NoVectors())
    body = signet(api, query="staging database password")
    assert (ids(body), body["method"], body["results"][0]["source"]) == ([mid], "keyword", "keyword")


def test_aggregate_returns_the_evidence_partially(api):
    a = put(api, "The team chose Postgres for the ledger service")
    body = signet(api, query="which database for the ledger", aggregate=True, aggregateBudget="medium", saveAggregate=False)
    assert ids(body)[0] == a
    agg = body["aggregate"]
    assert (agg["partial"], agg["stoppedReason"], agg["budget"], agg["saved"], agg["savedMemoryId"]) == (True, "router_unavailable", "medium", False, None)
    assert agg["sourceMemoryIds"] == ids(body) and agg["queries"] == ["which database for the ledger"] and agg["message"]
    empty = signet(api, query="anything", aggregate=True, scope="empty-bank")
    assert (empty["results"], empty["aggregate"]["stoppedReason"], empty["meta"]["noHits"]) == ([], "no_evidence", True)
    assert "partial" not in empty["aggregate"]
    assert_error(api.post("/api/memory/recall", json={"query": "x", "aggregateBudget": "huge"}), 400, "aggregateBudget")
    assert api.get("/health").json()["memory_count"] == 1  # nothing was saved


def test_scope_is_the_bank(api):
    alpha = put(api, "The dragon sleeps under the mountain", "world:alpha")
    beta = put(api, "The dragon sleeps under the sea", "world:beta")
    assert ids(signet(api, query="where does the dragon sleep", scope="world:alpha")) == [alpha]
    assert ids(signet(api, query="where does the dragon sleep", scope="world:beta")) == [beta]
    assert signet(api, query="where does the dragon sleep")["results"] == []  # the default bank
    assert ids(api.post("/api/memory/recall", json={"query": "dragon"}, headers={"X-Bank": "world:beta"}).json()) == [beta]
    same = api.post("/api/memory/recall", json={"query": "dragon", "scope": "world:beta"}, headers={"X-Bank": "world:beta"})
    assert ids(same.json()) == [beta]
    assert_error(api.post("/api/memory/recall", json={"query": "dragon", "scope": "world:alpha"}, headers={"X-Bank": "world:beta"}), 400, "different banks")
    assert_error(api.post("/api/memory/recall", json={"query": "dragon", "scope": "../x"}), 400, "Invalid bank")


def test_snake_case_aliases_over_http(api):
    a = put(api, "Snake case is accepted for every field")
    first = signet(api, query="snake case fields", session_key="s-1", agent_id="bob")
    assert ids(first) == [a]
    again = signet(api, query="snake case fields", session_key="s-1", agent_id="bob", include_recalled=True)
    assert ids(again) == [a] and again["results"][0]["already_recalled"] is True
    assert again["meta"]["dedupe"] == {"enabled": True, "contextEpoch": 0, "suppressed": 0, "repeatedReturned": 1}
    got = api.get("/api/memory/search", params={"q": "snake case fields", "session_key": "s-1", "agent_id": "bob", "include_recalled": "1"}).json()
    assert got["results"][0]["already_recalled"] is True


def test_get_search_has_the_recall_shape(api):
    a = put(api, "The on-call rotation changes every Monday", who="pagerduty")
    got = api.get("/api/memory/search", params={"q": "on-call rotation"})
    assert got.status_code == 200
    body = got.json()
    assert set(body) == {"results", "query", "method", "meta"} and ids(body) == [a]
    assert set(body["results"][0]) == ROW_FIELDS and body["results"][0]["who"] == "pagerduty"
    assert body["meta"]["dedupe"] == {"enabled": False, "suppressed": 0, "repeatedReturned": 0}
    assert_error(api.get("/api/memory/search"), 400, "query is required")
    assert_error(api.post("/api/memory/recall", json={"query": "   "}), 400, "query is required")
    assert_error(api.post("/api/memory/recall", json={}), 400, "query is required")
    assert_error(api.post("/api/memory/recall", json={"query": None}), 400, "query is required")


def test_recall_events_and_access_tracking(api):
    mid = put(api, "Coffee is in the second cupboard")
    body = signet(api, query="where is the coffee")
    assert ids(body) == [mid]
    settle_accesses(api)  # recorded off the request path, as GET /recall does
    assert api.get(f"/memory/{mid}").json()["memory"]["last_accessed"]
