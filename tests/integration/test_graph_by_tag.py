"""GET and DELETE /memory/by-tag against the real engine: matching, order, paging, deletion with edges."""

from __future__ import annotations

import pytest

from tests.integration.support import assert_error, link, mem, settle_accesses
from tests.conftest import app_for


@pytest.fixture
def api(request):
    return app_for(request, write_refresh="true")


def page(api, **params):
    resp = api.get("/memory/by-tag", params=params)
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_any_match_case_insensitive_exact_and_ordered(api):
    low = mem(api, "low", tags=["Project"], importance=0.2, timestamp="2025-01-01T00:00:00Z")
    high_old = mem(api, "high old", tags=["project"], importance=0.9, timestamp="2025-01-01T00:00:00Z")
    high_new = mem(api, "high new", tags=["other", "PROJECT"], importance=0.9, timestamp="2025-02-01T00:00:00Z")
    other = mem(api, "other only", tags=["other"], importance=0.5)
    mem(api, "prefix is not exact", tags=["project:alpha"], importance=1.0)
    body = page(api, tags="project")
    assert [m["id"] for m in body["memories"]] == [high_new, high_old, low]
    assert (body["status"], body["tags"], body["count"], body["limit"], body["offset"], body["has_more"]) == ("success", ["project"], 3, 20, 0, False)
    assert body["memories"][0]["content"] == "high new" and "embedding" not in body["memories"][0]
    both = page(api, tags="Other,project")
    assert [m["id"] for m in both["memories"]] == [high_new, high_old, other, low] and both["tags"] == ["Other", "project"]
    repeated = api.get("/memory/by-tag", params=[("tags", "other"), ("tags", "project")]).json()
    assert repeated["count"] == 4
    # Enumeration records the access, as AutoMem does (off the request path).
    settle_accesses(api)
    assert api.get(f"/memory/{low}").json()["memory"]["last_accessed"] is not None


def test_paging(api):
    made = [mem(api, f"item {i}", tags=["pg"], importance=round(0.9 - i * 0.1, 2)) for i in range(5)]
    first = page(api, tags="pg", limit=2)
    second = page(api, tags="pg", limit=2, offset=2)
    last = page(api, tags="pg", limit=2, offset=4)
    assert [m["id"] for m in first["memories"] + second["memories"] + last["memories"]] == made
    assert (first["has_more"], second["has_more"], last["has_more"], last["count"]) == (True, True, False, 1)
    assert page(api, tags="pg", offset=10)["memories"] == []
    assert page(api, tags="pg", limit=1000)["limit"] == 200  # clamped (AutoMem)


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({}, "tags: Field required"),
        ({"tags": " , "}, "tags"),
        ({"tags": "x", "limit": 0}, "limit"),
        ({"tags": "x", "limit": "many"}, "integer"),
        ({"tags": "x", "offset": -1}, "offset"),
        ({"tags": "x", "offset": 9999, "limit": 5}, "10000"),
    ],
)
def test_bad_requests(api, params, fragment):
    assert_error(api.get("/memory/by-tag", params=params), 400, fragment)


def test_by_tag_is_not_taken_for_a_memory_id(api):
    # /memory/by-tag must reach this router, not GET /memory/{memory_id}
    assert_error(api.get("/memory/by-tag"), 400, "tags")
    assert_error(api.delete("/memory/by-tag"), 400, "tags")


@pytest.mark.own_app('GET /health counts the default bank')
def test_delete_by_tag_removes_memories_and_their_edges(api):
    doomed = [mem(api, f"temp {i}", tags=["Temp"]) for i in range(3)]
    keep = mem(api, "keeper", tags=["keep"])
    old = mem(api, "superseded by a temp memory", tags=["keep"])
    link(api, keep, doomed[0])
    link(api, doomed[1], doomed[2], "LEADS_TO")
    link(api, old, doomed[2], "EVOLVED_INTO")
    link(api, keep, old)
    assert api.get("/health").json()["edge_count"] == 4
    resp = api.delete("/memory/by-tag", params={"tags": "temp"})
    assert resp.status_code == 200
    assert resp.json() == {
        "status": "success", "tags": ["temp"], "deleted_count": 3, "matched_count": 3, "edges_deleted": 3, "supersessions_cleared": 1,
    }
    assert api.get("/health").json()["edge_count"] == 1
    assert all(api.get(f"/memory/{d}").status_code == 404 for d in doomed)
    assert page(api, tags="keep")["count"] == 2
    # The memory a deleted one superseded is current again.
    assert "superseded_by" not in api.get(f"/memory/{old}").json()["memory"]
    assert api.delete("/memory/by-tag", params={"tags": "temp"}).json()["deleted_count"] == 0


@pytest.mark.own_app("blocks writes on the app's memories index")
def test_deletes_the_engine_refuses_are_reported_never_counted(api, os_client):
    """A delete the engine refuses (here a write block on the memories index) is a 503 naming it,
    never a 200 that counts it as not matched; nothing is left half-done that a retry cannot finish."""
    doomed = [mem(api, f"temp {i}", tags=["Temp"]) for i in range(3)]
    keep = mem(api, "keeper", tags=["keep"])
    link(api, keep, doomed[0])
    alias = api.app.state.settings.memories_alias
    os_client.indices.put_settings(index=alias, body={"index.blocks.write": True})
    try:
        refused = api.delete("/memory/by-tag", params={"tags": "temp"})
    finally:
        os_client.indices.put_settings(index=alias, body={"index.blocks.write": None})
    assert_error(refused, 503)
    assert "3 of 3 deletes failed" in refused.json()["message"] and "retrying is safe" in refused.json()["message"]
    assert all(api.get(f"/memory/{d}").status_code == 200 for d in doomed)
    again = api.delete("/memory/by-tag", params={"tags": "temp"})
    assert again.status_code == 200 and again.json()["deleted_count"] == 3 and again.json()["edges_deleted"] == 1
