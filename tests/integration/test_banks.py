"""Banks and tokens scoped to them: AutoMem clients are unchanged (default bank), a request names
another bank with X-Bank or ?bank=, and a token never sees a bank outside its scope."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from datetime import datetime, timezone

import pytest

from service.api.signet.dedupe import agent_of
from service.auth.tokens import hash_token
from tests.conftest import TOKEN
from tests.integration.route_matrix import calls, guarded_routes
from tests.integration.support import assert_error, ids, mem, recall, settled

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


# --- the isolation matrix, generated from app.routes ----------------------------------------------
OWN, OTHER = "alpha-a1", "bravo-b7"  # names that appear nowhere else, so an answer naming OTHER is seen
SCOPED = {  # tokens scoped to OWN (one reader to OWN and a bank of no data, so it must name one): every permission shape
    "own-rw": ([OWN], ["recall", "remember"]), "own-read": ([OWN], ["recall"]), "own-write": ([OWN], ["remember"]),
    "own-admin": ([OWN], ["admin"]), "own-all": ([OWN], ["recall", "remember", "admin"]), "two-read": ([OWN, "shared-s3"], ["recall"]),
}
SECRET, DEFAULT_SECRET = "the launch code is 7-7-1", "the vault opens with 9-9-4"


@pytest.fixture
def two_banks(make_client, tmp_path):
    """Bank OTHER with memories, an edge, a profile, a session ledger and a consolidation run; bank OWN
    with one memory; tokens scoped to OWN. Enrichment on, as users run it."""
    entries = [{"name": n, "sha256": hash_token(f"token-{n}"), "banks": b, "permissions": p} for n, (b, p) in SCOPED.items()]
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps({"tokens": entries}))
    api = make_client(engram_tokens_file=str(path), write_refresh="true", enrichment_enabled=True)
    b = {"X-Bank": OTHER}
    b1 = api.post("/memory", json={"content": f"Bravo secret: {SECRET}", "tags": ["secret", "lesson", "system"], "who": "mallory",
                                    "importance": 0.9}, headers=b).json()["memory_id"]
    b2 = api.post("/memory", json={"content": "Bravo second note about the launch code", "tags": ["secret"]}, headers=b).json()["memory_id"]
    assert api.post("/associate", json={"memory1_id": b1, "memory2_id": b2}, headers=b).status_code == 201
    assert api.put(f"/v1/default/banks/{OTHER}", json={"name": "Bravo Secret Name"}).status_code == 200
    assert api.post("/api/memory/recall", json={"query": "launch code", "sessionKey": "shared-key"}, headers=b).status_code == 200
    assert api.post("/consolidate", json={"mode": "decay", "dry_run": False}, headers=b).status_code == 200
    # The default bank holds a secret too: a route that falls back to it for a scoped token shows it.
    d1 = api.post("/memory", json={"content": f"Zulu default secret: {DEFAULT_SECRET}", "tags": ["secret", "lesson", "system"],
                                    "importance": 0.9}).json()["memory_id"]
    a1 = api.post("/memory", json={"content": "Alpha note about launch codes", "tags": ["secret"]}, headers=bearer("own-rw")).json()["memory_id"]
    settled(api)
    return api, {"b1": b1, "b2": b2, "d1": d1, "a1": a1}


def bearer(name: str) -> dict:
    return {"Authorization": f"Bearer token-{name}"}


def readable(resp) -> str:
    """The answer as text; a backup archive (tar.gz of gzip JSON members) as the text of its members."""
    if not resp.headers.get("content-type", "").startswith("application/gzip"):
        return resp.text
    out = []
    with tarfile.open(fileobj=io.BytesIO(resp.content), mode="r:gz") as tar:
        for member in (m for m in tar.getmembers() if m.isfile()):
            data = tar.extractfile(member).read()
            out.append((gzip.decompress(data) if member.name.endswith(".gz") else data).decode("utf-8", "replace"))
    assert out, "an archive without members"
    return "\n".join(out)


def snapshot(api, ids: dict) -> dict:
    """Everything of bank OTHER a client can read, with the API token."""
    b = {"X-Bank": OTHER}
    ledger = api.app.state.ledger.read(OTHER, "shared-key", agent_of(None, "shared-key"), datetime.now(timezone.utc))
    return {
        "memories": {k: api.get(f"/memory/{ids[k]}", headers=b).json()["memory"] for k in ("b1", "b2")},
        "default": api.get(f"/memory/{ids['d1']}").json()["memory"],
        "default_counts": {k: api.get("/v1/default/banks/default/stats").json()[k] for k in ("memory_count", "edge_count", "total_documents")},
        "related": api.get(f"/memories/{ids['b1']}/related", headers=b).json()["related_memories"],
        "profile": api.get(f"/v1/default/banks/{OTHER}/profile").json(),
        "stats": {k: v for k, v in api.get(f"/v1/default/banks/{OTHER}/stats").json().items() if k != "last_memory_write_at"},
        "history": [h["id"] for h in api.get("/consolidate/status", headers=b).json()["history"]],
        "ledger": (ledger.epoch, sorted(ledger.recalled)),
        "enrichment": api.get("/enrichment/status", headers=b).json()["stored"],
    }


def test_isolation_matrix(two_banks):
    """Every route behind the API token (from app.routes), with every token scoped to OWN: a request
    naming OTHER in any way the route accepts is a 404 (a 403 first where the admin token is missing),
    a request on OWN never answers with OTHER's content, name or ids (ids only where the request sent
    them), nothing answers 5xx, and bank OTHER is unchanged afterwards."""
    api, ids = two_banks
    before = snapshot(api, ids)
    values = {"memory_id": ids["b1"], "id": ids["b1"], "ids": [ids["b1"]], "memory1_id": ids["b1"], "memory2_id": ids["b2"],
              "supersedes": ids["b1"], "query": "launch code secret", "tags": ["secret"], "content": "planted by own",
              "sessionKey": "shared-key", "harness": "h", "summary": "compacted", "dry_run": True,
              "items": [{"content": "planted by own"}], "memories": [{"content": "planted by own", "id": ids["b1"]}]}
    routes = guarded_routes(api.app)
    assert len(routes) >= 40 and {r.path for r in routes if r.sse} == {"/stream"}
    sent = 0
    for route in routes:
        matrix_calls = calls(api.app, route, own=OWN, other=OTHER, values=values)
        # GET /stream names no bank (a scoped token streams its own banks' events: test_stream_api.py
        # reads one over a live server); every other route gets requests.
        assert matrix_calls or route.sse, f"{route.method} {route.path}: no request generated"
        for call in matrix_calls:
            for name, (_, perms) in SCOPED.items():
                resp = call.send(api, bearer(name))
                sent += 1
                text = readable(resp)
                where = f"{name}: {call} -> {resp.status_code} {text[:300]}"
                assert resp.status_code < 500 or resp.status_code == 501 and route.path.endswith("/reflect"), where
                if call.names_other_bank:
                    expected = 403 if route.admin and "admin" not in perms else 404
                    assert resp.status_code == expected, where
                for secret in ("7-7-1", "Bravo", "mallory", "9-9-4", "Zulu"):  # OTHER's and the default bank's content, profile, authors
                    assert secret not in text, where
                if OTHER in text:  # its name only in the error that answers a request naming it
                    assert call.names_other_bank and resp.status_code >= 400, where
                for key in ("b1", "b2", "d1"):  # their ids only where the request sent them ("Memory <id> not found")
                    assert ids[key] not in text or ids[key] in str(call), where
    settled(api)
    assert snapshot(api, ids) == before
    assert sent > 500


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


def test_signet_sessions_are_per_bank(banked):
    """A session key names a session in the request's bank: a token scoped to bank a never touches bank
    b's ledger; `scope` naming b is a 404."""
    api = banked
    b = {"X-Bank": "b"}
    b1 = api.post("/memory", json={"content": "Bank b secret: the launch code is 7-7-1", "who": "mallory"}, headers=b).json()["memory_id"]
    a1 = api.post("/memory", json={"content": "Bank a memory about launch codes", "who": "alice"}, headers=as_(A_TOKEN)).json()["memory_id"]
    # bank b's session has seen b1; nothing a token of bank a does may touch that ledger
    seen = api.post("/api/memory/recall", json={"query": "launch code", "sessionKey": "shared-key"}, headers=b).json()
    assert [r["id"] for r in seen["results"]] == [b1]
    # Every Signet route with these tokens is in test_isolation_matrix; here, the session's own story.
    own = api.post("/api/memory/recall", json={"query": "launch code secret", "sessionKey": "shared-key"}, headers=as_(A_TOKEN)).json()
    assert [r["id"] for r in own["results"]] == [a1]  # the same session key in bank a is bank a's session
    assert_error(api.post("/api/memory/recall", json={"query": "x"}, headers=as_(READ_A_TOKEN)), 404)  # two banks: name one
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
