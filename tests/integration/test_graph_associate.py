"""POST /associate against the real engine: validation, 201 / 207, idempotent ids, deletion of edges."""

from __future__ import annotations

import pytest

from tests.integration.support import assert_error, engine_requests, link, mem
from tests.conftest import app_for


@pytest.fixture
def api(request):
    return app_for(request, write_refresh="true")


def edge_doc(api, os_client, edge_id):
    return os_client.get(index=api.app.state.settings.edges_alias, id=edge_id)["_source"]


def test_single_association_echoes_type_strength_and_properties(api, os_client):
    a, b = mem(api, "Prefer tabs"), mem(api, "Prefer spaces")
    resp = api.post("/associate", json={"memory1_id": a, "memory2_id": b, "type": "prefers_over", "strength": 0.9,
                                         "context": "python", "reason": "PEP 8", "confidence": 0.2})
    assert resp.status_code == 201
    assert resp.json() == {
        "status": "success", "message": f"Association created between {a} and {b}", "memory1_id": a, "memory2_id": b,
        "relation_type": "PREFERS_OVER", "strength": 0.9, "context": "python", "reason": "PEP 8",
    }
    doc = edge_doc(api, os_client, f"{a}|PREFERS_OVER|{b}")
    assert doc["source_id"] == a and doc["target_id"] == b and doc["strength"] == 0.9
    assert doc["properties"] == {"context": "python", "reason": "PEP 8"}  # confidence is not a PREFERS_OVER property
    assert doc["created_at"] == doc["updated_at"]
    # Defaults: RELATES_TO at 0.5 (AutoMem).
    assert api.post("/associate", json={"memory1_id": a, "memory2_id": b}).json()["relation_type"] == "RELATES_TO"


@pytest.mark.own_app('GET /health counts the default bank')
def test_reposting_updates_the_same_edge(api, os_client):
    a, b = mem(api, "one"), mem(api, "two")
    link(api, a, b, "REINFORCES", 0.3, observations=1)
    first = edge_doc(api, os_client, f"{a}|REINFORCES|{b}")
    link(api, a, b, "REINFORCES", 0.7, observations=4)
    again = edge_doc(api, os_client, f"{a}|REINFORCES|{b}")
    assert api.get("/health").json()["edge_count"] == 1
    assert again["strength"] == 0.7 and again["properties"] == {"observations": 4}
    assert again["created_at"] == first["created_at"] and again["updated_at"] > first["updated_at"]


@pytest.mark.parametrize(
    ("body", "code", "fragment"),
    [
        ({"type": "SIMILAR_TO"}, 400, "system relationship type"),
        ({"type": "LOVES"}, 400, "unknown relationship type"),
        ({"strength": 1.01}, 400, "between 0 and 1"),
        ({"strength": "strong"}, 400, "number"),
        ({"self": True}, 400, "itself"),
        ({"type": "EVOLVED_INTO", "confidence": 7}, 400, "confidence"),
        # JSON's integers are unbounded; one too large for a float was a 500 (fuzz seed 20261218).
        ({"type": "EVOLVED_INTO", "confidence": 10**400}, 400, "confidence"),
        ({"strength": 10**400}, 400, "strength"),
        ({"missing": True}, 404, "not found"),
        ({"memory2_id": None}, 400, "required"),
    ],
)
def test_single_association_errors(api, body, code, fragment):
    a, b = mem(api, "alpha"), mem(api, "beta")
    payload = {"memory1_id": a, "memory2_id": b, **{k: v for k, v in body.items() if k not in ("self", "missing")}}
    if body.get("self"):
        payload["memory2_id"] = a
    if body.get("missing"):
        payload["memory2_id"] = "no-such-memory"
    assert_error(api.post("/associate", json=payload), code, fragment)
    assert api.get("/health").json()["edge_count"] == 0


def test_batch_all_succeed_is_201(api):
    a, b, c = mem(api, "a"), mem(api, "b"), mem(api, "c")
    resp = api.post("/associate", json={"associations": [
        {"memory1_id": a, "memory2_id": b, "type": "LEADS_TO", "strength": 0.6},
        {"memory1_id": b, "memory2_id": c},
    ]})
    assert resp.status_code == 201
    assert resp.json() == {
        "status": "success", "created_count": 2, "failed_count": 0,
        "succeeded": [
            {"index": 0, "memory1_id": a, "memory2_id": b, "relation_type": "LEADS_TO", "strength": 0.6},
            {"index": 1, "memory1_id": b, "memory2_id": c, "relation_type": "RELATES_TO", "strength": 0.5},
        ],
        "failed": [], "summary": "2/2 associations created successfully",
    }


@pytest.mark.own_app('GET /health counts the default bank')
def test_batch_with_failures_is_207_and_keeps_the_good_items(api):
    a, b = mem(api, "a"), mem(api, "b")
    resp = api.post("/associate", json={"associations": [
        {"memory1_id": a, "memory2_id": b, "type": "PART_OF", "role": "step"},
        {"memory1_id": a, "memory2_id": "ghost"},
        {"memory1_id": a, "memory2_id": a},
        {"memory1_id": b, "memory2_id": a, "type": "DISCOVERED"},
        "not an object",
    ]})
    assert resp.status_code == 207
    body = resp.json()
    assert (body["status"], body["created_count"], body["failed_count"]) == ("partial_success", 1, 4)
    assert body["succeeded"] == [{"index": 0, "memory1_id": a, "memory2_id": b, "relation_type": "PART_OF", "strength": 0.5, "role": "step"}]
    assert [(f["index"], f["reason"]) for f in body["failed"]] == [
        (1, "Memory ghost not found"),
        (2, "Cannot associate a memory with itself"),
        (3, "DISCOVERED is a system relationship type and cannot be created; use one of RELATES_TO, LEADS_TO, OCCURRED_BEFORE, "
            "PREFERS_OVER, EXEMPLIFIES, CONTRADICTS, REINFORCES, INVALIDATED_BY, EVOLVED_INTO, DERIVED_FROM, PART_OF"),
        (4, "each association must be an object"),
    ]
    assert body["failed"][0]["memory2_id"] == "ghost"
    assert body["summary"] == "1/5 associations created successfully"
    assert api.get("/health").json()["edge_count"] == 1


@pytest.mark.parametrize(
    ("payload", "fragment"),
    [
        ({"associations": []}, "non-empty"),
        ({"associations": "x"}, "non-empty"),
        ({"associations": [{"memory1_id": "a", "memory2_id": "b"}] * 501}, "maximum is 500"),
    ],
)
def test_batch_shape_errors(api, payload, fragment):
    assert_error(api.post("/associate", json=payload), 400, fragment)


def test_body_must_be_an_object(api):
    assert_error(api.post("/associate", json=[1, 2]), 400)
    assert_error(api.post("/associate", content=b"{", headers={"Content-Type": "application/json"}), 400)


def test_batch_of_500_is_five_engine_requests(api):
    """Existence check, edge bulk, the superseded memories' vectors, supersession bulk, the ends checked
    again — whatever the batch size."""
    ids = [mem(api, f"m{i}") for i in range(3)]
    items = [{"memory1_id": ids[i % 3], "memory2_id": ids[(i + 1) % 3], "type": "EVOLVED_INTO" if i % 2 else "RELATES_TO"} for i in range(500)]
    with engine_requests(api) as calls:
        resp = api.post("/associate", json={"associations": items})
    assert resp.status_code == 201 and resp.json()["created_count"] == 500
    assert [call.split("/")[-1] for call in calls] == ["_mget", "_bulk", "_search", "_bulk", "_mget"]


@pytest.mark.own_app('GET /health counts the default bank')
def test_deleting_a_memory_deletes_its_edges(api):
    a, b, c = mem(api, "a"), mem(api, "b"), mem(api, "c")
    link(api, a, b)
    link(api, c, a, "LEADS_TO")
    link(api, b, c)
    assert api.get("/health").json()["edge_count"] == 3
    assert api.delete(f"/memory/{a}").status_code == 200
    assert api.get("/health").json()["edge_count"] == 1
    assert [r["id"] for r in api.get(f"/memories/{b}/related").json()["related_memories"]] == [c]
