"""Thread context across main's surfaces: banks never share a thread, writes through Hindsight's
retain and keyed (Idempotency-Key) batches are linked like any other, and no API response shows a
ranking aid (thread_*, date_terms); export lines keep a thread's order and context, as designed."""

from __future__ import annotations

import json

import orjson

from service.memory.codec import RANKING_FIELDS
from tests.integration.admin_support import export_bytes
from tests.integration.hindsight_support import BANKS, hrecall, retain
from tests.integration.test_thread_context import at, context, stored

AIDS = set(RANKING_FIELDS)



def turn(api, bank: str, mid: str, text: str, minute: int, thread: str = "s-1") -> None:
    resp = api.post("/memory", json={"content": text, "id": mid, "timestamp": at(minute), "metadata": {"session_id": thread}},
                    headers={"X-Bank": bank})
    assert resp.status_code == 201, resp.text


def no_aids(value) -> None:
    """No key of a ranking aid anywhere in a response body."""
    if isinstance(value, dict):
        assert not AIDS & set(value), sorted(AIDS & set(value))
        for v in value.values():
            no_aids(v)
    elif isinstance(value, list):
        for v in value:
            no_aids(v)


def test_a_thread_never_links_across_banks(make_client):
    api = make_client(write_refresh="true")
    turn(api, "a", "a1", "What did you cook on Sunday?", 0)
    turn(api, "b", "b1", "Did the build pass?", 1)  # same session id, later, another bank
    turn(api, "b", "b5", "It did, after a retry.", 5)
    turn(api, "a", "a3", "A mushroom risotto.", 3)  # in bank a, between b1 and b5 in time
    assert context(api, "a1") == (None, None)
    assert context(api, "b1") == (None, None)
    assert context(api, "a3") == ("a1", "What did you cook on Sunday?")
    assert context(api, "b5") == ("b1", "Did the build pass?")
    # A delete in bank a re-links bank a only.
    assert api.delete("/memory/a1", headers={"X-Bank": "a"}).status_code == 200
    assert context(api, "a3") == (None, None)
    assert context(api, "b5") == ("b1", "Did the build pass?")


def test_hindsight_retain_links_its_items_and_shows_no_aid(make_client):
    api = make_client(write_refresh="true", recall_adaptive_floor=False)
    body = retain(api, "h",
                  {"content": "Where should we hold the offsite?", "timestamp": at(0), "metadata": {"session_id": "plan"}},
                  {"content": "Lisbon, in the old town.", "timestamp": at(1), "metadata": {"session_id": "plan"}})
    first, second = body["memory_ids"]
    assert context(api, second) == (first, "Where should we hold the offsite?")
    no_aids(hrecall(api, "h", "offsite Lisbon"))
    no_aids(api.get(f"{BANKS}/h/memories/list").json())
    no_aids(api.get(f"{BANKS}/h/memories/{second}").json())
    # Hindsight's DELETE goes through the writer: the thread is re-linked.
    assert api.delete(f"{BANKS}/h/memories/{first}").status_code == 200
    assert context(api, second) == (None, None)


def test_keyed_batches_link_once_and_a_retry_changes_nothing(make_client):
    api = make_client(write_refresh="true")
    memories = [{"content": text, "timestamp": at(i), "metadata": {"session_id": "k"}} for i, text in enumerate(["Is the API up?", "Yes, since 9."])]
    first = api.post("/memory/batch", json={"memories": memories}, headers={"Idempotency-Key": "batch-1"})
    assert first.status_code == 201, first.text
    q, a = first.json()["memory_ids"]
    assert context(api, a) == (q, "Is the API up?")
    before = stored(api, a)
    again = api.post("/memory/batch", json={"memories": memories}, headers={"Idempotency-Key": "batch-1"})
    assert again.status_code == 201, again.text
    after = stored(api, a)
    assert {k: after.get(k) for k in AIDS} == {k: before.get(k) for k in AIDS}
    no_aids(first.json())


def test_no_automem_or_signet_response_shows_an_aid_and_export_keeps_the_context(make_client):
    api = make_client(write_refresh="true", recall_adaptive_floor=False)
    turn(api, "default", "e1", "What did you do yesterday?", 0, thread="x")
    turn(api, "default", "e2", "Went camping by the lake yesterday.", 1, thread="x")
    assert stored(api, "e2")["date_terms"]  # the aids are stored ...
    patched = api.patch("/memory/e2", json={"content": "Went camping by the river yesterday."})
    for body in (  # ... and no answer shows them
        api.get("/memory/e2").json(), patched.json(),
        api.get("/recall", params={"query": "camping yesterday"}).json(),
        api.get("/memory/by-tag", params={"tags": "x"}).json(),
        api.post("/api/memory/recall", json={"query": "camping"}).json(),
        api.get("/api/memory/search", params={"q": "camping"}).json(),
        api.get("/memory/search", params={"q": "camping"}).json(),
        api.get("/memory/similar", params={"id": "e2"}).json(),
    ):
        no_aids(body)
    lines = [orjson.loads(line) for line in export_bytes(api).splitlines() if line.strip()]
    (record,) = [r for r in lines if r.get("id") == "e2"]
    # Export lines carry the thread's order and context (the importer keeps them, it does not link);
    # what the write path rebuilds stays out.
    assert record["thread_prev"] == "e1" and record["thread_context"] == "What did you do yesterday?"
    assert not {"thread_key", "thread_at", "date_terms"} & set(record), json.dumps(record)[:300]
