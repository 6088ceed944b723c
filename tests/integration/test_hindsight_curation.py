"""Hindsight's curation through hindsight-client 1.1.0 itself (issue 25 item 8), against a real
uvicorn server and the real engine: `memory.update_memory` (PATCH .../memories/{memory_id}: edit,
invalidate, restore) and `memory.get_observation_history` (GET .../memories/{memory_id}/history: the
PATCHes, the supersession chain, an observation's sources), on the one store that AutoMem's routes
read too."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import AUTH, TOKEN
from tests.integration.live import live_app

hindsight_client = pytest.importorskip("hindsight_client")
from hindsight_client.hindsight_client import _run_async  # noqa: E402  (the client's own loop)
from hindsight_client_api.exceptions import ApiException  # noqa: E402
from hindsight_client_api.models.update_memory_request import UpdateMemoryRequest  # noqa: E402


@pytest.fixture
def served(engine_url, embedder, os_client):
    with live_app(engine_url, embedder, os_client, recall_adaptive_floor=False) as (_, url):
        hs = hindsight_client.Hindsight(base_url=url, api_key=TOKEN, timeout=60)
        try:
            yield hs, httpx.Client(base_url=url, headers=AUTH, timeout=60)
        finally:
            hs.close()


def update(hs, bank: str, memory_id: str, **fields):
    return _run_async(hs.memory.update_memory(bank_id=bank, memory_id=memory_id, update_memory_request=UpdateMemoryRequest(**fields)))


def history(hs, bank: str, memory_id: str):
    return _run_async(hs.memory.get_observation_history(bank_id=bank, memory_id=memory_id))


def texts(hs, bank: str, query: str) -> list[str]:
    return [r.text for r in hs.recall(bank, query, budget="low").results]


def test_edit_invalidate_restore_and_the_history(served):
    hs, http = served
    hs.create_bank("alice")
    stored = hs.retain("alice", "Alice visited Paris in 2023.", context="travel", timestamp="2023-05-01T10:00:00Z",
                       entities=[{"text": "Paris", "type": "LOCATION"}])
    memory_id = hs.list_memories("alice").items[0].id
    assert stored.success

    # edit: the text (re-embedded), the date, the fact type and the entities, with a reason
    unit = update(hs, "alice", memory_id, text="The user visited Rome in 2023.", reason="wrong subject and city",
                  occurred_start="2023-06-01", fact_type="experience", entities=["Alice", "Rome"])
    assert (unit["id"], unit["text"], unit["type"], unit["state"], unit["entities"]) == (memory_id, "The user visited Rome in 2023.", "experience", "valid", "Alice, Rome")
    assert unit["occurred_start"].startswith("2023-06-01") and unit["edited_at"] and "warnings" not in unit
    got = _run_async(hs.memory.get_memory(bank_id="alice", memory_id=memory_id))
    assert (got["text"], got["fact_type"], got["edited_at"]) == ("The user visited Rome in 2023.", "experience", unit["edited_at"])
    assert texts(hs, "alice", "Which city did the user visit? Rome") == ["The user visited Rome in 2023."]  # the new vector and words
    automem = http.get(f"/memory/{memory_id}", headers={"X-Bank": "alice"}).json()["memory"]
    assert automem["content"] == "The user visited Rome in 2023." and "curation" not in automem  # the one store; AutoMem's view as before

    # invalidate: out of recall, kept for audit, listed as invalidated
    gone = update(hs, "alice", memory_id, state="invalidated", reason="trip was cancelled")
    assert (gone["state"], gone["invalidation_reason"]) == ("invalidated", "trip was cancelled") and gone["invalidated_at"]
    assert texts(hs, "alice", "Which city did the user visit? Rome") == []
    assert [i.id for i in hs.list_memories("alice", state="invalidated").items] == [memory_id]
    assert hs.list_memories("alice", state="valid").total == 0

    # restore
    back = update(hs, "alice", memory_id, state="valid")
    assert (back["state"], back["invalidated_at"], back["invalidation_reason"]) == ("valid", None, None)
    assert texts(hs, "alice", "Which city did the user visit? Rome") == ["The user visited Rome in 2023."]

    entries = history(hs, "alice", memory_id)
    assert [e["change"] for e in entries] == ["restored", "invalidated", "edited"]  # newest first
    edit = entries[2]
    assert (edit["previous_text"], edit["text"], edit["reason"]) == ("Alice visited Paris in 2023.", "The user visited Rome in 2023.", "wrong subject and city")
    assert sorted(edit["fields"]) == ["date", "entities", "fact_type", "text"]
    assert (edit["previous"]["fact_type"], edit["current"]["fact_type"]) == ("world", "experience")
    assert edit["previous"]["date"].startswith("2023-05-01") and edit["current"]["date"].startswith("2023-06-01")
    assert edit["previous"]["entities"] == ["Paris"] and edit["current"]["entities"] == ["Alice", "Rome"]
    assert entries[1]["reason"] == "trip was cancelled" and entries[1]["previous"]["state"] == "valid"


def test_history_follows_the_supersession_chain(served):
    hs, http = served
    hs.create_bank("chain")
    first = http.post("/memory", json={"content": "We use MongoDB for the primary database"}, headers={"X-Bank": "chain"}).json()["memory_id"]
    second = http.post("/memory", json={"content": "We moved to PostgreSQL", "supersedes": first}, headers={"X-Bank": "chain"}).json()["memory_id"]
    third = http.post("/memory", json={"content": "We moved to SQLite", "supersedes": second, "supersede_type": "INVALIDATED_BY"},
                      headers={"X-Bank": "chain"}).json()["memory_id"]
    for mid in (first, second, third):  # from any memory of the chain, the whole chain
        links = [(e["memory_id"], e["superseded_by"], e["relation"]) for e in history(hs, "chain", mid) if e["change"] == "superseded"]
        assert links == [(second, third, "INVALIDATED_BY"), (first, second, "EVOLVED_INTO")], mid
    newest = history(hs, "chain", third)[0]
    assert (newest["previous_text"], newest["text"]) == ("We moved to PostgreSQL", "We moved to SQLite")
    assert [i.id for i in hs.list_memories("chain", state="invalidated").items] != []
    # a superseded memory cannot be restored by a PATCH: its replacement stands
    with pytest.raises(ApiException) as err:
        update(hs, "chain", first, state="valid")
    assert err.value.status == 409 and second in err.value.body
    with pytest.raises(ApiException) as err:
        history(hs, "chain", "does-not-exist")
    assert err.value.status == 404


def test_curation_refuses_bad_input_in_hindsights_shape(served):
    hs, http = served
    hs.create_bank("bob")
    hs.retain("bob", "Bob likes tea")
    memory_id = hs.list_memories("bob").items[0].id
    path = f"/v1/default/banks/bob/memories/{memory_id}"
    cases = [
        ({}, 400, "Nothing to update"),
        ({"reason": "just a reason"}, 400, "Nothing to update"),
        ({"text": "   "}, 400, "non-empty"),
        ({"state": "deleted"}, 400, "Invalid state 'deleted'"),
        ({"fact_type": "observation"}, 400, "observations are derived"),
        ({"fact_type": "opinion"}, 400, "Invalid fact_type"),
        ({"occurred_start": "not a date"}, 400, "Invalid occurred_start"),
        ({"text": "x" * 20_001}, 400, "text"),
        ({"entities": ["e" * 300]}, 400, "entities[0]"),
        ({"entities": ["a"] * 201}, 422, ""),
        ({"context": "c" * 2_001}, 422, ""),
        ({"text": 5}, 422, ""),
    ]
    for body, code, fragment in cases:
        resp = http.patch(path, json=body)
        assert resp.status_code == code, (body, resp.text)
        detail = resp.json()["detail"]
        assert fragment in (detail if isinstance(detail, str) else str(detail)), (body, resp.text)
    resp = http.patch(path, content=b'{"text": "bad \\ud800"}', headers={"Content-Type": "application/json"})
    assert resp.status_code == 400 and "surrogate" in resp.json()["detail"]
    assert http.patch("/v1/default/banks/bob/memories/does-not-exist", json={"state": "invalidated"}).status_code == 404
    assert http.patch("/v1/default/banks/bob/memories/bad id!", json={"state": "invalidated"}).status_code == 404
    assert hs.list_memories("bob").items[0].text == "Bob likes tea"  # nothing was changed
    assert history(hs, "bob", memory_id) == []

    # a memory of another bank: a 404 that names no other bank
    hs.create_bank("carol")
    hs.retain("carol", "Carol's secret: 7-7-1")
    carol = hs.list_memories("carol").items[0].id
    resp = http.patch(f"/v1/default/banks/bob/memories/{carol}", json={"text": "overwritten"})
    assert resp.status_code == 404 and "carol" not in resp.text and "7-7-1" not in resp.text
    assert http.get(f"/v1/default/banks/bob/memories/{carol}/history").status_code == 404
    assert hs.list_memories("carol").items[0].text == "Carol's secret: 7-7-1"


def test_dates_this_store_cannot_keep_apart_are_named(served):
    hs, http = served
    hs.create_bank("dates")
    hs.retain("dates", "The launch happened", timestamp="2024-01-01T00:00:00Z")
    memory_id = hs.list_memories("dates").items[0].id
    unit = update(hs, "dates", memory_id, occurred_start="2024-02-01T00:00:00Z", occurred_end="2024-02-03T00:00:00Z")
    assert unit["occurred_start"].startswith("2024-02-01") and unit["occurred_end"] == unit["occurred_start"]
    assert len(unit["warnings"]) == 1 and "occurred_end" in unit["warnings"][0]
    cleared = http.patch(f"/v1/default/banks/dates/memories/{memory_id}", json={"occurred_start": None, "context": ""}).json()
    assert (cleared["occurred_start"], cleared["mentioned_at"], cleared["context"]) == (None, None, "")


def test_the_history_survives_a_backup_and_restore(served):
    from tests.conftest import ADMIN

    hs, http = served
    hs.create_bank("kept")
    hs.retain("kept", "Alice visited Paris in 2023.")
    memory_id = hs.list_memories("kept").items[0].id
    update(hs, "kept", memory_id, text="Alice visited Rome in 2023.", reason="typo")
    before = history(hs, "kept", memory_id)
    archive = http.get("/backup", params={"bank": "kept"}, headers={"X-Admin-Token": ADMIN})
    assert archive.status_code == 200, archive.text
    assert http.delete(f"/v1/default/banks/kept/memories/{memory_id}").status_code == 200
    restored = http.post("/admin/restore", params={"bank": "kept"}, files={"file": ("b.tar.gz", archive.content, "application/gzip")},
                         headers={"X-Admin-Token": ADMIN})
    assert restored.status_code == 200, restored.text
    assert history(hs, "kept", memory_id) == before and before[0]["previous_text"] == "Alice visited Paris in 2023."
