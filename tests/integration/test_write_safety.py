"""Retries, races and large deletes: a write is stored once, no edge outlives its memory, and
delete-by-tag works at any size."""

from __future__ import annotations

import threading
import uuid

import pytest
from opensearchpy import helpers

from tests.integration.support import assert_error, fast_api, ids as result_ids, link, mem, recall

pytestmark = pytest.mark.own_app('counts over the whole store and fixed ids')


# --- 5. Idempotency-Key ------------------------------------------------------------------------------
def test_a_retried_post_with_an_idempotency_key_stores_once(api):
    headers = {"Idempotency-Key": "retry-7f3a"}
    first = api.post("/memory", json={"content": "Deploys happen on Tuesdays", "tags": ["ops"]}, headers=headers)
    again = api.post("/memory", json={"content": "Deploys happen on Tuesdays", "tags": ["ops"]}, headers=headers)
    assert first.status_code == again.status_code == 201
    assert first.json()["memory_id"] == again.json()["memory_id"]
    assert again.json()["timestamp"] == first.json()["timestamp"]  # the stored memory, not a new one
    assert api.get("/health").json()["memory_count"] == 1
    other = api.post("/memory", json={"content": "Something else entirely"}, headers=headers)
    assert_error(other, 409, "Idempotency-Key")
    assert api.post("/memory", json={"content": "Deploys happen on Tuesdays"}).json()["memory_id"] != first.json()["memory_id"]


def test_a_retried_batch_with_an_idempotency_key_leaves_no_duplicates(api):
    body = {"memories": [{"content": f"batch item {i}"} for i in range(5)] + [{"content": "with client id", "id": "client-1"}]}
    first = api.post("/memory/batch", json=body, headers={"Idempotency-Key": "batch-1"})
    again = api.post("/memory/batch", json=body, headers={"Idempotency-Key": "batch-1"})
    assert first.status_code == again.status_code == 201, again.text
    assert first.json()["memory_ids"] == again.json()["memory_ids"]
    assert first.json()["memory_ids"][-1] == "client-1"
    assert api.get("/health").json()["memory_count"] == 6


def test_a_retried_supersede_stores_once(api):
    old = mem(api, "We use MySQL")
    body = {"content": "We moved to PostgreSQL", "supersedes": old}
    first = api.post("/memory", json=body, headers={"Idempotency-Key": "sup-1"})
    again = api.post("/memory", json=body, headers={"Idempotency-Key": "sup-1"})
    assert first.status_code == again.status_code == 201
    assert first.json()["memory_id"] == again.json()["memory_id"]
    health = api.get("/health").json()
    assert (health["memory_count"], health["edge_count"]) == (2, 1)


def test_a_bad_idempotency_key_is_400(api):
    assert_error(api.post("/memory", json={"content": "x"}, headers={"Idempotency-Key": "k" * 201}), 400, "Idempotency-Key")


# --- 6. associate racing delete ------------------------------------------------------------------------
def dangling_edges(api, os_client) -> list[str]:
    settings = api.app.state.settings
    os_client.indices.refresh(index=f"{settings.index_prefix}-*")
    alive = {h["_id"] for h in helpers.scan(os_client, index=settings.memories_alias, query={"query": {"match_all": {}}}, _source=False)}
    edges = [h["_source"] for h in helpers.scan(os_client, index=settings.edges_alias, query={"query": {"match_all": {}}})]
    return [f"{e['source_id']}->{e['target_id']}" for e in edges if e["source_id"] not in alive or e["target_id"] not in alive]


def test_associate_racing_delete_leaves_no_dangling_edge(make_client, os_client):
    api = fast_api(make_client)
    for round_ in range(40):
        a, b = mem(api, f"a{round_}", id=f"a{round_}"), mem(api, f"b{round_}")
        barrier = threading.Barrier(2)
        out = {}

        def associate():
            barrier.wait()
            out["assoc"] = api.post("/associate", json={"memory1_id": a, "memory2_id": b, "type": "EVOLVED_INTO"}).status_code

        def delete():
            barrier.wait()
            out["delete"] = api.delete(f"/memory/{a}").status_code

        threads = [threading.Thread(target=associate), threading.Thread(target=delete)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert out["delete"] == 200 and out["assoc"] in (201, 404), out
    assert dangling_edges(api, os_client) == []
    # Re-created with the same client id, a memory starts with no edges.
    mem(api, "a again", id="a0")
    assert api.get("/memories/a0/related").json()["related_memories"] == []


def test_concurrent_patches_of_tags_and_metadata_both_survive(api):
    """Each PATCH computes the derived fields (tags, tags_norm, metadata_terms) from the version its
    write is conditioned on, so a metadata PATCH never writes back the tags it read before a tag PATCH."""
    mid = mem(api, "contended memory", tags=["t0"])
    barrier = threading.Barrier(2)
    failures: list[int] = []

    def patch(field: str) -> None:
        barrier.wait()
        for i in range(1, 21):
            body = {"tags": [f"t{i}"]} if field == "tags" else {"metadata": {"n": i}}
            status = api.patch(f"/memory/{mid}", json=body).status_code
            if status != 200:
                failures.append(status)

    threads = [threading.Thread(target=patch, args=(f,)) for f in ("tags", "metadata")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    memory = api.get(f"/memory/{mid}").json()["memory"]
    assert (memory["tags"], memory["tag_prefixes"], memory["metadata"]) == (["t20"], ["t20"], {"n": 20})


# --- 7. delete-by-tag beyond the terms limit ---------------------------------------------------------
def test_delete_by_tag_beyond_65536_memories(api, os_client):
    """70,000 memories with the ids clients get (uuid4): deleted in bounded chunks, each chunk with its
    edges and the supersessions it caused. Before, the thread-context sweep sent every deleted id in
    each of its 70 queries (~190 MB) and the engine answered 413 after the memories were gone, leaving
    the untagged survivor superseded by a deleted memory (so current-state recall hid it)."""
    alias = api.app.state.settings.memories_alias
    n = 70_000
    ids = [str(uuid.uuid4()) for _ in range(n)]
    docs = (
        {"_index": alias, "_id": mid, "_source": {
            "id": mid, "bank": "default", "content": f"bulk memory {i}", "tags": ["bulk"], "tags_norm": ["bulk"],
            "tag_prefixes": ["bulk"], "type": "Context", "importance": 0.5, "timestamp": "2026-01-01T00:00:00+00:00",
        }}
        for i, mid in enumerate(ids)
    )
    helpers.bulk(os_client, docs, chunk_size=5000, refresh=True)
    survivor = mem(api, "the survivor: superseded by a bulk memory")
    link(api, survivor, ids[-1], "EVOLVED_INTO")
    link(api, ids[0], ids[1], "RELATES_TO")
    assert survivor not in result_ids(recall(api, query="survivor superseded"))  # superseded: hidden from current state
    resp = api.delete("/memory/by-tag", params={"tags": "bulk"})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert (body["deleted_count"], body["matched_count"], body["edges_deleted"], body["supersessions_cleared"]) == (n, n, 2, 1)
    assert api.get("/health").json()["memory_count"] == 1
    assert "superseded_by" not in api.get(f"/memory/{survivor}").json()["memory"]
    assert result_ids(recall(api, query="survivor superseded")) == [survivor]


def test_patch_replaces_nested_metadata(api):
    mid = mem(api, "nested", metadata={"a": {"x": 1, "y": 2}, "keep": True})
    assert api.patch(f"/memory/{mid}", json={"metadata": {"a": {"z": 3}}}).status_code == 200
    assert api.get(f"/memory/{mid}").json()["memory"]["metadata"] == {"a": {"z": 3}}
