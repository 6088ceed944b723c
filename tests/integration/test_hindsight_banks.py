"""Banks through Hindsight's routes, the same memory through both APIs, retain's documents and chunks,
and what tokens scoped to bank A see (the isolation matrix over every route: test_banks.py)."""

from __future__ import annotations

import json
import time

import pytest

from service.auth.tokens import hash_token
from tests.integration.hindsight_support import BANKS, hrecall, remember, result_ids, retain

A_TOKEN, READ_A = "hs-token-bank-a", "hs-reader-bank-a"


@pytest.fixture
def banked(make_client, tmp_path):
    tokens = {"tokens": [
        {"name": "agent-a", "sha256": hash_token(A_TOKEN), "banks": ["a"], "permissions": ["recall", "remember"]},
        {"name": "reader-a", "sha256": hash_token(READ_A), "banks": ["a"], "permissions": ["recall"]},
    ]}
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps(tokens))
    return make_client(engram_tokens_file=str(path), write_refresh="true", recall_adaptive_floor=False)


def as_(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def test_bank_lifecycle(banked):
    api = banked
    resp = api.put(f"{BANKS}/team", json={"name": "Team", "background": "we ship", "disposition": {"skepticism": 5, "literalism": 2, "empathy": 4}})
    assert resp.json() == {"bank_id": "team", "name": "Team", "disposition": {"skepticism": 5, "literalism": 2, "empathy": 4}, "mission": "we ship", "background": "we ship"}
    resp = api.patch(f"{BANKS}/team", json={"reflect_mission": "help the team", "disposition_empathy": 1, "retain_chunk_size": 300})
    assert resp.json()["mission"] == "help the team" and resp.json()["disposition"] == {"skepticism": 5, "literalism": 2, "empathy": 1}
    assert api.get(f"{BANKS}/team/profile").json()["name"] == "Team"
    retain(api, "team", {"content": "The standup is at 9:30", "tags": ["meetings"]}, {"content": "I booked the room for the standup", "tags": ["meetings", "ops"]})
    api.post("/memory", json={"content": "The room has a projector"}, headers={"X-Bank": "team"})  # an AutoMem write into the same bank
    ids = [r["id"] for r in hrecall(api, "team", "standup room")["results"]]
    assert api.post("/associate", json={"memory1_id": ids[0], "memory2_id": ids[1]}, headers={"X-Bank": "team"}).status_code == 201
    api.post("/consolidate", json={"mode": "decay", "dry_run": False}, headers={"X-Bank": "team"})
    got = api.get(f"{BANKS}/team").json()
    assert (got["bank_id"], got["name"], got["retain_chunk_size"]) == ("team", "Team", 300)
    stats = got["stats"]
    assert (stats["memory_count"], stats["total_nodes"], stats["edge_count"], stats["total_links"]) == (3, 3, 1, 1)
    assert stats["nodes_by_fact_type"] == {"world": 2, "experience": 1, "observation": 0}
    assert stats["links_by_link_type"] == {"RELATES_TO": 1}
    assert stats["tags"] == [{"tag": "meetings", "count": 2}, {"tag": "ops", "count": 1}]
    assert stats["last_consolidated_at"] is not None
    assert api.get(f"{BANKS}/team/stats").json()["total_nodes"] == 3
    # an AutoMem-only bank is a bank too (created by its first write)
    api.post("/memory", json={"content": "elsewhere"}, headers={"X-Bank": "solo"})
    listed = api.get(BANKS).json()
    assert [b["bank_id"] for b in listed["banks"]] == ["solo", "team"] and listed["total"] == 2
    assert {b["bank_id"]: b["fact_count"] for b in listed["banks"]} == {"solo": 1, "team": 3}
    assert [b["bank_id"] for b in api.get(BANKS, params={"q": "TEA"}).json()["banks"]] == ["team"]
    assert api.get(BANKS, params={"limit": 1, "offset": 1}).json()["banks"][0]["bank_id"] == "team"
    # delete: memories, edges, consolidation history and profile, reported
    deleted = api.delete(f"{BANKS}/team").json()
    assert deleted["success"] and (deleted["memories_deleted"], deleted["edges_deleted"], deleted["profile_deleted"]) == (3, 1, True)
    assert deleted["consolidation_records_deleted"] >= 2  # the run and the schedule's control document
    assert deleted["deleted_count"] == 3 + 1 + deleted["consolidation_records_deleted"] + 1
    assert api.get(f"{BANKS}/team").status_code == 404
    assert api.get("/recall", params={"query": "standup"}, headers={"X-Bank": "team"}).json()["results"] == []
    assert api.get("/consolidate/status", headers={"X-Bank": "team"}).json()["history"] == []
    assert [b["bank_id"] for b in api.get(BANKS).json()["banks"]] == ["solo"]
    assert api.get(f"{BANKS}/nothing-here").status_code == 404


def test_the_same_memory_through_both_apis(banked):
    api = banked
    automem_id = api.post("/memory", json={
        "content": "Chose PostgreSQL for billing", "tags": ["project-x", "db"], "metadata": {"source": "slack", "count": 2},
        "timestamp": "2024-02-03T04:05:06Z",
    }, headers={"X-Bank": "m"}).json()["memory_id"]
    (seen,) = [r for r in hrecall(api, "m", "PostgreSQL billing")["results"] if r["id"] == automem_id]
    assert (seen["text"], seen["tags"], seen["metadata"], seen["mentioned_at"], seen["type"]) == (
        "Chose PostgreSQL for billing", ["project-x", "db"], {"source": "slack", "count": "2"}, "2024-02-03T04:05:06+00:00", "world")
    listed = api.get(f"{BANKS}/m/memories/list").json()["items"]
    assert [i["id"] for i in listed] == [automem_id]
    hs_id = remember(api, "m", "I migrated the billing tables", tags=["project-x"], metadata={"ticket": "BILL-7"}, context="migration",
                     timestamp="2024-02-04T00:00:00Z", entities=[{"text": "Billing", "type": "SYSTEM"}])
    memory = api.get(f"/memory/{hs_id}", headers={"X-Bank": "m"}).json()["memory"]
    assert (memory["content"], memory["tags"], memory["timestamp"], memory["fact_type"], memory["context"]) == (
        "I migrated the billing tables", ["project-x"], "2024-02-04T00:00:00+00:00", "experience", "migration")
    assert memory["metadata"] == {"ticket": "BILL-7", "entities": {"system": ["Billing"]}}
    assert hs_id in [r["id"] for r in api.get("/recall", params={"query": "billing tables"}, headers={"X-Bank": "m"}).json()["results"]]
    unit = api.get(f"{BANKS}/m/memories/{hs_id}").json()
    assert (unit["text"], unit["entities"], unit["metadata"], unit["fact_type"]) == ("I migrated the billing tables", "Billing", {"ticket": "BILL-7"}, "experience")
    # an AutoMem PATCH shows through Hindsight, a Hindsight DELETE through AutoMem
    api.patch(f"/memory/{automem_id}", json={"tags": ["db"]}, headers={"X-Bank": "m"})
    assert api.get(f"{BANKS}/m/memories/{automem_id}").json()["tags"] == ["db"]
    assert api.delete(f"{BANKS}/m/memories/{hs_id}").json() == {"success": True, "message": f"Memory unit '{hs_id}' deleted", "deleted_count": 1}
    assert api.get(f"/memory/{hs_id}", headers={"X-Bank": "m"}).status_code == 404
    assert api.delete(f"{BANKS}/m/memories/{hs_id}").status_code == 404


def test_list_memories_filters_and_pages(banked):
    api = banked
    for i in range(5):
        remember(api, "l", f"Weekly report number {i}", tags=["reports"] if i % 2 == 0 else [], timestamp=f"2024-01-0{i + 1}T00:00:00Z")
    remember(api, "l", "I sent the weekly report", document_id="doc-1", timestamp="2024-02-01T00:00:00Z")
    page = api.get(f"{BANKS}/l/memories/list", params={"limit": 2, "offset": 1}).json()
    assert page["total"] == 6 and page["limit"] == 2 and [i["text"] for i in page["items"]] == ["Weekly report number 4", "Weekly report number 3"]
    assert [i["text"] for i in api.get(f"{BANKS}/l/memories/list", params={"type": "experience"}).json()["items"]] == ["I sent the weekly report"]
    tagged = api.get(f"{BANKS}/l/memories/list", params=[("tags", "reports"), ("tags_match", "any_strict")]).json()
    assert tagged["total"] == 3
    assert api.get(f"{BANKS}/l/memories/list", params={"q": "SENT the"}).json()["total"] == 1
    assert api.get(f"{BANKS}/l/memories/list", params={"document_id": "doc-1"}).json()["items"][0]["chunk_id"] == "doc-1:0"
    window = api.get(f"{BANKS}/l/memories/list", params={"start_date": "2024-01-02T00:00:00Z", "end_date": "2024-01-04T00:00:00Z"}).json()
    assert [i["text"] for i in window["items"]] == ["Weekly report number 2", "Weekly report number 1"]  # end exclusive
    assert api.get(f"{BANKS}/l/memories/list", params={"limit": 0}).json() == {"items": [], "total": 6, "limit": 0, "offset": 0}
    assert api.get(f"{BANKS}/l/memories/list", params={"offset": 9999, "limit": 100}).status_code == 400
    assert api.get(f"{BANKS}/l/memories/list", params={"type": "opinion"}).status_code == 422
    tags = api.get(f"{BANKS}/l/tags", params={"q": "REP*"}).json()
    assert tags == {"items": [{"tag": "reports", "count": 3}], "total": 1, "limit": 100, "offset": 0}
    assert api.get(f"{BANKS}/l/tags", params={"source": "mental_models"}).json()["items"] == []


def test_retain_documents_chunks_and_async(banked):
    api = banked
    api.put(f"{BANKS}/d", json={"retain_chunk_size": 150})
    long_text = " ".join(f"Sentence {i} of the design document." for i in range(20))
    first = retain(api, "d", {"content": long_text, "document_id": "design"})
    assert first["items_count"] == 1 and len(first["memory_ids"]) > 3  # the bank's chunk size
    listed = api.get(f"{BANKS}/d/memories/list", params={"document_id": "design", "limit": 100}).json()["items"]
    assert sorted(i["chunk_id"] for i in listed) == sorted(f"design:{n}" for n in range(len(first["memory_ids"])))
    # retaining the document again replaces it: same ids, the chunks it no longer has are gone
    again = retain(api, "d", {"content": "A much shorter design document.", "document_id": "design"})
    assert again["memory_ids"] == first["memory_ids"][:1]
    assert [i["text"] for i in api.get(f"{BANKS}/d/memories/list", params={"document_id": "design"}).json()["items"]] == ["A much shorter design document."]
    appended = retain(api, "d", {"content": "An appendix.", "document_id": "design", "update_mode": "append"})
    assert api.get(f"{BANKS}/d/memories/{appended['memory_ids'][0]}").json()["chunk_id"] == "design:1"
    # async: answered at once, stored right after the answer
    resp = api.post(f"{BANKS}/d/memories", json={"items": [{"content": "Stored in the background"}], "async": True, "operation_id": "op-42"})
    assert resp.json() == {"success": True, "bank_id": "d", "items_count": 1, "async": True, "operation_id": "op-42"}
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and "Stored in the background" not in [r["text"] for r in hrecall(api, "d", "background")["results"]]:
        time.sleep(0.2)
    assert "Stored in the background" in [r["text"] for r in hrecall(api, "d", "background")["results"]]
    # the same operation_id again stores nothing new (ids derive from it)
    # (a TestClient call returns once the response's background task has run: nothing to wait for)
    api.post(f"{BANKS}/d/memories", json={"items": [{"content": "Stored in the background"}], "async": True, "operation_id": "op-42"})
    assert [r["text"] for r in hrecall(api, "d", "background")["results"]].count("Stored in the background") == 1
    # invalid input is refused before anything is written, also for async
    bad = api.post(f"{BANKS}/d/memories", json={"items": [{"content": "ok"}, {"content": "x", "tags": ["t" * 300]}], "async": True})
    assert bad.status_code == 400 and "items[1].tags[0]" in bad.json()["detail"]
    assert api.post(f"{BANKS}/d/memories", json={"items": [{"content": "x", "timestamp": "not a date"}]}).status_code == 422
    images = api.post(f"{BANKS}/d/memories", json={"items": [{"content": [{"type": "image", "source": {}}]}]})
    assert images.status_code == 422 and "vision" in images.json()["detail"][0]["msg"]
    assert images.json()["detail"][0]["loc"] == ["body", "items", 0, "content", 0]
    assert api.post(f"{BANKS}/d/memories", json={"items": []}).json()["items_count"] == 0


def test_scoped_tokens_list_and_recall_their_own_bank(banked):
    """Tokens scoped to bank a see bank a alone in the list, recall its memories and never b's (every
    Hindsight route against another bank is in test_banks.py::test_isolation_matrix, generated from
    app.routes); b is unchanged afterwards."""
    api = banked
    api.put(f"{BANKS}/b", json={"name": "Bank B secret name"})
    b1 = remember(api, "b", "Bank b secret: the launch code is 7-7-1", tags=["secret"])
    retain(api, "a", {"content": "Bank a memory about launch codes"}, headers=as_(A_TOKEN))
    for token in (A_TOKEN, READ_A):
        listed = api.get(BANKS, headers=as_(token)).json()
        assert [b["bank_id"] for b in listed["banks"]] == ["a"] and listed["total"] == 1
        own = hrecall(api, "a", "launch code secret", headers=as_(token))
        assert [r["text"] for r in own["results"]] == ["Bank a memory about launch codes"]
        assert api.get(f"{BANKS}/a/memories/{b1}", headers=as_(token)).status_code == 404  # b's memory, asked of a
    # a write into its own bank is refused for the reader
    assert api.post(f"{BANKS}/a/memories", json={"items": [{"content": "x"}]}, headers=as_(READ_A)).status_code == 403
    # bank b is unchanged
    assert api.get(f"{BANKS}/b/profile").json()["name"] == "Bank B secret name"
    assert result_ids(hrecall(api, "b", "launch code")) == [b1]
    assert api.get(f"{BANKS}/b/memories/list").json()["total"] == 1
