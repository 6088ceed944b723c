"""Hindsight's tag filters on the real engine: every tags_match mode and tag-group combination over a
small table of tagged and untagged memories, as exact result sets."""

from __future__ import annotations

import pytest

from tests.integration.hindsight_support import app_client, hrecall, remember, texts

TABLE = {  # name -> caller tags
    "alpha": ["alpha"], "beta": ["beta"], "alpha+beta": ["alpha", "beta"], "alpha+beta+gamma": ["alpha", "beta", "gamma"],
    "gamma": ["gamma"], "untagged": [],
}


@pytest.fixture(scope="module")
def tagged(engine_url, embedder, os_client):
    with app_client(engine_url, embedder, os_client, write_refresh="true", recall_adaptive_floor=False) as api:
        for name, tags in TABLE.items():
            remember(api, "t", f"orchard note {name}", tags=tags)
        yield api


def found(api, **body) -> set[str]:
    got = hrecall(api, "t", "orchard note", budget="high", **body)
    return {t.removeprefix("orchard note ") for t in texts(got)}


@pytest.mark.parametrize(
    ("tags", "match", "expected"),
    [
        (["alpha"], "any", {"alpha", "alpha+beta", "alpha+beta+gamma", "untagged"}),
        (["alpha"], "all", {"alpha", "alpha+beta", "alpha+beta+gamma", "untagged"}),
        (["alpha"], "any_strict", {"alpha", "alpha+beta", "alpha+beta+gamma"}),
        (["alpha"], "all_strict", {"alpha", "alpha+beta", "alpha+beta+gamma"}),
        (["alpha"], "exact", {"alpha"}),
        (["alpha", "beta"], "any", {"alpha", "beta", "alpha+beta", "alpha+beta+gamma", "untagged"}),
        (["alpha", "beta"], "all", {"alpha+beta", "alpha+beta+gamma", "untagged"}),
        (["alpha", "beta"], "any_strict", {"alpha", "beta", "alpha+beta", "alpha+beta+gamma"}),
        (["alpha", "beta"], "all_strict", {"alpha+beta", "alpha+beta+gamma"}),
        (["beta", "alpha"], "exact", {"alpha+beta"}),
        ([], "exact", {"untagged"}),  # exact without tags: only the untagged
        (None, "exact", {"untagged"}),
        ([], "any", set(TABLE)),  # no tags: no filter
        (None, "all_strict", set(TABLE)),
        (["Alpha"], "any_strict", set()),  # tags compare as given
    ],
)
def test_tags_match(tagged, tags, match, expected):
    assert found(tagged, tags=tags, tags_match=match) == expected


@pytest.mark.parametrize(
    ("groups", "expected"),
    [
        ([{"tags": ["alpha"]}, {"not": {"tags": ["gamma"]}}], {"alpha", "alpha+beta"}),  # list = AND; leaf default any_strict
        ([{"or": [{"tags": ["gamma"], "match": "exact"}, {"tags": ["beta"], "match": "all_strict"}]}], {"gamma", "beta", "alpha+beta", "alpha+beta+gamma"}),
        ([{"and": [{"tags": ["alpha"]}, {"tags": ["beta"]}]}], {"alpha+beta", "alpha+beta+gamma"}),
        ([{"not": {"tags": ["alpha"], "match": "any"}}], {"beta", "gamma"}),  # not (alpha or untagged)
        ([{"not": {"or": [{"tags": ["alpha"]}, {"tags": ["beta"]}]}}], {"gamma", "untagged"}),
        ([{"or": [{"and": [{"tags": ["gamma"]}, {"not": {"tags": ["alpha"]}}]}, {"tags": [], "match": "exact"}]}], {"gamma", "untagged"}),
        ([{"tags": ["alph"], "resolve": "fuzzy"}], {"alpha", "alpha+beta", "alpha+beta+gamma"}),  # trigram match of the bank's tags
        ([{"tags": ["alph"]}], set()),  # literally, no memory carries "alph"
        ([{"not": {"tags": ["gama"], "resolve": "fuzzy", "match": "any_strict"}}], {"alpha", "beta", "alpha+beta", "untagged"}),
    ],
)
def test_tag_groups(tagged, groups, expected):
    assert found(tagged, tag_groups=groups) == expected


def test_tags_and_tag_groups_are_anded(tagged):
    assert found(tagged, tags=["alpha"], tags_match="any", tag_groups=[{"not": {"tags": ["beta"]}}]) == {"alpha", "untagged"}


def test_the_scope_holds_through_graph_expansion(tagged):
    """Tag groups are visibility scopes: expansion (budget high) never reaches a memory outside them."""
    api = tagged
    ids = {t.removeprefix("orchard note "): r["id"] for r in hrecall(api, "t", "orchard note", budget="high")["results"] for t in [r["text"]]}
    link = api.post("/associate", json={"memory1_id": ids["alpha"], "memory2_id": ids["gamma"], "type": "RELATES_TO", "strength": 0.9},
                    headers={"X-Bank": "t"})
    assert link.status_code == 201, link.text
    assert found(api, tags=["alpha"], tags_match="exact") == {"alpha"}  # gamma is related, but outside the scope


def test_enrichment_derived_tags_are_no_scope(make_client):
    """A memory stored untagged stays untagged for Hindsight after enrichment adds entity tags to it."""
    import time

    api = make_client(write_refresh="true", enrichment_enabled=True, recall_adaptive_floor=False)
    mid = remember(api, "e", "Sarah Connor met John in Los Angeles")
    tagged_id = remember(api, "e", "Sarah Connor wrote the plan", tags=["plans"])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        tags = api.get(f"/memory/{mid}", headers={"X-Bank": "e"}).json()["memory"]["tags"]
        if any(t.startswith("entity:") for t in tags):
            break
        time.sleep(0.3)
    assert any(t.startswith("entity:") for t in tags), tags  # enrichment tagged it (in its own bank)
    got = hrecall(api, "e", "Sarah Connor", tags_match="exact", budget="high")
    assert [r["id"] for r in got["results"]] == [mid]  # still untagged
    assert got["results"][0]["tags"] is None and "Sarah Connor" in (got["results"][0]["entities"] or [])
    got = hrecall(api, "e", "Sarah Connor", tags=["plans"], tags_match="exact", budget="high")
    assert [r["id"] for r in got["results"]] == [tagged_id]
    listed = api.get("/v1/default/banks/e/tags").json()
    assert listed["items"] == [{"tag": "plans", "count": 1}]  # the caller's tags only
