"""Signet's legacy GET /memory/search and GET /memory/similar (spec 004) against the real engine."""

from __future__ import annotations

import pytest

from tests.integration.support import assert_error
from tests.conftest import app_for

LEGACY_FIELDS = {"id", "content", "created_at", "who", "importance", "tags", "type", "pinned", "score"}


@pytest.fixture
def api(request):
    return app_for(request, write_refresh="true")


def put(api, content: str, **fields) -> str:
    resp = api.post("/memory", json={"content": content, **fields})
    assert resp.status_code == 201, resp.text
    return resp.json()["memory_id"]


def ids(resp) -> list[str]:
    assert resp.status_code == 200, resp.text
    return [r["id"] for r in resp.json()["results"]]


def test_keyword_search_filters_and_distinct_authors(api):
    a = put(api, "Grafana dashboards live in the ops folder", who="alice", tags=["ops", "grafana"], importance=0.9, pinned=True, timestamp="2026-05-01T00:00:00Z")
    b = put(api, "Grafana alerts page the on-call engineer", who="bob", tags=["ops"], type="Decision", importance=0.4, timestamp="2026-03-01T00:00:00Z")
    c = put(api, "Lunch is served at noon", who="alice", importance=0.7, timestamp="2026-04-01T00:00:00Z")
    got = api.get("/memory/search", params={"q": "grafana"})
    assert set(ids(got)) == {a, b}
    row = got.json()["results"][0]
    assert set(row) == LEGACY_FIELDS and row["score"] > 0
    assert {r["id"]: (r["who"], r["tags"], r["pinned"]) for r in got.json()["results"]}[a] == ("alice", "ops,grafana", True)
    table = [
        ({"q": "grafana", "who": "bob"}, [b]),
        ({"q": "grafana", "type": "decision"}, [b]),
        ({"q": "grafana", "tags": "ops,grafana"}, [a]),
        ({"q": "grafana", "pinned": "1"}, [a]),
        ({"q": "grafana", "importance_min": "0.5"}, [a]),
        ({"q": "grafana", "since": "2026-04-01T00:00:00Z"}, [a]),
        ({"q": "grafana", "limit": "1"}, None),
    ]
    for params, expected in table:
        found = ids(api.get("/memory/search", params=params))
        assert (found == expected) if expected is not None else len(found) == 1, params
    # filters alone: pinned first (score 1.0), then importance decayed by age
    listing = api.get("/memory/search", params={"who": "alice"})
    assert ids(listing) == [a, c] and listing.json()["results"][0]["score"] == 1.0
    assert 0 < listing.json()["results"][1]["score"] < 0.7
    assert ids(api.get("/memory/search", params={"importance_min": "0.3"}))[0] == a
    assert set(ids(api.get("/memory/search", params={"importance_min": "0"}))) == {a, b, c}  # 0 is a filter too
    assert api.get("/memory/search").json() == {"results": []}  # neither a query nor a filter
    assert api.get("/memory/search", params={"distinct": "who", "q": "ignored", "who": "nobody"}).json() == {"values": ["alice", "bob"]}
    assert api.get("/memory/search", params={"distinct": "who"}, headers={"X-Bank": "empty"}).json() == {"values": []}


def test_legacy_search_default_limits(api):
    resp = api.post("/memory/batch", json={"memories": [{"content": f"Invoice {i} was paid", "who": "billing"} for i in range(60)]})
    assert resp.status_code == 201
    assert len(ids(api.get("/memory/search", params={"q": "invoice paid"}))) == 20
    assert len(ids(api.get("/memory/search", params={"who": "billing"}))) == 50
    assert len(ids(api.get("/memory/search", params={"who": "billing", "limit": "55"}))) == 55


def test_archived_and_superseded_memories_are_left_out(api):
    old = put(api, "The deploy window is Tuesday")
    new = put(api, "The deploy window is Thursday", supersedes=old)
    put(api, "The deploy window was Monday once", archived=True)
    assert ids(api.get("/memory/search", params={"q": "deploy window"})) == [new]


def test_similar_memories(api):
    anchor = put(api, "Postgres is the primary database for billing", type="Decision")
    near = put(api, "The billing database runs on Postgres 16", type="Decision")
    far = put(api, "The office plants are watered on Fridays")
    other_type = put(api, "Billing data lives in a Postgres cluster", type="Insight")
    got = api.get("/memory/similar", params={"id": anchor})
    found = ids(got)
    assert anchor not in found and set(found) == {near, far, other_type}
    assert found.index(far) == 2  # the unrelated memory is the farthest
    row = got.json()["results"][0]
    assert set(row) == {"id", "content", "type", "tags", "score", "confidence", "created_at"} and isinstance(row["tags"], list)
    scores = [r["score"] for r in got.json()["results"]]
    assert scores == sorted(scores, reverse=True) and -1 <= scores[-1] < scores[0] <= 1
    assert ids(api.get("/memory/similar", params={"id": anchor, "k": 1})) == [found[0]]
    assert ids(api.get("/memory/similar", params={"id": anchor, "type": "decision"})) == [near]
    assert_error(api.get("/memory/similar", params={"id": "missing-id"}), 404, "not found")
    assert_error(api.get("/memory/similar"), 400, "id is required")
    assert_error(api.get("/memory/similar", params={"id": anchor}, headers={"X-Bank": "other"}), 404)


@pytest.mark.own_app("reads the default bank's store directly")
def test_similar_is_404_without_a_stored_vector(api, os_client):
    mid = put(api, "A memory whose vector is gone")
    settings = api.app.state.settings
    source = api.app.state.memories.get("default", mid)
    os_client.index(index=settings.memories_alias, id=mid, body={k: v for k, v in source.items() if k != "embedding"}, refresh=True)
    assert_error(api.get("/memory/similar", params={"id": mid}), 404, "no stored embedding")
