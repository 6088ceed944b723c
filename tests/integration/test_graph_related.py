"""GET /memories/{id}/related against the real engine: depths 1-3, both directions, types, limits."""

from __future__ import annotations

import pytest

from tests.integration.support import assert_error, link, mem
from tests.conftest import app_for


@pytest.fixture
def api(request):
    return app_for(request, write_refresh="true")


@pytest.fixture
def chain(api):
    """a -> b <- c -> d, plus a SIMILAR_TO edge a -> s written as a system edge would be."""
    a = mem(api, "start", importance=0.5)
    b = mem(api, "one hop", importance=0.2)
    c = mem(api, "two hops", importance=0.9)
    d = mem(api, "three hops", importance=0.7)
    s = mem(api, "similar", importance=1.0)
    link(api, a, b, "LEADS_TO", 0.8)
    link(api, c, b, "PART_OF", 0.4)
    link(api, c, d, "RELATES_TO", 0.6)
    api.app.state.edges.upsert_many("default", [{"source_id": a, "target_id": s, "type": "SIMILAR_TO", "strength": 0.95}], "2025-01-01T00:00:00+00:00")
    return a, b, c, d, s


def related(api, memory_id, **params):
    resp = api.get(f"/memories/{memory_id}/related", params=params)
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_depths_one_to_three(api, chain):
    a, b, c, d, s = chain
    one = related(api, a)
    assert (one["count"], one["max_depth"], one["limit"]) == (1, 1, 5)
    first = one["related_memories"][0]
    assert (first["id"], first["content"], first["depth"], first["path"]) == (b, "one hop", 1, [a, b])
    assert first["relation"] == {"type": "LEADS_TO", "strength": 0.8, "source_id": a, "target_id": b, "direction": "outgoing"}
    assert "embedding" not in first
    two = related(api, a, max_depth=2)
    # importance desc (AutoMem's order), not depth
    assert [(m["id"], m["depth"]) for m in two["related_memories"]] == [(c, 2), (b, 1)]
    assert two["related_memories"][0]["path"] == [a, b, c]
    assert two["related_memories"][0]["relation"]["direction"] == "incoming"  # c -> b, walked backwards
    three = related(api, a, max_depth=3)
    assert [(m["id"], m["depth"]) for m in three["related_memories"]] == [(c, 2), (d, 3), (b, 1)]
    assert three["related_memories"][1]["path"] == [a, b, c, d]


@pytest.mark.own_app("writes a system edge through the default bank's store")
def test_relationship_types_and_system_opt_in(api, chain):
    a, b, c, d, s = chain
    assert related(api, a, max_depth=3)["relationship_types"][0] == "RELATES_TO"
    assert s not in [m["id"] for m in related(api, a, max_depth=3)["related_memories"]]
    only = related(api, a, relationship_types="similar_to,LEADS_TO", max_depth=3)
    assert only["relationship_types"] == ["SIMILAR_TO", "LEADS_TO"]
    assert [m["id"] for m in only["related_memories"]] == [s, b]  # PART_OF not followed: c, d unreachable
    repeated = api.get(f"/memories/{a}/related", params=[("relationship_types", "PART_OF"), ("relationship_types", "LEADS_TO"), ("max_depth", "2")])
    assert [m["id"] for m in repeated.json()["related_memories"]] == [c, b]


def test_limit_and_clamp(api, chain):
    a = chain[0]
    assert [m["depth"] for m in related(api, a, max_depth=3, limit=1)["related_memories"]] == [2]
    assert related(api, a, limit=500)["limit"] == 200


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"max_depth": 4}, "max_depth: Input should be less than or equal to 3"),
        ({"max_depth": 0}, "max_depth: Input should be greater than or equal to 1"),
        ({"max_depth": "deep"}, "integer"),
        ({"limit": 0}, "limit: Input should be greater than or equal to 1"),
        ({"relationship_types": "KNOWS"}, "Invalid relationship_types: KNOWS"),
    ],
)
def test_bad_parameters(api, chain, params, fragment):
    assert_error(api.get(f"/memories/{chain[0]}/related", params=params), 400, fragment)


def test_unknown_memory_is_404_and_no_edges_is_empty(api):
    assert_error(api.get("/memories/nope/related"), 404, "not found")
    lonely = mem(api, "no friends")
    assert related(api, lonely) == {
        "status": "success", "memory_id": lonely, "count": 0, "related_memories": [],
        "relationship_types": related(api, lonely)["relationship_types"], "max_depth": 1, "limit": 5,
    }
