"""The memory write API (spec 003: Memory) against the real engine: CRUD, batch, validation, auth."""

from __future__ import annotations

import pytest

from tests.conftest import TOKEN
from tests.integration.support import assert_error


def store(api, **fields):
    resp = api.post("/memory", json={"content": "a memory", **fields})
    assert resp.status_code == 201, resp.text
    return resp.json()


def test_store_get_patch_delete_roundtrip(api):
    created = store(api, content="Chose PostgreSQL over MongoDB", tags=["project:alpha/db", "Decision-Log"], importance=0.8,
                    metadata={"project": "alpha", "entities": {"people": ["Sarah"]}}, timestamp="2025-01-15T10:30:00Z")
    assert created["type"] == "Decision" and created["confidence"] == pytest.approx(0.6)  # classifier: "chose X over"
    memory = api.get(f"/memory/{created['memory_id']}").json()["memory"]
    assert memory["id"] == created["memory_id"]
    assert memory["content"] == "Chose PostgreSQL over MongoDB"
    assert memory["tags"] == ["project:alpha/db", "Decision-Log"]
    assert memory["tag_prefixes"] == ["project", "project:alpha", "project:alpha:db", "decision-log"]
    assert memory["importance"] == 0.8
    assert memory["timestamp"] == "2025-01-15T10:30:00+00:00"
    assert memory["entities"] == ["sarah"]
    assert "embedding" not in memory

    patched = api.patch(f"/memory/{created['memory_id']}", json={"tags": ["slack:general"], "content": "Chose SQLite after all"})
    assert patched.status_code == 200
    memory = api.get(f"/memory/{created['memory_id']}").json()["memory"]
    assert memory["content"] == "Chose SQLite after all"
    assert memory["tag_prefixes"] == ["slack", "slack:general"]
    assert memory["updated_at"] > memory["timestamp"]
    # New content is re-embedded: recall finds it by the new meaning.
    top = api.get("/recall", params={"query": "SQLite decision"}).json()["results"][0]
    assert top["id"] == created["memory_id"] and top["score_components"]["vector"] > 0.3

    assert api.delete(f"/memory/{created['memory_id']}").json() == {"status": "success", "memory_id": created["memory_id"]}
    assert_error(api.get(f"/memory/{created['memory_id']}"), 404, "not found")
    assert_error(api.delete(f"/memory/{created['memory_id']}"), 404)


def test_defaults_types_and_confidence_rules(api):
    plain = store(api, content="The sky was grey")
    assert (plain["type"], plain["confidence"], plain["importance"]) == ("Context", 0.3, 0.5)
    typed = store(api, type="decision")  # alias -> canonical, confidence 0.9 when only type is given
    assert (typed["type"], typed["confidence"]) == ("Decision", 0.9)
    both = store(api, type="Insight", confidence=0.42)
    assert (both["type"], both["confidence"]) == ("Insight", 0.42)
    custom = store(api, type="Recipe")
    assert custom["type"] == "Recipe" and "Unknown memory type 'Recipe'" in custom["warnings"][0]


@pytest.mark.own_app('GET /health counts the default bank')
def test_client_id_makes_writes_idempotent(api):
    first = store(api, id="import-42", content="first version")
    again = store(api, id="import-42", content="second version")
    assert first["memory_id"] == again["memory_id"] == "import-42"
    assert api.get("/memory/import-42").json()["memory"]["content"] == "second version"
    assert api.get("/health").json()["memory_count"] == 1


@pytest.mark.own_app('GET /health counts the default bank')
def test_batch_in_order_and_validated_all_or_nothing(api):
    resp = api.post("/memory/batch", json={"memories": [{"content": f"note {i}", "tags": ["batch"]} for i in range(5)]})
    assert resp.status_code == 201
    body = resp.json()
    assert body["status"] == "success" and body["count"] == 5 and len(body["memory_ids"]) == 5
    contents = [api.get(f"/memory/{i}").json()["memory"]["content"] for i in body["memory_ids"]]
    assert contents == [f"note {i}" for i in range(5)]

    bad = api.post("/memory/batch", json={"memories": [{"content": "fine"}, {"content": "bad", "embedding": [0.1, 0.2]}]})
    assert_error(bad, 400, "memories[1].", "exactly 384 values")
    assert api.get("/health").json()["memory_count"] == 5  # nothing from the rejected batch was stored
    assert_error(api.post("/memory/batch", json={"memories": []}), 400)
    assert_error(api.post("/memory/batch", json={"memories": [{"content": "x"}] * 501}), 400)


def test_batch_reports_failed_items_never_drops_them(api, os_client):
    # Block writes on the index to force per-item bulk failures, then check they are all reported.
    alias = api.app.state.settings.memories_alias
    os_client.indices.put_settings(index=alias, body={"index.blocks.write": True})
    try:
        resp = api.post("/memory/batch", json={"memories": [{"content": "a"}, {"content": "b"}]})
    finally:
        os_client.indices.put_settings(index=alias, body={"index.blocks.write": False})
    assert resp.status_code == 207, resp.text
    body = resp.json()
    assert body["status"] == "partial_success" and body["count"] == 0
    assert [f["index"] for f in body["failed"]] == [0, 1]
    assert all("blocked" in f["reason"] for f in body["failed"])
    assert body["memory_ids"] == [None, None]


def test_explicit_embedding_is_used_and_length_checked(api):
    vector = [0.0] * 384
    vector[0] = 1.0
    created = store(api, content="vector given", embedding=vector)
    hits = api.get("/recall", params={"embedding": ",".join(map(str, vector)), "limit": 1}).json()["results"]
    assert hits[0]["id"] == created["memory_id"]
    assert hits[0]["score_components"]["vector"] == pytest.approx(1.0, abs=1e-5)
    assert_error(api.post("/memory", json={"content": "x", "embedding": [1.0, 2.0]}), 400, "exactly 384 values")


@pytest.mark.parametrize(
    ("payload", "fragment"),
    [
        ({}, "content"),
        ({"content": ""}, "content must be a non-empty string"),
        ({"content": "   "}, "content must be a non-empty string"),
        ({"content": "x", "importance": 1.5}, "importance"),
        ({"content": "x", "importance": "high"}, "importance"),
        ({"content": "x", "confidence": -0.1}, "confidence"),
        ({"content": "x", "type": ""}, "type must be a non-empty string"),
        ({"content": "x", "timestamp": "yesterday-ish"}, "timestamp: 'yesterday-ish' is not a valid ISO 8601"),
        ({"content": "x", "t_invalid": "2025-13-45"}, "t_invalid: '2025-13-45' is not a valid ISO 8601"),
        ({"content": "x", "metadata": "not an object"}, "metadata"),
        ({"content": "x", "tags": [{"a": 1}]}, "tags"),
        ({"content": "x", "id": "bad id with spaces"}, "id"),
    ],
)
def test_bad_input_is_a_clear_400(api, payload, fragment):
    assert_error(api.post("/memory", json=payload), 400, fragment)


def test_content_limit_and_malformed_json(make_client):
    api = make_client(memory_content_max=50)
    assert_error(api.post("/memory", json={"content": "y" * 51}), 400, "maximum is 50")
    assert api.post("/memory", json={"content": "y" * 50}).status_code == 201
    assert_error(api.post("/memory", content=b'{"content": "x",', headers={"Content-Type": "application/json"}), 400, "Malformed JSON")
    assert_error(api.post("/memory", content=b"[1, 2]", headers={"Content-Type": "application/json"}), 400)


def test_unknown_or_malformed_ids_are_404(api):
    for path in ("/memory/does-not-exist", "/memory/bad%20id", "/memory/" + "z" * 300):
        assert_error(api.get(path), 404)
        assert_error(api.patch(path, json={"importance": 0.1}), 404)
        assert_error(api.delete(path), 404)


def test_auth_schemes(api):
    url = "/memory"
    no_auth = {"Authorization": ""}
    assert_error(api.post(url, json={"content": "x"}, headers=no_auth), 401, "API token")
    assert_error(api.post(url, json={"content": "x"}, headers={"Authorization": "Bearer wrong"}), 401)
    assert api.post(url, json={"content": "x"}, headers={"Authorization": "", "X-API-Key": TOKEN}).status_code == 201
    assert api.post(f"{url}?api_key={TOKEN}", json={"content": "x"}, headers=no_auth).status_code == 201
    assert api.get("/health", headers=no_auth).status_code == 200  # /health is open
    assert_error(api.get("/recall", params={"query": "x"}, headers=no_auth), 401)


def test_service_refuses_to_start_without_token(engine_url, embedder):
    from fastapi.testclient import TestClient

    from service.config import Settings
    from service.main import ConfigurationError, create_app

    app = create_app(Settings(opensearch_url=engine_url, automem_api_token=None, index_prefix="never"), embedder=embedder)
    with pytest.raises(ConfigurationError, match="AUTOMEM_API_TOKEN"):
        with TestClient(app):
            pass


@pytest.mark.own_app('GET /health counts the default bank')
def test_health_reports_engine_and_model(api):
    store(api)
    store(api, type="MetaPattern")  # internal artifacts are not counted (RECALL_EXCLUDED_TYPES)
    health = api.get("/health").json()
    assert health["status"] == "healthy"
    assert health["memory_count"] == 1 and health["edge_count"] == 0
    assert health["opensearch"]["connected"] is True and health["opensearch"]["cluster_status"] in ("green", "yellow")
    assert health["vector_size"] == 384 and health["embedding"]["vector_size"] == 384


def test_health_and_ready_answer_head_probes(api):
    for path in ("/health", "/ready"):
        resp = api.head(path)
        assert resp.status_code == 200, path
        assert resp.headers["content-type"].startswith("application/json")
    assert "head" not in api.get("/openapi.json").json()["paths"]["/health"]


def test_engine_unreachable_is_503_with_message(make_client, os_client):
    api = make_client()
    # Point the running app's client at a closed port: every engine call now fails to connect.
    from service.storage.client import make_client as make_os_client

    state = api.app.state
    dead = make_os_client("http://127.0.0.1:9", state.settings)
    state.memories.client = dead
    state.writer.store.client = dead
    resp = api.post("/memory", json={"content": "x"})
    assert_error(resp, 503, "OpenSearch is unreachable")
    assert_error(api.get("/memory/anything"), 503, "unreachable")
    health = api.get("/health")
    assert health.status_code == 200  # health still answers
