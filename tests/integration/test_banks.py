"""Banks and tokens scoped to them: AutoMem clients are unchanged (default bank), a request names
another bank with X-Bank or ?bank=, and a token never sees a bank outside its scope."""

from __future__ import annotations

import json

import pytest

from service.auth.tokens import hash_token
from tests.conftest import TOKEN
from tests.integration.support import assert_error, ids, mem, recall

A_TOKEN, READ_A_TOKEN, ALL_TOKEN = "token-for-bank-a", "read-only-bank-a", "token-for-every-bank"


@pytest.fixture
def banked(make_client, tmp_path):
    tokens = {"tokens": [
        {"name": "agent-a", "sha256": hash_token(A_TOKEN), "banks": ["a"], "permissions": ["recall", "remember"]},
        {"name": "reader-a", "sha256": hash_token(READ_A_TOKEN), "banks": ["a", "shared"], "permissions": ["recall"]},
        {"name": "ops", "sha256": hash_token(ALL_TOKEN), "banks": "*", "permissions": ["recall", "remember"]},
    ]}
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps(tokens))
    return make_client(engram_tokens_file=str(path), write_refresh="true")


def as_(token: str, bank: str | None = None) -> dict:
    headers = {"Authorization": f"Bearer {token}"}
    if bank:
        headers["X-Bank"] = bank
    return headers


def test_default_bank_is_unchanged_and_x_bank_names_another(banked):
    api = banked
    default_id = mem(api, "Lunch is at noon in the default bank")
    other = api.post("/memory", json={"content": "Lunch is at one in bank b"}, headers={"X-Bank": "b"}).json()["memory_id"]
    assert ids(recall(api, query="lunch")) == [default_id]
    assert ids(recall(api, query="lunch", bank="b")) == [other]  # ?bank= works too
    assert api.get(f"/memory/{other}").status_code == 404
    assert api.get(f"/memory/{other}", headers={"X-Bank": "b"}).json()["memory"]["content"] == "Lunch is at one in bank b"
    assert api.get("/health").json()["memory_count"] == 1  # /health counts the default bank
    assert "warnings" not in recall(api, query="lunch", bank="b")  # `bank` is not an unknown parameter


def test_a_client_id_of_another_bank_is_refused(banked):
    api = banked
    mem(api, "mine", id="shared-id")
    assert_error(api.post("/memory", json={"content": "theirs", "id": "shared-id"}, headers={"X-Bank": "b"}), 409, "another bank")
    assert_error(api.post("/memory/batch", json={"memories": [{"content": "x", "id": "shared-id"}]}, headers={"X-Bank": "b"}), 409, "memories[0]")
    assert api.get("/memory/shared-id").json()["memory"]["content"] == "mine"


def test_invalid_bank_names_are_400(banked):
    assert_error(banked.get("/recall", headers={"X-Bank": "../etc"}), 400, "Invalid bank")
    assert_error(banked.get("/recall", headers={"X-Bank": "x" * 65}), 400, "Invalid bank")


def test_a_token_scoped_to_one_bank_defaults_to_it(banked):
    api = banked
    mid = api.post("/memory", json={"content": "The deploy key is in the vault"}, headers=as_(A_TOKEN)).json()["memory_id"]
    assert api.get(f"/memory/{mid}", headers={"X-Bank": "a"}).status_code == 200  # stored in bank a
    got = api.get("/recall", params={"query": "deploy key"}, headers=as_(A_TOKEN)).json()
    assert ids(got) == [mid]


def test_permissions(banked):
    api = banked
    assert_error(api.post("/memory", json={"content": "x"}, headers=as_(READ_A_TOKEN, "a")), 403, "remember")
    assert api.get("/recall", params={"query": "x"}, headers=as_(READ_A_TOKEN, "a")).status_code == 200
    assert_error(api.get("/recall", headers={"Authorization": "Bearer not-a-token"}), 401)


def test_isolation_matrix(banked):
    """Every AutoMem read and write route, with a token scoped to bank a, against data in bank b:
    404 or empty, never b's data, and b is unchanged afterwards."""
    api = banked
    b = {"X-Bank": "b"}
    b1 = api.post("/memory", json={"content": "Bank b secret: the launch code is 7-7-1", "tags": ["secret"]}, headers=b).json()["memory_id"]
    b2 = api.post("/memory", json={"content": "Bank b second memory", "tags": ["secret"]}, headers=b).json()["memory_id"]
    assert api.post("/associate", json={"memory1_id": b1, "memory2_id": b2}, headers=b).status_code == 201
    a1 = api.post("/memory", json={"content": "Bank a memory about launch codes"}, headers=as_(A_TOKEN)).json()["memory_id"]
    for headers in (as_(A_TOKEN), as_(A_TOKEN, "b"), as_(READ_A_TOKEN, "b")):
        calls = [
            api.get("/recall", params={"query": "launch code secret"}, headers=headers),
            api.get("/recall", params={"tags": "secret"}, headers=headers),
            api.get(f"/memory/{b1}", headers=headers),
            api.get("/memory/by-tag", params={"tags": "secret"}, headers=headers),
            api.get(f"/memories/{b1}/related", headers=headers),
            api.patch(f"/memory/{b1}", json={"importance": 0.1}, headers=headers),
            api.delete(f"/memory/{b1}", headers=headers),
            api.delete("/memory/by-tag", params={"tags": "secret"}, headers=headers),
            api.post("/associate", json={"memory1_id": b1, "memory2_id": a1}, headers=headers),
            api.post("/associate", json={"associations": [{"memory1_id": b1, "memory2_id": b2}]}, headers=headers),
            api.post("/memory", json={"content": "overwrite", "id": b1}, headers=headers),
        ]
        for resp in calls:
            assert resp.status_code in (200, 201, 207, 403, 404, 409), resp.text
            assert "7-7-1" not in resp.text and "second memory" not in resp.text, resp.text  # no content of b
            if resp.status_code == 200 and "results" in resp.json():
                assert resp.json()["results"] == [] or ids(resp.json()) == [a1]
            if resp.status_code == 200 and "memories" in resp.json():
                assert resp.json()["memories"] == []
            if resp.status_code == 200 and "deleted_count" in resp.json():
                assert resp.json()["deleted_count"] == 0
    # Bank b is untouched.
    got = api.get(f"/memory/{b1}", headers=b).json()["memory"]
    assert (got["content"], got["importance"]) == ("Bank b secret: the launch code is 7-7-1", 0.5)
    assert api.get(f"/memories/{b1}/related", headers=b).json()["count"] == 1
    assert api.get(f"/memory/{b1}", headers=as_(ALL_TOKEN, "b")).status_code == 200  # a token for every bank sees it


def test_a_broken_tokens_file_stops_the_start(tmp_path):
    from fastapi.testclient import TestClient

    from service.config import Settings
    from service.main import ConfigurationError, create_app

    path = tmp_path / "tokens.json"
    path.write_text(json.dumps({"tokens": [{"sha256": "abc", "banks": ["a"]}]}))
    settings = Settings(automem_api_token=TOKEN, engram_tokens_file=str(path), opensearch_url="http://127.0.0.1:1")
    with pytest.raises(ConfigurationError, match="sha256 must be 64 hex"):
        with TestClient(create_app(settings)):
            pass


def test_signet_routes_never_show_another_bank(banked):
    """Signet's routes with a token scoped to bank a, against data (and a session ledger) in bank b:
    `scope` and X-Bank naming b are 404, and nothing of b ever shows."""
    api = banked
    b = {"X-Bank": "b"}
    b1 = api.post("/memory", json={"content": "Bank b secret: the launch code is 7-7-1", "who": "mallory"}, headers=b).json()["memory_id"]
    a1 = api.post("/memory", json={"content": "Bank a memory about launch codes", "who": "alice"}, headers=as_(A_TOKEN)).json()["memory_id"]
    # bank b's session has seen b1; nothing a token of bank a does may touch that ledger
    seen = api.post("/api/memory/recall", json={"query": "launch code", "sessionKey": "shared-key"}, headers=b).json()
    assert [r["id"] for r in seen["results"]] == [b1]
    for headers in (as_(A_TOKEN), as_(A_TOKEN, "b"), as_(READ_A_TOKEN, "b"), as_(READ_A_TOKEN)):
        calls = [
            api.post("/api/memory/recall", json={"query": "launch code secret", "sessionKey": "shared-key"}, headers=headers),
            api.post("/api/memory/recall", json={"query": "launch code secret", "scope": "b"}, headers=headers),
            api.get("/api/memory/search", params={"q": "launch code secret", "sessionKey": "shared-key"}, headers=headers),
            api.get("/memory/search", params={"q": "launch code"}, headers=headers),
            api.get("/memory/search", params={"who": "mallory"}, headers=headers),
            api.get("/memory/search", params={"distinct": "who"}, headers=headers),
            api.get("/memory/similar", params={"id": b1}, headers=headers),
            api.get("/memory/similar", params={"id": a1}, headers=headers),
            api.post("/api/hooks/compaction-complete", json={"harness": "h", "summary": "x", "sessionKey": "shared-key"}, headers=headers),
        ]
        for resp in calls:
            assert resp.status_code in (200, 403, 404), resp.text
            assert "7-7-1" not in resp.text and "mallory" not in resp.text, resp.text
            assert resp.status_code != 200 or b1 not in resp.text, resp.text  # a 404 may name the id it was asked for
            body = resp.json()
            if resp.status_code == 200 and "results" in body:
                assert [r["id"] for r in body["results"]] in ([], [a1]), resp.text
    # bank b's session is untouched: its memory is still suppressed there, in epoch 0
    again = api.post("/api/memory/recall", json={"query": "launch code", "sessionKey": "shared-key"}, headers=b).json()
    assert again["results"] == [] and again["meta"]["dedupe"] == {"enabled": True, "contextEpoch": 0, "suppressed": 1, "repeatedReturned": 0}
    assert_error(api.post("/api/memory/recall", json={"query": "x", "scope": "b"}, headers=as_(A_TOKEN)), 404, "Bank b not found")
    assert_error(api.post("/api/hooks/compaction-complete", json={"harness": "h", "summary": "x"}, headers=as_(READ_A_TOKEN, "a")), 403, "remember")
    assert api.get("/memory/search", params={"distinct": "who"}, headers=as_(ALL_TOKEN, "b")).json() == {"values": ["mallory"]}


def test_enrichment_status_and_reprocess_act_on_the_requests_bank(banked):
    from tests.conftest import ADMIN

    api = banked
    mem(api, "Standup moved to ten in the default bank")
    in_b = [api.post("/memory", json={"content": f"Bank b note {i} about the Borealis launch"}, headers={"X-Bank": "b"}).json()["memory_id"]
            for i in range(2)]
    # The worker is off in tests, so stored memories stay pending: the counts are each bank's own.
    assert api.get("/enrichment/status").json()["stored"].get("pending") == 1
    b_status = api.get("/enrichment/status", headers={"X-Bank": "b"}).json()
    assert b_status["bank"] == "b" and b_status["stored"].get("pending") == 2
    assert api.get("/enrichment/status", params={"bank": "b"}).json()["stored"].get("pending") == 2
    admin = {"X-Admin-Token": ADMIN}
    queued = api.post("/enrichment/reprocess", json={"ids": in_b}, headers={**admin, "X-Bank": "b"}).json()
    assert queued["ids"] == sorted(in_b) and queued["missing"] == []
    # From the default bank, bank b's memories are not found.
    elsewhere = api.post("/enrichment/reprocess", json={"ids": in_b}, headers=admin).json()
    assert elsewhere["count"] == 0 and elsewhere["missing"] == sorted(in_b)
    # A token scoped to bank a sees no bank b.
    assert_error(api.get("/enrichment/status", headers=as_(A_TOKEN, "b")), 404, "Bank b not found")
