"""Session dedupe (spec 004) against the real engine: what a session was shown in its context epoch is
suppressed on its next recalls (without shortening the page), includeRecalled returns it marked, a
compaction starts a new epoch, and the ledger lives in the engine: it survives a restart of the app
and is shared by replicas, which never both return a memory as new to one session."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient

from service.main import create_app
from tests.conftest import AUTH

QUERY = "kubernetes deploy rollback"


@pytest.fixture
def api(make_client):
    return make_client(write_refresh="true")


def seed(api, n: int = 12) -> list[str]:
    resp = api.post("/memory/batch", json={"memories": [
        {"content": f"Kubernetes deploy rollback runbook step {i}: {word}", "importance": round(0.95 - i * 0.05, 2)}
        for i, word in enumerate(["drain", "cordon", "scale", "pause", "undo", "verify", "notify", "tag", "pin", "diff", "lock", "audit"][:n])
    ]})
    assert resp.status_code == 201, resp.text
    return resp.json()["memory_ids"]


def recall(api, **body) -> dict:
    resp = api.post("/api/memory/recall", json={"query": QUERY, "limit": 5, **body})
    assert resp.status_code == 200, resp.text
    return resp.json()


def ids(body: dict) -> list[str]:
    return [r["id"] for r in body["results"]]


def restarted(api) -> TestClient:
    """A second app on the same indices: the same service restarted, or a replica beside it."""
    client = TestClient(create_app(api.app.state.settings, embedder=api.app.state.embedder), raise_server_exceptions=False)
    client.__enter__()
    client.headers.update(AUTH)
    return client


def test_three_recalls_of_one_session_a_restart_include_recalled_and_a_new_epoch(api):
    seed(api)
    ranking = ids(recall(api, limit=12))  # sessionless: the whole ranking, recorded nowhere
    assert len(ranking) == 12
    first = recall(api, sessionKey="s1", agentId="alice")
    assert ids(first) == ranking[:5]
    assert first["meta"]["dedupe"] == {"enabled": True, "contextEpoch": 0, "suppressed": 0, "repeatedReturned": 0}
    second = recall(api, sessionKey="s1", agentId="alice")
    assert ids(second) == ranking[5:10]  # the page is full: the next five took the place of the five shown
    assert second["meta"]["dedupe"] == {"enabled": True, "contextEpoch": 0, "suppressed": 5, "repeatedReturned": 0}

    api.__exit__(None, None, None)  # the app stops; the ledger is in the engine
    again = restarted(api)
    try:
        third = recall(again, sessionKey="s1", agentId="alice")
        assert ids(third) == ranking[10:]
        assert third["meta"]["dedupe"] == {"enabled": True, "contextEpoch": 0, "suppressed": 10, "repeatedReturned": 0}
        exhausted = recall(again, sessionKey="s1", agentId="alice")
        assert exhausted["results"] == [] and exhausted["meta"]["dedupe"]["suppressed"] == 12 and exhausted["meta"]["noHits"] is True

        repeats = recall(again, sessionKey="s1", agentId="alice", includeRecalled=True)
        assert ids(repeats) == ranking[:5] and all(r["already_recalled"] for r in repeats["results"])
        assert repeats["meta"]["dedupe"] == {"enabled": True, "contextEpoch": 0, "suppressed": 0, "repeatedReturned": 5}

        # other agents, other sessions and sessionless recall are unaffected
        assert ids(recall(again, sessionKey="s1", agentId="bob")) == ranking[:5]
        assert ids(recall(again, sessionKey="s2")) == ranking[:5]
        plain = recall(again)
        assert ids(plain) == ranking[:5] and plain["meta"]["dedupe"] == {"enabled": False, "suppressed": 0, "repeatedReturned": 0}

        # a compaction starts the next epoch: everything can be recalled again
        hook = again.post("/api/hooks/compaction-complete", json={"harness": "claude-code", "summary": "Compacted: the user asked about lunch.",
                                                                   "sessionKey": "s1", "agentId": "alice"})
        assert hook.status_code == 200, hook.text
        assert hook.json()["success"] is True and hook.json()["contextEpoch"] == 1
        fresh = recall(again, sessionKey="s1", agentId="alice")
        assert ids(fresh) == ranking[:5]
        assert fresh["meta"]["dedupe"] == {"enabled": True, "contextEpoch": 1, "suppressed": 0, "repeatedReturned": 0}
        assert recall(again, sessionKey="s1", agentId="alice")["meta"]["dedupe"]["suppressed"] == 5
        summary = again.get(f"/memory/{hook.json()['memoryId']}").json()["memory"]
        assert (summary["type"], summary["importance"], summary["who"], summary["tags"]) == ("session_summary", 0.8, "system", ["session", "summary", "claude-code"])
    finally:
        again.__exit__(None, None, None)


def test_session_keys_name_the_agent_and_get_search_shares_the_ledger(api):
    seed(api)
    first = recall(api, sessionKey="agent:carol:abc")
    got = api.get("/api/memory/search", params={"q": QUERY, "limit": 5, "sessionKey": "agent:carol:abc", "agentId": "carol"}).json()
    assert set(ids(got)).isdisjoint(ids(first)) and got["meta"]["dedupe"]["suppressed"] == 5  # agentId carol = the key's agent
    assert ids(recall(api, sessionKey="agent:carol:abc", agentId="dave")) == ids(first)


def test_replicas_share_the_ledger_and_never_both_return_a_memory_as_new(api):
    all_ids = set(seed(api))
    other = restarted(api)  # a replica beside the first
    try:
        one = ids(recall(api, sessionKey="shared"))
        two = ids(recall(other, sessionKey="shared"))
        assert len(one) == len(two) == 5 and set(one).isdisjoint(two)

        # 8 concurrent recalls of one fresh session on two replicas: each memory is returned once at most
        with ThreadPoolExecutor(8) as pool:
            bodies = list(pool.map(lambda i: recall((api, other)[i % 2], sessionKey="race", limit=3), range(8)))
        returned = [mid for b in bodies for mid in ids(b)]
        assert returned and len(returned) == len(set(returned)) and set(returned) <= all_ids
        # what the race recorded is exactly what it returned: the session's next recall gets the rest
        rest = recall(api, sessionKey="race", limit=12)
        assert set(ids(rest)) == all_ids - set(returned) and rest["meta"]["dedupe"]["suppressed"] == len(returned)
    finally:
        other.__exit__(None, None, None)


def test_the_ledger_expires(make_client):
    api = make_client(write_refresh="true", recall_ledger_ttl_seconds=1.0)
    seed(api)
    first = ids(recall(api, sessionKey="short"))
    assert recall(api, sessionKey="short")["meta"]["dedupe"]["suppressed"] == 5
    time.sleep(1.5)
    later = recall(api, sessionKey="short")
    assert ids(later) == first and later["meta"]["dedupe"] == {"enabled": True, "contextEpoch": 0, "suppressed": 0, "repeatedReturned": 0}


def test_a_session_keeps_at_most_the_newest_items(make_client):
    api = make_client(write_refresh="true", recall_ledger_max_items=3)
    seed(api)
    first = ids(recall(api, sessionKey="small"))
    second = recall(api, sessionKey="small")
    # only the 3 newest of the first 5 are remembered: the 2 oldest come back
    assert ids(second)[:2] == first[:2] and second["meta"]["dedupe"]["suppressed"] == 3


def test_sessions_are_per_bank(api):
    seed(api)
    api.post("/memory", json={"content": "Kubernetes deploy rollback in bank b"}, headers={"X-Bank": "b"})
    first = ids(recall(api, sessionKey="s"))
    assert ids(api.post("/api/memory/recall", json={"query": QUERY, "limit": 5, "sessionKey": "s", "scope": "b"}).json()) != []
    assert recall(api, sessionKey="s")["meta"]["dedupe"]["suppressed"] == 5 and first
    # the compaction of bank b's session leaves the default bank's alone
    api.post("/api/hooks/compaction-complete", json={"harness": "h", "summary": "done", "sessionKey": "s"}, headers={"X-Bank": "b"})
    assert recall(api, sessionKey="s")["meta"]["dedupe"]["contextEpoch"] == 0


def test_concurrent_compactions_and_recalls_of_one_session(api):
    seed(api)
    other = restarted(api)
    try:
        def hook(i):
            return (api, other)[i % 2].post("/api/hooks/compaction-complete", json={"harness": "h", "summary": f"Compaction {i} of the chat.", "sessionKey": "busy"})

        def look(i):
            return (api, other)[i % 2].post("/api/memory/recall", json={"query": QUERY, "limit": 2, "sessionKey": "busy"})

        with ThreadPoolExecutor(8) as pool:
            hooks = [pool.submit(hook, i) for i in range(6)]
            looks = [pool.submit(look, i) for i in range(10)]
            responses = [f.result() for f in hooks + looks]
        assert all(r.status_code == 200 for r in responses), [r.text for r in responses if r.status_code != 200]
        epochs = sorted(f.result().json()["contextEpoch"] for f in hooks)
        assert epochs == [1, 2, 3, 4, 5, 6]  # every compaction started its own epoch
        final = recall(api, sessionKey="busy", limit=1)
        assert final["meta"]["dedupe"]["contextEpoch"] == 6
    finally:
        other.__exit__(None, None, None)


def test_a_compaction_resets_every_agent_of_the_session(api):
    """Issue 25 item 9: recalls that passed agentId were not reset by a compaction naming only the
    session key (Signet resets dedupe by the session key alone)."""
    seed(api)
    first = recall(api, sessionKey="S", agentId="alice")
    assert recall(api, sessionKey="S", agentId="alice")["meta"]["dedupe"]["suppressed"] == 5
    bob = recall(api, sessionKey="S", agentId="bob")
    hook = api.post("/api/hooks/compaction-complete", json={"harness": "claude-code", "summary": "Compacted the deploy chat.", "sessionKey": "S"})
    assert hook.status_code == 200, hook.text
    assert hook.json()["contextEpoch"] == 1
    again = recall(api, sessionKey="S", agentId="alice")
    assert ids(again) == ids(first)
    assert again["meta"]["dedupe"] == {"enabled": True, "contextEpoch": 1, "suppressed": 0, "repeatedReturned": 0}
    assert ids(recall(api, sessionKey="S", agentId="bob")) == ids(bob)  # every agent of the session
    assert recall(api, sessionKey="S", agentId="alice")["meta"]["dedupe"]["suppressed"] == 5  # the new epoch records again
    assert recall(api, sessionKey="S")["meta"]["dedupe"]["contextEpoch"] == 1  # an agent new to the session starts in it
    other = recall(api, sessionKey="T", agentId="alice")  # other sessions keep their epoch
    assert other["meta"]["dedupe"]["contextEpoch"] == 0
    # a second compaction naming an agent moves the session on again
    hook = api.post("/api/hooks/compaction-complete", json={"harness": "claude-code", "summary": "Compacted again.", "sessionKey": "S", "agentId": "bob"})
    assert hook.json()["contextEpoch"] == 2
    assert recall(api, sessionKey="S", agentId="alice")["meta"]["dedupe"] == {"enabled": True, "contextEpoch": 2, "suppressed": 0, "repeatedReturned": 0}
