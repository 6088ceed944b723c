"""Index templates: versioned indices behind aliases, idempotent start-up, dimension = the model's."""

from __future__ import annotations

import uuid

from service.storage.bootstrap import drop_prefix, ensure_indices, load_template


def test_indices_behind_aliases_with_model_dimension(api, os_client, embedder):
    settings = api.app.state.settings
    aliases = os_client.indices.get_alias(name=settings.memories_alias)
    assert list(aliases) == [f"{settings.memories_alias}-v1"]
    mapping = os_client.indices.get_mapping(index=settings.memories_alias)[f"{settings.memories_alias}-v1"]["mappings"]
    vector = mapping["properties"]["embedding"]
    assert vector["dimension"] == embedder.dimension == 384
    assert vector["method"]["engine"] == "lucene" and vector["method"]["space_type"] == "cosinesimil"
    index_settings = os_client.indices.get_settings(index=settings.memories_alias)[f"{settings.memories_alias}-v1"]["settings"]["index"]
    assert index_settings["knn"] == "true"
    assert list(os_client.indices.get_alias(name=settings.edges_alias)) == [f"{settings.edges_alias}-v1"]


def test_template_file_default_dimension_matches_default_model(embedder):
    raw = load_template("memories")
    assert raw["template"]["mappings"]["properties"]["embedding"]["dimension"] == embedder.dimension
    assert raw["template"]["mappings"]["properties"]["embedding"]["method"]["engine"] == "lucene"


def test_startup_is_idempotent_and_keeps_data(make_client, engine_url, embedder):
    from fastapi.testclient import TestClient

    from service.main import create_app

    api = make_client()
    memory_id = api.post("/memory", json={"content": "kept across restarts"}).json()["memory_id"]
    settings = api.app.state.settings
    with TestClient(create_app(settings, embedder=embedder), headers=dict(api.headers)) as again:
        assert again.get(f"/memory/{memory_id}").status_code == 200


def test_dimension_mismatch_without_a_model_to_reembed_refuses(make_client, os_client):
    # The service passes its embedder and migrates (tests/integration/test_migrations.py); a caller
    # that has no model to fill the new vectors with is refused rather than left with a broken mapping.
    import pytest

    from service.errors import EngramError
    from service.storage.bootstrap import ensure_indices

    settings = make_client().app.state.settings
    with pytest.raises(EngramError, match="384-dimensional"):
        ensure_indices(os_client, settings, 768)
    assert list(os_client.indices.get_alias(name=settings.memories_alias)) == [f"{settings.memories_alias}-v1"]


def test_drop_prefix_leaves_no_index_or_template_of_the_prefix(engine_url, os_client, embedder):
    from service.config import Settings

    prefix = f"t{uuid.uuid4().hex[:10]}"
    neighbour = f"{prefix}x"  # a prefix that merely starts with the same letters stays
    for name in (prefix, neighbour):
        ensure_indices(os_client, Settings(opensearch_url=engine_url, index_prefix=name, recall_log_enabled=True), embedder.dimension)

    def stored(name: str) -> tuple[set[str], set[str]]:
        indices = set(os_client.indices.get(index=f"{name}-*", ignore=[404]).keys()) - {"error", "status"}
        templates = {t["name"] for t in os_client.indices.get_index_template(name=f"{name}-*", ignore=[404]).get("index_templates", [])}
        return indices, templates

    before = stored(prefix)
    assert len(before[0]) == len(before[1]) == 7, before  # memories, edges, consolidation, recall log and ledger, banks, operations
    drop_prefix(os_client, prefix)
    assert stored(prefix) == (set(), set())
    assert all(len(kind) == 7 for kind in stored(neighbour))
    drop_prefix(os_client, neighbour)
    drop_prefix(os_client, prefix)  # nothing left: still no error
