"""The start-up backfill (service/writes/backfill.py) against the real engine: memories stored before
recall's doc-value fields existed get the fields a write gives today, keep their vectors and text, and
a memory changed while the backfill ran keeps the newer write."""

from __future__ import annotations

import time

from service.writes import backfill as B
from tests.integration.support import mem, recall

RECALL_FIELDS = ("content_stems", "context_stems", "metadata_terms_plain")


def doc_values(api, mid: str) -> dict:
    api.app.state.memories.refresh_now()
    body = {"query": {"ids": {"values": [mid]}}, "stored_fields": "_none_", "docvalue_fields": list(RECALL_FIELDS)}
    return api.app.state.client.search(index=api.app.state.memories.alias, body=body)["hits"]["hits"][0].get("fields", {})


def make_legacy(api, os_client, mid: str) -> str:
    """A copy of `mid` as an earlier version stored it (none of the fields), under a new id."""
    store = api.app.state.memories
    store.refresh_now()
    doc = os_client.get(index=store.alias, id=mid)["_source"]
    vector = store.vectors(doc["bank"], [mid])[mid][0]
    legacy_id = f"legacy-{mid}"
    legacy = {k: v for k, v in doc.items() if k not in RECALL_FIELDS}
    os_client.index(index=store.alias, id=legacy_id, body={**legacy, "id": legacy_id, "embedding": vector}, refresh=True)
    assert doc_values(api, legacy_id) == {}
    return legacy_id


def test_legacy_memories_get_the_fields_a_write_gives(make_client, os_client):
    api = make_client()
    fresh = [mem(api, "The heating engineer visits on Tuesday", metadata={"room": "boiler"}, tags=["house"]),
             mem(api, "Painted the fence green", metadata={"session_id": "s1"}, timestamp="2024-03-01T10:00:00+00:00"),
             mem(api, "Sounds lovely", metadata={"session_id": "s1"}, timestamp="2024-03-01T10:01:00+00:00")]
    legacy = [make_legacy(api, os_client, mid) for mid in fresh]
    store = api.app.state.memories
    before = {mid: os_client.get(index=store.alias, id=mid)["_source"] for mid in legacy}

    result = B.backfill(store, size=2, pause_s=0)  # two pages and a half: search_after is followed

    assert (result.found, result.written, result.skipped, result.failed) == (3, 3, 0, 0)
    for mid, copy in zip(fresh, legacy):
        assert doc_values(api, copy) == doc_values(api, mid)
        after = os_client.get(index=store.alias, id=copy)["_source"]
        assert {k: v for k, v in after.items() if k not in RECALL_FIELDS} == before[copy]
    assert doc_values(api, legacy[2])["context_stems"] == ["fenc", "green", "paint"]
    vectors = store.vectors(before[legacy[0]]["bank"], [fresh[0], legacy[0]])
    assert vectors[fresh[0]][0] == vectors[legacy[0]][0]
    assert B.backfill(store).found == 0  # nothing left: a second start does nothing
    body = recall(api, query="heating engineer", tags="house", limit=5)
    by = {r["id"]: r for r in body["results"]}
    assert by[legacy[0]]["score_components"]["keyword"] == by[fresh[0]]["score_components"]["keyword"] == 1.0


def test_a_memory_changed_after_it_was_read_keeps_the_newer_write(make_client, os_client):
    api = make_client()
    legacy = make_legacy(api, os_client, mem(api, "Caught three fish"))
    hits = B.read_page(api.app.state.memories, None)
    assert [h["_id"] for h in hits] == [legacy]
    assert api.patch(f"/memory/{legacy}", json={"content": "Caught nothing at all"}).status_code == 200

    result = B.BackfillResult()
    B.rewrite(api.app.state.memories, hits, result)

    assert (result.written, result.skipped) == (0, 1)
    assert api.get(f"/memory/{legacy}").json()["memory"]["content"] == "Caught nothing at all"
    assert doc_values(api, legacy)["content_stems"] == ["all", "caught", "noth"]


def test_the_service_backfills_at_start(make_client, os_client):
    """What users run: an upgraded service (default settings, enrichment on) starts on a store written
    by an earlier version."""
    first = make_client()
    legacy = make_legacy(first, os_client, mem(first, "The library opens at nine", metadata={"branch": "north"}))
    prefix = first.app.state.settings.index_prefix
    second = make_client(index_prefix=prefix, enrichment_enabled=True)
    second.app.state.backfill.thread.join(30)
    result = second.app.state.backfill.result
    # Written by the backfill, or first by the enrichment worker, which stores the fields too.
    assert result.found == 1 and result.written + result.skipped == 1 and result.failed == 0
    values = doc_values(second, legacy)
    assert values["content_stems"] == ["librari", "nine", "open"] and values["metadata_terms_plain"]
    deadline = time.monotonic() + 5
    while os_client.count(index=second.app.state.memories.alias, body={"query": B.MISSING})["count"]:
        assert time.monotonic() < deadline
        time.sleep(0.1)
