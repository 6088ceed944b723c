"""Threads no client named (service/threads/plan.py): a Hindsight document's chunks in order, and a
burst (the same tag set at one stated timestamp) such as a session's turns stamped with the
session's time. Unrelated notes written one after another are never threaded."""

from __future__ import annotations

from tests.conftest import ADMIN
from tests.integration.hindsight_support import retain
from tests.integration.support import recall
from tests.integration.test_thread_context import at, context, stored

SESSION = "2023-05-08T13:56:00+00:00"
TURNS = [
    "Caroline: Hey Mel! What did you do last weekend?",
    "Melanie: We went camping by the lake with the kids.",
    "Caroline: That sounds lovely. Did you roast marshmallows?",
    "Melanie: Of course, and we told ghost stories.",
]


def batch(api, memories: list[dict]) -> list[str]:
    resp = api.post("/memory/batch", json={"memories": memories})
    assert resp.status_code == 201, resp.text
    return resp.json()["memory_ids"]


def test_turns_sharing_tags_and_a_stated_timestamp_are_one_thread(api):
    ids = batch(api, [{"content": t, "tags": ["locomo:c1"], "timestamp": SESSION} for t in TURNS])
    assert [context(api, m)[0] for m in ids] == [None, *ids[:-1]]
    assert context(api, ids[1])[1] == TURNS[0]
    # The next batch of the same session continues the thread; another session (instant) or another tag set starts its own.
    (more,) = batch(api, [{"content": "Caroline: Sounds like fun.", "tags": ["locomo:c1"], "timestamp": SESSION}])
    assert context(api, more) == (ids[-1], TURNS[-1])
    later, other = batch(api, [{"content": "Caroline: Back from work.", "tags": ["locomo:c1"], "timestamp": "2023-05-09T10:00:00+00:00"},
                               {"content": "Bob: Hi.", "tags": ["locomo:c2"], "timestamp": SESSION}])
    assert context(api, later) == (None, None) and context(api, other) == (None, None)
    # The answer is found by the question before it, as in a named thread.
    body = recall(api, query="last weekend", tags="locomo:c1", limit=3)
    assert [r["id"] for r in body["results"]][:2] == ids[:2]


def test_a_named_thread_is_not_replaced_by_a_burst(api):
    a, b = batch(api, [{"content": "first", "tags": ["t"], "timestamp": SESSION, "metadata": {"session_id": "s-1"}},
                       {"content": "second", "tags": ["t"], "timestamp": SESSION, "metadata": {"session_id": "s-2"}}])
    assert stored(api, a)["thread_key"] == "session:s-1" and context(api, b) == (None, None)


def test_writes_without_a_stated_timestamp_are_not_threaded(api):
    # One batch stamped by the service (one "now" for all): the client said nothing of a grouping.
    ids = batch(api, [{"content": t, "tags": ["notes"]} for t in TURNS])
    assert all(stored(api, m).get("thread_key") is None for m in ids)


NOTES = [
    "The staging database password rotates every 90 days.",
    "Alice prefers dark mode in every editor.",
    "The quarterly report is due on the first Friday of the month.",
    "Our office plant needs water twice a week.",
    "The deploy script lives in tools/release.sh.",
    "Bob is allergic to peanuts; order the lunch accordingly.",
]
QUERIES = ["database password", "dark mode", "quarterly report", "water the plant", "deploy script", "lunch allergy"]


def ranking(api) -> list[list[tuple[str, float]]]:
    out = []
    for q in QUERIES:
        body = recall(api, query=q, tags="work", limit=6)
        out.append([(r["memory"]["content"], r["final_score"]) for r in body["results"]])
    return out


def notes_bank(api, stated: bool) -> None:
    for i, note in enumerate(NOTES):  # one after another, as an agent writes them
        resp = api.post("/memory", json={"content": note, "tags": ["work"], **({"timestamp": at(i)} if stated else {})})
        assert resp.status_code == 201, resp.text


def test_unrelated_notes_written_one_after_another_gain_no_thread(make_client):
    """An agent's notes of one tag set, written one by one (by the service's clock, or each with its own
    stated time a minute apart), rank exactly as with the inference off."""
    for stated in (False, True):
        on, off = make_client(), make_client(thread_infer_enabled=False)
        notes_bank(on, stated)
        notes_bank(off, stated)
        on.app.state.memories.refresh_now()
        docs = on.app.state.client.search(index=on.app.state.memories.alias, body={"size": 20, "query": {"match_all": {}}})["hits"]["hits"]
        assert len(docs) == len(NOTES)
        assert all(d["_source"].get("thread_prev") is None and d["_source"].get("thread_context") is None for d in docs)
        keys = [d["_source"].get("thread_key") for d in docs]  # each note its own burst at most: its own instant
        assert len(set(keys)) == len(NOTES) if stated else set(keys) == {None}
        assert ranking(on) == ranking(off)


def test_the_inference_is_a_setting(make_client):
    api = make_client(thread_infer_enabled=False)
    ids = batch(api, [{"content": t, "tags": ["locomo:c1"], "timestamp": SESSION} for t in TURNS])
    assert all(stored(api, m).get("thread_key") is None for m in ids) and context(api, ids[1]) == (None, None)
    # Named threads are linked as before.
    a, b = batch(api, [{"content": t, "timestamp": SESSION, "metadata": {"session_id": "s"}} for t in TURNS[:2]])
    assert context(api, b) == (a, TURNS[0])


def test_patch_moves_a_memory_between_bursts(api):
    ids = batch(api, [{"content": t, "tags": ["locomo:c1"], "timestamp": SESSION} for t in TURNS[:3]])
    # Re-tagged, the middle turn leaves its burst: the third now follows the first.
    assert api.patch(f"/memory/{ids[1]}", json={"tags": ["elsewhere"]}).status_code == 200
    assert context(api, ids[2]) == (ids[0], TURNS[0])
    assert stored(api, ids[1])["thread_key"] != stored(api, ids[0])["thread_key"] and context(api, ids[1]) == (None, None)
    # Tagged back, it returns between them (the PATCH keeps its stated timestamp's burst).
    assert api.patch(f"/memory/{ids[1]}", json={"tags": ["locomo:c1"]}).status_code == 200
    assert [context(api, m)[0] for m in ids] == [None, ids[0], ids[1]]


def test_a_hindsight_document_is_threaded_chunk_by_chunk(make_client):
    api = make_client(write_refresh="true", hindsight_retain_chunk_chars=100)
    text = "\n\n".join(f"Paragraph {i}: the migration plan step {i} moves table t{i} to the new cluster." for i in range(4))
    body = retain(api, "h", {"content": text, "document_id": "plan-doc"})
    ids = body["memory_ids"]
    assert len(ids) == 4
    assert [context(api, m)[0] for m in ids] == [None, *ids[:-1]]
    assert stored(api, ids[0])["thread_key"] == "document:plan-doc"
    # Appended chunks continue the document's thread.
    more = retain(api, "h", {"content": "Paragraph 4: the old cluster is switched off.", "document_id": "plan-doc", "update_mode": "append"})
    (last,) = more["memory_ids"]
    assert context(api, last)[0] == ids[-1]


def _wait_enriched(api, mid: str, timeout: float = 90.0) -> dict:
    import time

    deadline = time.monotonic() + timeout
    while (memory := api.get(f"/memory/{mid}").json()["memory"]).get("enrichment", {}).get("status") != "done":
        assert time.monotonic() < deadline, f"{mid} was not enriched"
        time.sleep(0.1)
    return memory


def test_enrichments_derived_tags_never_move_a_memory_out_of_its_burst(make_client):
    """A burst is keyed on the caller's tag set: the `entity:` tags enrichment adds later are no part of
    it, neither when a PATCH re-places the memory nor when an export is imported (the round-trip
    property test found an imported memory in another burst than its siblings, CI 2026-12-02)."""
    api = make_client(write_refresh="true", enrichment_enabled=True, enrichment_idle_sleep_seconds=0.1)
    first, second = batch(api, [{"content": "Caroline visited Paris with Melanie.", "tags": ["trip"], "timestamp": SESSION},
                                {"content": "Melanie loved the Louvre.", "tags": ["trip"], "timestamp": SESSION}])
    memory = _wait_enriched(api, first)
    assert set(memory["tags"]) > {"trip"}, memory["tags"]  # enrichment derived tags of its own
    key = stored(api, first)["thread_key"]
    assert key == stored(api, second)["thread_key"] and key.startswith("burst:")
    patched = api.patch(f"/memory/{first}", json={"timestamp": SESSION, "content": "Caroline visited Paris and Lyon with Melanie."})
    assert patched.status_code == 200, patched.text
    assert stored(api, first)["thread_key"] == key
    _wait_enriched(api, second)
    archive = api.get("/backup", headers={"X-Admin-Token": ADMIN})
    assert archive.status_code == 200, archive.text
    target = make_client(write_refresh="true")
    restored = target.post("/admin/restore", files={"file": ("backup.tar.gz", archive.content, "application/gzip")}, headers={"X-Admin-Token": ADMIN})
    assert restored.status_code == 200, restored.text
    assert stored(target, first)["thread_key"] == stored(target, second)["thread_key"] == key
