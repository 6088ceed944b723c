"""What a Signet client sends and reads, against the real engine (issue 25 items 10 and 11): the SDK's
`remember` and `getMemory` (POST /api/memory/remember, GET /api/memory/{id}, their bodies as
@signet/sdk builds them: `{content, ...opts}`), Signet's `{"error": ...}` on every Signet route,
unknown fields named in `warnings`, `scope` naming the bank on every route, scores in 0..1."""

from __future__ import annotations

import pytest

from tests.conftest import TOKEN

SIGNET_ROUTES = [
    ("post", "/api/memory/recall", {"json": {"query": "editor"}}),
    ("get", "/api/memory/search", {"params": {"q": "editor"}}),
    ("get", "/memory/search", {"params": {"q": "editor"}}),
    ("get", "/memory/similar", {"params": {"id": "m"}}),
    ("post", "/api/hooks/compaction-complete", {"json": {"harness": "h", "summary": "s"}}),
    ("post", "/api/memory/remember", {"json": {"content": "Signet route probe"}}),
    ("get", "/api/memory/some-id", {}),
]


@pytest.fixture
def api(make_client):
    return make_client(write_refresh="true")


def remember(api, content: str, **opts):
    """@signet/sdk SignetClient.remember(content, opts): POST {content, ...opts}."""
    resp = api.post("/api/memory/remember", json={"content": content, **opts})
    assert resp.status_code == 200, resp.text
    return resp.json()


def signet_error(resp, code: int, fragment: str = "") -> str:
    assert resp.status_code == code, resp.text
    body = resp.json()
    assert isinstance(body["error"], str) and body["error"], body  # what Signet's SDK reads (SignetApiError body)
    assert fragment in body["error"], body
    return body["error"]


def test_the_sdk_remembers_reads_and_recalls(api):
    first = remember(api, "  User prefers vim keybindings in every editor  ", type="preference", importance=0.9, tags="editor,ui",
                     who="claude-code", pinned=True, sourceType="session", sourceId="sess-1", createdAt="2026-02-21T10:00:00Z")
    assert set(first) == {"id", "type", "tags", "pinned", "importance", "content", "embedded", "entities_linked", "hints_written", "structured"}
    assert (first["type"], first["tags"], first["pinned"], first["importance"], first["content"], first["embedded"]) == (
        "preference", "editor,ui", True, 0.9, "User prefers vim keybindings in every editor", True)

    got = api.get(f"/api/memory/{first['id']}")
    assert got.status_code == 200, got.text
    row = got.json()
    for name in ("id", "content", "type", "importance", "tags", "pinned", "who", "source_id", "source_type", "project", "session_id",
                 "confidence", "access_count", "last_accessed", "is_deleted", "deleted_at", "extraction_status", "embedding_model",
                 "version", "created_at", "updated_at", "updated_by"):
        assert name in row, name  # @signet/sdk MemoryRecord
    assert (row["content"], row["type"], row["tags"], row["pinned"], row["who"], row["source_type"], row["source_id"], row["created_at"]) == (
        "User prefers vim keybindings in every editor", "preference", "editor,ui", True, "claude-code", "session", "sess-1", "2026-02-21T10:00:00.000Z")
    assert row["session_id"] == row["sessionId"] == "sess-1" and row["is_deleted"] is False

    # the same memory reached through AutoMem and recalled through Signet
    assert api.get(f"/memory/{first['id']}").json()["memory"]["type"] == "Preference"
    found = api.post("/api/memory/recall", json={"query": "vim keybindings", "limit": 5}).json()["results"]
    assert [r["id"] for r in found][:1] == [first["id"]]

    # defaults: who daemon, tags null, the type classified from the content (lowercase, as Signet's)
    plain = remember(api, "Decided to use PostgreSQL for the billing service")
    assert (plain["tags"], plain["pinned"], plain["importance"], plain["type"]) == (None, False, 0.5, "decision")
    assert api.get(f"/api/memory/{plain['id']}").json()["who"] == "daemon"
    # tags as a list, as Signet's daemon takes them
    assert remember(api, "Array tags memory", tags=["alpha", "beta"])["tags"] == "alpha,beta"


def test_remember_dedupes_by_content_and_by_source(api):
    first = remember(api, "The staging cluster runs on three nodes")
    again = remember(api, "The   staging cluster runs on three nodes\n")  # the same text, whitespace aside
    assert again == {"id": first["id"], "type": first["type"], "tags": "", "pinned": False, "importance": 0.5,
                     "content": "The staging cluster runs on three nodes", "embedded": True, "deduped": True}
    source = remember(api, "Transcript summary v1", sourceType="session-end", sourceId="abc")
    repeat = remember(api, "Transcript summary v2", sourceType="session-end", sourceId="abc")
    assert repeat["deduped"] is True and repeat["id"] == source["id"] and repeat["content"] == "Transcript summary v1"
    other = remember(api, "Transcript summary v2", sourceType="session-end", sourceId="abd")
    assert other["id"] != source["id"] and "deduped" not in other
    # the content's memory changed since: a new memory, as Signet would store
    assert api.patch(f"/memory/{first['id']}", json={"content": "The staging cluster runs on five nodes"}).status_code == 200
    fresh = remember(api, "The staging cluster runs on three nodes")
    assert fresh["id"] != first["id"] and "deduped" not in fresh
    # the SDK's idempotencyKey: a retry answers the first, another text under it is a conflict
    keyed = remember(api, "Keyed memory", idempotencyKey="k-1")
    assert remember(api, "Keyed memory", idempotencyKey="k-1")["id"] == keyed["id"]
    signet_error(api.post("/api/memory/remember", json={"content": "Other text", "idempotencyKey": "k-1"}), 409)
    assert "409" in api.app.openapi()["paths"]["/api/memory/remember"]["post"]["responses"]  # documented (schemathesis checks it)
    assert api.get("/health").status_code == 200


def test_scope_names_the_bank_on_every_signet_route(api):
    mine = remember(api, "Alpha world lore: the tower is blue", scope="world:alpha")
    assert api.get(f"/api/memory/{mine['id']}").status_code == 404  # not in the default bank
    assert api.get(f"/api/memory/{mine['id']}", params={"scope": "world:alpha"}).json()["content"] == "Alpha world lore: the tower is blue"
    assert api.get(f"/memory/{mine['id']}", headers={"X-Bank": "world:alpha"}).status_code == 200
    similar = api.get("/memory/similar", params={"id": mine["id"], "scope": "world:alpha"})
    assert similar.status_code == 200 and "warnings" not in similar.json()
    legacy = api.get("/memory/search", params={"q": "tower", "scope": "world:alpha"}).json()
    assert [r["id"] for r in legacy["results"]] == [mine["id"]] and "warnings" not in legacy
    hook = api.post("/api/hooks/compaction-complete", json={"harness": "h", "summary": "Alpha summary", "sessionKey": "s", "scope": "world:alpha"})
    assert hook.status_code == 200, hook.text
    assert api.get(f"/api/memory/{hook.json()['memoryId']}", params={"scope": "world:alpha"}).json()["source_type"] == "h"
    assert api.get(f"/api/memory/{hook.json()['memoryId']}").status_code == 404
    signet_error(api.post("/api/memory/remember", json={"content": "x", "scope": "a"}, headers={"X-Bank": "b"}), 400, "different banks")


def test_unknown_fields_are_named_in_warnings(api):
    remember(api, "Editor preference: vim keybindings")
    recall = api.post("/api/memory/recall", json={"query": "editor", "keywordQuery": "vim", "expand": True,
                                                   "time": {"start": "2020-01-01T00:00:00Z", "zone": "UTC"}}).json()
    assert recall["warnings"] == ["Unknown field 'expand' ignored", "Unknown field 'keywordQuery' ignored", "Unknown field 'time.zone' ignored"]
    assert "warnings" not in api.post("/api/memory/recall", json={"query": "editor", "session_key": "s", "importance_min": 0.1}).json()
    search = api.get("/api/memory/search", params={"q": "editor", "minScore": "0.5", "scope": "default"}).json()
    assert search["warnings"] == ["Unknown parameter 'minScore' ignored"]  # scope is read, not unknown
    assert api.get("/memory/search", params={"q": "editor", "foo": "1"}).json()["warnings"] == ["Unknown parameter 'foo' ignored"]
    hook = api.post("/api/hooks/compaction-complete", json={"harness": "h", "summary": "s", "runtimePath": "plugin"}).json()
    assert hook["warnings"] == ["Unknown field 'runtimePath' ignored"] and hook["success"] is True
    kept = remember(api, "A memory with Signet-only fields", hints=["what editor does the user like"], occurredAt="2026-01-01", color="red")
    assert kept["warnings"] == ["Unknown field 'color' ignored", "hints is accepted but not kept here", "occurredAt is accepted but not kept here"]
    many = api.post("/api/memory/recall", json={"query": "editor", **{f"x{i:02d}": i for i in range(30)}}).json()["warnings"]
    assert len(many) == 21 and many[-1] == "... and 10 more unknown fields ignored"


def test_scores_stay_in_signets_range_and_order(api):
    api.post("/memory/batch", json={"memories": [
        {"content": "Chose PostgreSQL over MongoDB for the primary database", "importance": 1.0, "tags": ["database", "postgresql"],
         "type": "Decision", "confidence": 1.0},
        {"content": "PostgreSQL primary database decision", "importance": 1.0, "tags": ["postgresql"], "pinned": True},
        {"content": "We use Redis for caching", "importance": 0.3},
    ]})
    query = "Chose PostgreSQL over MongoDB for the primary database"
    raw = [r["final_score"] for r in api.get("/recall", params={"query": query, "limit": 5}).json()["results"]]
    assert raw[0] > 1.0  # AutoMem's score passes 1 here (bonuses on top of the weighted components)
    rows = api.post("/api/memory/recall", json={"query": query}).json()["results"]
    scores = [r["score"] for r in rows]
    assert scores and all(0.0 <= s <= 1.0 for s in scores) and scores == sorted(scores, reverse=True)
    searched = api.get("/api/memory/search", params={"q": query}).json()["results"]
    assert all(0.0 <= r["score"] <= 1.0 for r in searched)


@pytest.mark.parametrize(("method", "path", "kwargs"), SIGNET_ROUTES)
def test_errors_are_signets_shape_on_every_signet_route(api, method, path, kwargs):
    resp = api.request(method.upper(), path, **kwargs, headers={"Authorization": "Bearer wrong"})
    signet_error(resp, 401)
    resp = api.request(method.upper(), path, **{**kwargs, "params": {**kwargs.get("params", {}), "scope": "../x"}})
    signet_error(resp, 400, "scope")


def test_each_signet_route_refuses_bad_input_in_signets_shape(api):
    assert signet_error(api.post("/api/memory/recall", json={}), 400) == "query is required"
    signet_error(api.post("/api/memory/recall", json={"query": "x", "limit": "many"}), 400, "limit")
    signet_error(api.post("/api/memory/recall", content=b"{not json", headers={"Content-Type": "application/json"}), 400, "JSON")
    signet_error(api.get("/api/memory/search"), 400, "query is required")
    signet_error(api.get("/memory/similar"), 400, "id is required")
    signet_error(api.get("/memory/similar", params={"id": "nope"}), 404, "nope")
    signet_error(api.post("/api/hooks/compaction-complete", json={"harness": "h"}), 400, "summary")
    signet_error(api.get("/api/memory/does-not-exist"), 404, "does-not-exist")
    signet_error(api.get("/api/memory/" + "x" * 300), 400)
    signet_error(api.get("/api/memory/bad%20id"), 404)


@pytest.mark.parametrize(("body", "fragment"), [
    ({}, "content is required"),
    ({"content": "   "}, "content is required"),
    ({"content": 5}, "content must be a string"),
    ({"content": "x", "tags": 5}, "tags must be a string, string array, or null"),
    ({"content": "x", "tags": [1, 2]}, "tags must be a string, string array, or null"),
    ({"content": "x", "importance": 2}, "importance"),
    ({"content": "x", "createdAt": "yesterday-ish"}, "createdAt"),
    ({"content": "x", "validFrom": "2026-05-13T00:00:00Z", "validUntil": "2026-05-13T00:00:00Z"}, "validUntil must be after validFrom"),
    ({"content": "x" * 200_001}, "content"),
    ({"content": "x", "who": "w" * 300}, "who"),
    ({"content": "x", "hints": ["h"] * 101}, "hints"),
    ({"content": "x", "visibility": "secret"}, "visibility"),
    ({"content": "x", "tags": ["t" * 1000]}, "tags"),
])
def test_remember_refuses_hostile_input(api, body, fragment):
    before = api.get("/health").json()["memory_count"]
    signet_error(api.post("/api/memory/remember", json=body), 400, fragment)
    assert api.get("/health").json()["memory_count"] == before  # nothing stored


@pytest.mark.parametrize(("raw", "fragment"), [(b'{"content": "x", "importance": NaN}', "importance"),
                                                (b'{"content": "bad \\ud800 text"}', "content"), (b'{"content": "x", "who": "\\udfff"}', "who")])
def test_remember_refuses_nan_and_lone_surrogates(api, raw, fragment):
    resp = api.post("/api/memory/remember", content=raw, headers={"Content-Type": "application/json"})
    signet_error(resp, 400, fragment)


def test_a_token_scoped_to_another_bank_gets_404_naming_no_bank(make_client, tmp_path):
    import hashlib
    import json

    other = "scoped-token-b"
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({"tokens": [{"name": "b", "sha256": hashlib.sha256(other.encode()).hexdigest(), "banks": ["b"],
                                              "permissions": ["recall", "remember"]}]}))
    api = make_client(write_refresh="true", engram_tokens_file=str(tokens))
    mine = remember(api, "Default bank secret: the code is 4-4-2")
    as_b = {"Authorization": f"Bearer {other}"}
    resp = api.get(f"/api/memory/{mine['id']}", headers=as_b)
    assert signet_error(resp, 404) == f"Memory {mine['id']} not found" and "default" not in resp.text
    resp = api.post("/api/memory/remember", json={"content": "planted", "scope": "default"}, headers=as_b)
    signet_error(resp, 404)
    assert "4-4-2" not in resp.text and TOKEN not in resp.text
