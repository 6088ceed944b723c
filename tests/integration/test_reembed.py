"""POST /admin/reembed (spec 003): memories the configured model did not embed get its vectors;
`force` re-embeds all; `limit` and `batch_size` as AutoMem; a concurrent edit always wins."""

from __future__ import annotations

import json
import time

import pytest

from service.admin import vector_repair
from service.admin.reembed import _batch, ReembedResult
from service.storage import transfer
from tests.integration.admin_support import ADMIN_HEADERS, HashEmbedder, populate, unit
from tests.integration.support import assert_error, fast_api, settled
from tests.integration.test_migrations import restart


@pytest.fixture
def api(make_client):
    return fast_api(make_client)


def reembed(api, **body):
    resp = api.post("/admin/reembed", json=body, headers=ADMIN_HEADERS)
    assert resp.status_code == 200, resp.text
    return resp.json()


def models(api, os_client) -> dict[str, str | None]:
    alias = api.app.state.settings.memories_alias
    os_client.indices.refresh(index=alias)
    return {h["_id"]: h["_source"].get("embedding_model") for h in os_client.search(index=alias, body={"size": 100})["hits"]["hits"]}


class Renamed:
    """The same model under another name (its files copied to another folder): new id, same vectors."""

    def __init__(self, inner, name: str):
        self.inner, self.short_name, self.model_name = inner, name, name
        self.dimension, self.backend = inner.dimension, "renamed"

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_only_memories_of_another_model_unless_forced(api, os_client, embedder):
    ids = populate(api)
    assert models(api, os_client)[ids["vec"]] is None  # a client's vector: no model recorded
    body = reembed(api)
    assert body == {"status": "complete", "processed": 1, "failed": 0, "total": 1, "batch_size": 32, "model": embedder.short_name, "dimension": 384,
                    "metadata_preserved": True}
    vector = api.app.state.memories.vectors("default", [ids["vec"]])[ids["vec"]][0]
    assert vector == pytest.approx(embedder.embed_query("A memory stored with its own vector."), abs=1e-5)
    assert set(models(api, os_client).values()) == {embedder.short_name}
    assert reembed(api)["processed"] == 0
    forced = reembed(api, force=True, batch_size=4)
    assert (forced["processed"], forced["total"], forced["batch_size"]) == (6, 6, 4)


def test_a_memory_that_lost_its_vector_in_the_engine_is_reembedded(api, os_client, embedder):
    """An update made in the engine directly (as OpenSearch Dashboards makes one) re-indexes the memory
    from `_source`, which holds no vector: its model is still recorded, its vector is gone."""
    ids = populate(api)
    reembed(api)  # the client's vector: now the model's too, so nothing else is stale
    settled(api)  # enrichment rewrites its memories with their vectors: let it finish first
    alias = api.app.state.settings.memories_alias
    os_client.update(index=alias, id=ids["backup"], body={"doc": {"importance": 0.7}}, refresh=True)
    assert api.app.state.memories.vectors("default", [ids["backup"]])[ids["backup"]][0] is None
    assert models(api, os_client)[ids["backup"]] == embedder.short_name
    body = reembed(api)
    assert (body["processed"], body["total"]) == (1, 1)
    vector = api.app.state.memories.vectors("default", [ids["backup"]])[ids["backup"]][0]
    assert vector == pytest.approx(embedder.embed_documents(["The nightly backup moved to 03:00 UTC."])[0], abs=1e-5)
    assert reembed(api)["processed"] == 0


def test_health_reports_memories_without_a_vector_as_drift_until_reembedded(make_client, os_client):
    """AutoMem's /health compares its graph's memory count with its vector store's: here, the default
    bank's memories with the number of them that have a vector (RECALL_EXCLUDED_TYPES out of both).
    Default settings: enrichment on, and its block of /health reports it."""
    api = make_client(write_refresh="true", enrichment_enabled=True)
    ids = populate(api)
    api.post("/memory", json={"content": "A consolidation summary.", "type": "MetaPattern"})  # internal: counted in neither
    reembed(api)
    settled(api)  # enrichment rewrites its memories with their vectors: let it finish first
    health = api.get("/health").json()
    n = health["memory_count"]
    assert (health["status"], health["vector_count"], health["sync_status"]) == ("healthy", n, "synced") and n == len(ids)
    enrichment = health["enrichment"]
    assert enrichment["status"] == "running" and enrichment["processed"] > 0
    assert (enrichment["queue_depth"], enrichment["pending"], enrichment["inflight"], enrichment["failed"]) == (0, 0, 0, 0)
    alias = api.app.state.settings.memories_alias
    os_client.update(index=alias, id=ids["pg"], body={"doc": {"importance": 0.55}}, refresh=True)  # strips its vector
    health = api.get("/health").json()
    assert (health["status"], health["memory_count"], health["vector_count"], health["sync_status"]) == ("degraded", n, n - 1, "drift_detected")
    assert api.get("/ready").status_code == 200  # a restart would not fix it: orchestrators leave it be
    assert reembed(api)["processed"] == 1
    health = api.get("/health").json()
    assert (health["status"], health["vector_count"], health["sync_status"]) == ("healthy", n, "synced")


def test_the_sync_worker_reembeds_memories_without_a_vector(make_client, os_client, embedder, monkeypatch):
    """Default settings but the interval (AutoMem's sync worker: SYNC_AUTO_REPAIR on): memories stripped
    of their vector get it back at the next check, a page of them at a time; an internal type is left
    out, as AutoMem's repair leaves it."""
    monkeypatch.setattr(vector_repair, "PAGE", 1)  # two stripped memories: two checks, the second soon after the first
    api = make_client(write_refresh="true", enrichment_enabled=True, sync_check_interval_seconds=1)
    ids = populate(api)
    internal = api.post("/memory", json={"content": "A consolidation summary.", "type": "MetaPattern"}).json()["memory_id"]
    reembed(api)
    settled(api)  # enrichment rewrites its memories with their vectors: let it finish first
    alias = api.app.state.settings.memories_alias
    for mid in (ids["pg"], ids["old"], internal):
        os_client.update(index=alias, id=mid, body={"doc": {"importance": 0.55}}, refresh=True)  # strips the vector
    deadline = time.monotonic() + 60
    while api.get("/health").json()["sync_status"] != "synced":
        assert time.monotonic() < deadline, "the sync worker did not repair the drift"
        time.sleep(0.2)
    vectors = api.app.state.memories.vectors("default", [ids["pg"], ids["old"], internal])
    for name, content in (("pg", "Chose PostgreSQL over MongoDB for the primary database."), ("old", "Deployments run on Fridays.")):
        assert vectors[ids[name]][0] == pytest.approx(embedder.embed_documents([content])[0], abs=1e-5)
    assert vectors[internal][0] is None
    assert api.get(f"/memory/{ids['pg']}").json()["memory"]["importance"] == 0.55  # only the vector changed


def test_a_restart_repairs_the_drift_at_once(api, os_client, embedder):
    """Drift found at start-up is repaired then, not an interval (an hour by default) later."""
    ids = populate(api)
    reembed(api)
    os_client.update(index=api.app.state.settings.memories_alias, id=ids["backup"], body={"doc": {"importance": 0.55}}, refresh=True)
    assert api.get("/health").json()["sync_status"] == "drift_detected"
    other = restart(api, embedder)
    try:
        assert other.app.state.settings.sync_check_interval_seconds == 3600
        deadline = time.monotonic() + 60
        while other.get("/health").json()["sync_status"] != "synced":
            assert time.monotonic() < deadline, "the drift found at start-up was not repaired"
            time.sleep(0.2)
    finally:
        other.__exit__(None, None, None)


def test_memories_without_a_vector_are_warned_at_start_until_reembedded(api, os_client, embedder, caplog):
    ids = populate(api)
    reembed(api)
    settled(api)  # enrichment rewrites its memories with their vectors: let it finish first
    alias = api.app.state.settings.memories_alias
    for name in ("pg", "old"):
        os_client.update(index=alias, id=ids[name], body={"doc": {"importance": 0.55}}, refresh=True)  # not a no-op: neither has 0.55

    def warnings() -> list[str]:
        caplog.clear()
        with caplog.at_level("WARNING", logger="engram.reembed"):
            restart(api, embedder, sync_auto_repair=False).__exit__(None, None, None)  # else the repair says it and fixes them
        return [r.getMessage() for r in caplog.records if r.name == "engram.reembed"]

    warned = warnings()
    assert len(warned) == 1 and "banks default (2) have no vector" in warned[0] and "POST /admin/reembed" in warned[0]
    assert reembed(api)["processed"] == 2
    assert warnings() == []


def test_a_changed_model_of_the_same_size_reembeds_everything(api, os_client, embedder):
    ids = populate(api)
    reembed(api)
    hashed = HashEmbedder(384, "hash-384")
    other = restart(api, hashed)
    try:
        assert reembed(other, limit=2)["processed"] == 2  # newest first, as AutoMem
        assert sorted(m for m in models(other, os_client).values()) == [embedder.short_name] * 4 + ["hash-384"] * 2
        assert reembed(other)["processed"] == 4 and reembed(other)["processed"] == 0
        content = other.get(f"/memory/{ids['backup']}").json()["memory"]["content"]
        assert other.app.state.memories.vectors("default", [ids["backup"]])[ids["backup"]][0] == pytest.approx(hashed.embed_query(content), abs=1e-6)
    finally:
        other.__exit__(None, None, None)
    # The same model files under another name: every memory is re-embedded, to the same vectors.
    renamed = restart(api, Renamed(embedder, "all-MiniLM-L6-v2-copy"))
    try:
        assert reembed(renamed)["processed"] == 6
        content = renamed.get(f"/memory/{ids['pg']}").json()["memory"]["content"]
        assert renamed.app.state.memories.vectors("default", [ids["pg"]])[ids["pg"]][0] == pytest.approx(embedder.embed_query(content), abs=1e-5)
    finally:
        renamed.__exit__(None, None, None)


def test_a_concurrent_edit_wins_over_a_stale_reembedding(api):
    store = api.app.state.memories
    mid = api.post("/memory", json={"content": "original text", "embedding": unit(5)}).json()["memory_id"]
    (page,) = list(transfer.scan(store.client, store.alias, query={"ids": {"values": [mid]}}))
    assert api.patch(f"/memory/{mid}", json={"content": "edited text", "embedding": unit(6)}).status_code == 200
    result = ReembedResult("all-MiniLM-L6-v2", 384, 32)
    _batch(store, "default", api.app.state.embedder, page, result)  # embeds "original text", read before the edit
    assert result.processed == 1 and result.failed == 0
    assert store.vectors("default", [mid])[mid][0] == pytest.approx(unit(6))  # the edit's vector stayed


def test_bad_bodies_are_400_and_odd_numbers_fall_back_as_automem(api):
    for body in ({"force": "maybe"}, [1, 2], {"bank": "a b"}):
        assert_error(api.post("/admin/reembed", json=body, headers=ADMIN_HEADERS), 400)
    # AutoMem's int(): a batch_size or limit that is no positive whole number is its default (32; all), never a 400.
    for body, batch in (({"batch_size": 0}, 32), ({"batch_size": "many"}, 32), ({"batch_size": "16"}, 16), ({"limit": 0}, 32),
                        ({"limit": -3}, 32), ({"limit": "ten"}, 32)):
        got = reembed(api, **body)
        assert got["batch_size"] == batch and got["metadata_preserved"] is True, body
        assert bool(got.get("warnings")) == (body not in ({"batch_size": "16"},)), (body, got)
    assert reembed(api)["message"] == "No memories found to reembed"  # nothing stale in an empty store
    assert_error(api.post("/admin/reembed", content=b"{not json", headers={**ADMIN_HEADERS, "Content-Type": "application/json"}), 400, "Malformed JSON")
    assert reembed(api, batch_size=1000)["batch_size"] == 100  # AutoMem caps it at 100
    resp = api.post("/admin/reembed", headers=ADMIN_HEADERS)  # no body at all: the defaults
    assert resp.status_code == 200 and resp.json()["batch_size"] == 32


def test_reembed_command_against_the_engine(api, capsys):
    from service.cli.main import main

    populate(api)
    s = api.app.state.settings
    assert main(["reembed", "--url", s.opensearch_url, "--prefix", s.index_prefix, "--force", "--json", "--no-progress"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["processed"], out["failed"], out["model"]) == (6, 0, api.app.state.embedder.short_name)


def test_a_change_of_model_or_backend_is_warned_at_start_until_reembedded(api, embedder, caplog):
    from service.admin.reembed import stale_vectors

    def other_models(store, model):
        return stale_vectors(store, model)[0]

    populate(api)  # five memories embedded by the configured model, one with a client's vector
    hashed = HashEmbedder(384, "hash-384")  # what a change of EMBEDDING_BACKEND looks like: another model id, same size
    with caplog.at_level("WARNING", logger="engram.reembed"):
        other = restart(api, hashed)
    try:
        warned = [r.getMessage() for r in caplog.records if r.name == "engram.reembed"]
        assert len(warned) == 1 and "banks default (5)" in warned[0] and "hash-384" in warned[0] and "POST /admin/reembed" in warned[0]
        assert other_models(other.app.state.memories, hashed.short_name) == {"default": 5}
        assert other_models(other.app.state.memories, embedder.short_name) == {}
        reembed(other)
        assert other_models(other.app.state.memories, hashed.short_name) == {}
    finally:
        other.__exit__(None, None, None)
    caplog.clear()
    with caplog.at_level("WARNING", logger="engram.reembed"):
        again = restart(api, hashed)
    again.__exit__(None, None, None)
    assert [r for r in caplog.records if r.name == "engram.reembed"] == []
