"""Index migrations: a newer template version or another vector size moves the data into the next
index generation (vectors included) behind one alias swap; the same version only adds fields."""

from __future__ import annotations

import copy

import pytest
from fastapi.testclient import TestClient

from service.main import create_app
from service.storage import bootstrap
from tests.integration.admin_support import ADMIN_HEADERS, HashEmbedder, populate, unit
from tests.integration.support import fast_api, recall


def restart(api, embedder, **overrides) -> TestClient:
    """The same store opened by a new app (a restart), possibly with other settings or another model."""
    settings = api.app.state.settings.model_copy(update=overrides)
    client = TestClient(create_app(settings, embedder=embedder), raise_server_exceptions=False, headers=dict(api.headers))
    client.__enter__()
    return client


def bumped(monkeypatch, field: str = "migrated_field"):
    """The templates as a later version that adds a field (what a mapping change looks like)."""
    original = bootstrap.load_template

    def load(name: str) -> dict:
        raw = copy.deepcopy(original(name))
        raw["version"] += 1
        raw["template"]["mappings"]["properties"][field] = {"type": "keyword"}
        return raw

    monkeypatch.setattr(bootstrap, "load_template", load)


def snapshot_recall(api) -> list[list[tuple[str, float]]]:
    queries = [dict(query="database decision"), dict(query="when do deployments run", state_mode="history"),
               dict(embedding=",".join(map(str, unit(3))), limit=3), dict(query="backup", expand_relations="true")]
    return [[(r["id"], round(r["final_score"], 6)) for r in recall(api, **q)["results"]] for q in queries]


def test_new_index_records_its_template_version(api, os_client):
    alias = api.app.state.settings.memories_alias
    mapping = os_client.indices.get_mapping(index=alias)[f"{alias}-v1"]["mappings"]
    assert mapping["_meta"] == {"engram": {"template": "memories", "version": 1}}
    assert mapping["properties"]["embedding_model"] == {"type": "keyword"}


def test_same_version_adds_new_fields_in_place(make_client, os_client, embedder, monkeypatch):
    api = make_client()
    settings = api.app.state.settings
    index = f"{settings.memories_alias}-v1"
    original = bootstrap.load_template

    def with_extra(name: str) -> dict:
        raw = copy.deepcopy(original(name))
        raw["template"]["mappings"]["properties"]["added_later"] = {"type": "keyword"}
        return raw

    monkeypatch.setattr(bootstrap, "load_template", with_extra)
    again = restart(api, embedder)
    try:
        assert list(os_client.indices.get_alias(name=settings.memories_alias)) == [index]  # no migration
        assert os_client.indices.get_mapping(index=index)[index]["mappings"]["properties"]["added_later"] == {"type": "keyword"}
    finally:
        again.__exit__(None, None, None)


def test_a_changed_existing_field_is_refused_not_ignored(make_client, embedder, monkeypatch):
    from service.errors import EngramError

    api = make_client()
    original = bootstrap.load_template

    def changed(name: str) -> dict:
        raw = copy.deepcopy(original(name))
        if name == "memories":
            raw["template"]["mappings"]["properties"]["importance"] = {"type": "keyword"}
        return raw

    monkeypatch.setattr(bootstrap, "load_template", changed)
    with pytest.raises(EngramError, match="bump the template's version"):
        with TestClient(create_app(api.app.state.settings, embedder=embedder)):
            pass


def test_version_bump_copies_vectors_and_recall_is_unchanged(make_client, os_client, embedder, monkeypatch):
    api = fast_api(make_client)
    settings = api.app.state.settings
    ids = populate(api)
    before = snapshot_recall(api)
    counts = (os_client.count(index=settings.memories_alias)["count"], os_client.count(index=settings.edges_alias)["count"])

    bumped(monkeypatch)
    again = restart(api, embedder)
    try:
        for alias in (settings.memories_alias, settings.edges_alias):
            assert list(os_client.indices.get_alias(name=alias)) == [f"{alias}-v2"]
            old = f"{alias}-v1"
            assert os_client.indices.get_settings(index=old)[old]["settings"]["index"]["blocks"]["write"] == "true"
            new = os_client.indices.get_mapping(index=f"{alias}-v2")[f"{alias}-v2"]["mappings"]
            assert new["_meta"]["engram"]["version"] == 2 and "migrated_field" in new["properties"]
        assert (os_client.count(index=settings.memories_alias)["count"], os_client.count(index=settings.edges_alias)["count"]) == counts
        vector, _, _ = again.app.state.memories.vectors("default", [ids["vec"]])[ids["vec"]]
        assert vector == pytest.approx(unit(3))  # the vector came along, not only _source
        assert snapshot_recall(again) == before
        # The migrated store takes writes, and a second start-up does nothing more.
        assert again.post("/memory", json={"content": "written after the migration"}).status_code == 201
    finally:
        again.__exit__(None, None, None)
    third = restart(api, embedder)
    third.__exit__(None, None, None)
    assert list(os_client.indices.get_alias(name=settings.memories_alias)) == [f"{settings.memories_alias}-v2"]


def test_interrupted_migration_is_started_over(make_client, os_client, embedder, monkeypatch):
    api = fast_api(make_client)
    settings = api.app.state.settings
    populate(api)
    leftover = f"{settings.memories_alias}-v2"
    os_client.indices.create(index=leftover)  # what a killed migration leaves: a target no alias points at
    os_client.index(index=leftover, id="junk", body={"content": "half copied"}, refresh=True)
    bumped(monkeypatch)
    again = restart(api, embedder)
    try:
        assert list(os_client.indices.get_alias(name=settings.memories_alias)) == [leftover]
        assert again.get("/memory/junk").status_code == 404
        assert os_client.count(index=settings.memories_alias)["count"] == 6
    finally:
        again.__exit__(None, None, None)


def test_another_vector_size_reembeds_into_a_new_index(make_client, os_client, embedder):
    api = fast_api(make_client)
    settings = api.app.state.settings
    ids = populate(api)
    small = HashEmbedder(8, "hash-8")
    again = restart(api, small)
    try:
        alias = settings.memories_alias
        assert list(os_client.indices.get_alias(name=alias)) == [f"{alias}-v2"]
        assert os_client.indices.get_mapping(index=alias)[f"{alias}-v2"]["mappings"]["properties"]["embedding"]["dimension"] == 8
        store = again.app.state.memories
        vectors = store.vectors("default", list(ids.values()))
        assert all(len(v) == 8 for v, _, _ in vectors.values())
        content = again.get(f"/memory/{ids['backup']}").json()["memory"]["content"]
        assert vectors[ids["backup"]][0] == pytest.approx(small.embed_query(content), abs=1e-6)
        models = {h["_source"]["embedding_model"] for h in os_client.search(index=alias, body={"size": 20})["hits"]["hits"]}
        assert models == {"hash-8"}
        top = recall(again, embedding=",".join(map(str, small.embed_query("The nightly backup moved to 03:00 UTC."))), limit=1)
        assert top["results"][0]["id"] == ids["backup"]
        # Nothing is left for the re-embedder: every memory carries the configured model's id.
        resp = again.post("/admin/reembed", json={}, headers=ADMIN_HEADERS)
        assert resp.status_code == 200 and resp.json()["processed"] == 0, resp.text
    finally:
        again.__exit__(None, None, None)


def test_an_index_from_a_newer_template_is_used_as_it_is(make_client, os_client, embedder):
    api = make_client()
    settings = api.app.state.settings
    index = f"{settings.memories_alias}-v1"
    os_client.indices.put_mapping(index=index, body={"_meta": {"engram": {"template": "memories", "version": 7}}})
    os_client.indices.put_index_template(name=settings.memories_alias, body={"index_patterns": [f"{settings.memories_alias}-v*"], "version": 7, "template": {}})
    again = restart(api, embedder)
    try:
        assert list(os_client.indices.get_alias(name=settings.memories_alias)) == [index]
        assert os_client.indices.get_index_template(name=settings.memories_alias)["index_templates"][0]["index_template"]["version"] == 7
        assert again.post("/memory", json={"content": "still served"}).status_code == 201
    finally:
        again.__exit__(None, None, None)
