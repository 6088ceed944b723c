"""The one bank scope, route by route defects: /startup-recall reads the request's bank with the
token's permissions, /enrichment/status names no memory of another bank, deleting a bank takes its
recall ledger and recall log along."""

from __future__ import annotations

import json
import time

import pytest

from service.auth.tokens import hash_token
from tests.conftest import ADMIN
from tests.integration.support import assert_error, settled

# Tokens scoped away from the default bank (issue 22: six of them, remember-only and admin-only among them).
TOKENS = {
    "a-rw": (["a"], ["recall", "remember"]),
    "a-recall": (["a"], ["recall"]),
    "a-remember": (["a"], ["remember"]),
    "a-admin": (["a"], ["admin"]),
    "ab-recall": (["a", "b"], ["recall"]),
    "b-all": (["b"], ["recall", "remember", "admin"]),
}


def bearer(name: str, bank: str | None = None) -> dict:
    return {"Authorization": f"Bearer token-{name}", **({"X-Bank": bank} if bank else {})}


@pytest.fixture
def scoped(make_client, tmp_path):
    entries = [{"name": n, "sha256": hash_token(f"token-{n}"), "banks": banks, "permissions": perms} for n, (banks, perms) in TOKENS.items()]
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps({"tokens": entries}))
    return make_client(engram_tokens_file=str(path), write_refresh="true")


def lesson(api, bank: str, content: str, tags: list[str]) -> str:
    resp = api.post("/memory", json={"content": content, "tags": tags, "importance": 0.95}, headers={"X-Bank": bank})
    assert resp.status_code == 201, resp.text
    return resp.json()["memory_id"]


def test_startup_recall_reads_the_requests_bank_with_the_tokens_permissions(scoped):
    api = scoped
    lesson(api, "default", "Default bank lesson: never deploy on Fridays", ["lesson"])
    lesson(api, "default", "Default bank rule: answer in English", ["system"])
    a_lesson = lesson(api, "a", "Bank a lesson: run the linter first", ["lesson"])
    a_rule = lesson(api, "a", "Bank a rule: be brief", ["system"])
    b_lesson = lesson(api, "b", "Bank b lesson: rotate the keys monthly", ["critical"])

    def got(resp) -> tuple[list[str], list[str]]:
        assert resp.status_code == 200, resp.text
        assert "Default bank" not in resp.text, resp.text  # only scoped tokens and other banks are asked here
        body = resp.json()
        return [c["id"] for c in body["critical_lessons"]], [r["id"] for r in body["system_rules"]]

    for name in ("a-rw", "a-recall"):  # the token's only bank, without X-Bank
        assert got(api.get("/startup-recall", headers=bearer(name))) == ([a_lesson], [a_rule])
        assert got(api.get("/startup-recall", headers=bearer(name, "a"))) == ([a_lesson], [a_rule])
        assert_error(api.get("/startup-recall", headers=bearer(name, "default")), 404, "Bank default not found")
        assert_error(api.get("/startup-recall", params={"bank": "b"}, headers=bearer(name)), 404, "Bank b not found")
    for name in ("a-remember", "a-admin"):  # no recall permission
        assert_error(api.get("/startup-recall", headers=bearer(name)), 403, "recall")
    assert_error(api.get("/startup-recall", headers=bearer("ab-recall")), 404)  # two banks: it must name one
    assert got(api.get("/startup-recall", headers=bearer("ab-recall", "b"))) == ([b_lesson], [])
    assert got(api.get("/startup-recall", params={"bank": "b"}, headers=bearer("b-all"))) == ([b_lesson], [])
    # The API token: the default bank unless X-Bank / ?bank= names another.
    default = api.get("/startup-recall").json()
    assert [c["content"] for c in default["critical_lessons"]] == ["Default bank lesson: never deploy on Fridays"]
    assert [r["content"] for r in default["system_rules"]] == ["Default bank rule: answer in English"]
    assert got(api.get("/startup-recall", params={"bank": "a"})) == ([a_lesson], [a_rule])


def wait_enriched(api, bank: str, mid: str, timeout: float = 90.0) -> None:
    """The memory reads as enriched and the worker has finished its batch: the memory is stored as
    done before the batch's edges are written and its outcome counted in the status."""
    deadline = time.monotonic() + timeout
    while (api.get(f"/memory/{mid}", headers={"X-Bank": bank}).json()["memory"].get("enrichment") or {}).get("status") != "done":
        assert time.monotonic() < deadline, f"{mid} was not enriched"
        time.sleep(0.1)
    settled(api, timeout)


def test_enrichment_status_names_no_memory_of_another_bank(make_client):
    api = make_client(write_refresh="true", enrichment_enabled=True)
    b1 = api.post("/memory", json={"content": "Bank b: Ada Lovelace reviewed the engine notes"}, headers={"X-Bank": "b"}).json()["memory_id"]
    wait_enriched(api, "b", b1)
    status = api.get("/enrichment/status")
    assert status.status_code == 200 and b1 not in status.text, status.text
    assert status.json()["stats"]["last_success_id"] is None
    assert api.get("/enrichment/status", headers={"X-Bank": "b"}).json()["stats"]["last_success_id"] == b1
    d1 = api.post("/memory", json={"content": "Default: Grace Hopper found the moth"}).json()["memory_id"]
    wait_enriched(api, "default", d1)
    assert api.get("/enrichment/status").json()["stats"]["last_success_id"] == d1
    assert api.get("/enrichment/status", headers={"X-Bank": "b"}).json()["stats"]["last_success_id"] == b1


def test_deleting_a_bank_removes_its_recall_ledger_and_recall_log(make_client, os_client):
    """With enrichment on: the bank is deleted while the worker may still be enriching its memories,
    and once the worker is done nothing of the bank is left anywhere."""
    api = make_client(write_refresh="true", recall_log_enabled=True, recall_log_include_query=True, enrichment_enabled=True)
    settings = api.app.state.settings
    for bank in ("a", "b"):
        for i in range(4):  # neighbours and a thread: enrichment writes SIMILAR_TO and PRECEDED_BY edges
            api.post("/memory", json={"content": f"Ada Lovelace wrote note {i} on the engine", "tags": ["session:s1"]}, headers={"X-Bank": bank})
        api.post("/memory", json={"content": f"Bank {bank} holds the zebra quartz plans"}, headers={"X-Bank": bank})
        resp = api.post("/api/memory/recall", json={"query": "zebra quartz", "sessionKey": f"s-{bank}", "limit": 1}, headers={"X-Bank": bank})
        assert resp.status_code == 200 and [r["content"] for r in resp.json()["results"]] == [f"Bank {bank} holds the zebra quartz plans"], resp.text
        assert api.get("/recall", params={"query": "zebra quartz plans"}, headers={"X-Bank": bank}).status_code == 200
    assert api.app.state.recall_log.flush(30)

    def held(alias: str, bank: str) -> int:
        os_client.indices.refresh(index=alias)
        return os_client.count(index=alias, body={"query": {"term": {"bank": bank}}})["count"]

    assert (held(settings.recall_ledger_alias, "b"), held(settings.recall_log_alias, "b")) == (1, 2)
    report = api.delete("/v1/default/banks/b").json()
    assert (report["recall_ledger_deleted"], report["recall_log_deleted"]) == (1, 2), report
    assert (held(settings.recall_ledger_alias, "b"), held(settings.recall_log_alias, "b")) == (0, 0)
    assert (held(settings.recall_ledger_alias, "a"), held(settings.recall_log_alias, "a")) == (1, 2)
    settled(api)
    assert (held(settings.memories_alias, "b"), held(settings.edges_alias, "b")) == (0, 0)  # no write of the worker outlived the bank
    assert held(settings.memories_alias, "a") == 5
    # A new session in a bank of the same name starts over: nothing is suppressed.
    api.post("/memory", json={"content": "Bank b holds the zebra quartz plans"}, headers={"X-Bank": "b"})
    again = api.post("/api/memory/recall", json={"query": "zebra quartz", "sessionKey": "s-b", "limit": 1}, headers={"X-Bank": "b"}).json()
    assert len(again["results"]) == 1 and again["meta"]["dedupe"]["suppressed"] == 0


def test_deleting_a_bank_without_a_recall_log_index(make_client):
    """RECALL_LOG_ENABLED off: there is no recall-log index, and the delete says it removed nothing there."""
    api = make_client(write_refresh="true")
    api.post("/memory", json={"content": "one memory"}, headers={"X-Bank": "b"})
    report = api.delete("/v1/default/banks/b", headers={"X-Admin-Token": ADMIN})
    assert report.status_code == 200, report.text
    assert (report.json()["memories_deleted"], report.json()["recall_ledger_deleted"], report.json()["recall_log_deleted"]) == (1, 0, 0)


@pytest.mark.own_app("names its banks itself: the shared client's X-Bank would be a second bank")
@pytest.mark.parametrize(("method", "path", "kwargs", "fragment"), [
    ("post", "/api/memory/recall", {"json": {"query": "x", "scope": 5}}, "scope"),
    ("post", "/api/memory/recall", {"json": {"query": "x", "scope": ["b"]}}, "scope"),
    ("post", "/api/memory/recall", {"json": {"query": "x", "scope": "a\u0000b"}}, "in scope"),
    ("post", "/api/memory/recall", {"json": {"query": "x", "scope": "x" * 300}}, "in scope"),
    ("post", "/api/memory/recall", {"json": {"query": "x", "scope": "a"}, "headers": {"X-Bank": "b"}}, "different banks"),
    ("get", "/api/memory/search", {"params": {"q": "x", "scope": "a"}, "headers": {"X-Bank": "b"}}, "different banks"),
    ("get", "/api/memory/search", {"params": {"q": "x", "scope": "../etc"}}, "in scope"),
    ("get", "/recall", {"params": {"query": "x"}, "headers": {"X-Bank": ("é" * 5).encode()}}, "Invalid bank"),
    ("get", "/recall", {"params": {"query": "x", "bank": "x" * 10_000}}, "Invalid bank"),
    ("post", "/admin/reembed", {"json": {"bank": {"x": 1}}, "headers": {"X-Admin-Token": ADMIN}}, "bank"),
    ("post", "/admin/reembed", {"json": {"bank": "a"}, "headers": {"X-Admin-Token": ADMIN, "X-Bank": "b"}}, "different banks"),
    ("get", "/v1/default/banks/a%20b/stats", {}, "Invalid bank id"),
])
def test_hostile_bank_names_are_400(api, method, path, kwargs, fragment):
    resp = getattr(api, method)(path, **kwargs)
    assert resp.status_code == 400, resp.text
    assert fragment in resp.json()["message"], resp.text


@pytest.mark.own_app("names its banks itself: the shared client's X-Bank would be a second bank")
def test_signet_scope_in_the_query_string_selects_the_bank(api):
    """spec 004 / issue 25 item 10: GET /api/memory/search?scope=world:alpha reads bank world:alpha."""
    mid = api.post("/memory", json={"content": "The alpha world keeps its own notes"}, headers={"X-Bank": "world:alpha"}).json()["memory_id"]
    api.post("/memory", json={"content": "The default world keeps notes too"})
    got = api.get("/api/memory/search", params={"q": "world notes", "scope": "world:alpha"})
    assert got.status_code == 200 and [r["id"] for r in got.json()["results"]] == [mid]
    legacy = api.get("/memory/search", params={"q": "notes", "scope": "world:alpha"}).json()
    assert [r["id"] for r in legacy["results"]] == [mid]
