"""Derived tags are never a scope where a surface shows caller tags only (Hindsight, Signet): the
`entity:` tags enrichment adds match neither a Hindsight tag filter nor Signet's `tags`, while a
caller who tagged a memory with the same `entity:` tag is found. AutoMem's scope includes them
(spec 001: `tags=entity:people` finds entity tags), with enrichment on as users run it."""

from __future__ import annotations

import pytest

from tests.integration.hindsight_support import BANKS
from tests.integration.test_enrichment import enriched_api, settle

BANK = "scope-test"
H = {"X-Bank": BANK}


@pytest.fixture
def two_memories(make_client):
    api = enriched_api(make_client, write_refresh="true")
    derived = api.post("/memory", json={"content": "Sarah Connor reviewed the launch checklist.", "tags": ["team-notes"]}, headers=H)
    caller = api.post("/memory", json={"content": "The launch checklist needs another reviewer.", "tags": ["entity:people:sarah-connor"]}, headers=H)
    assert derived.status_code == caller.status_code == 201, (derived.text, caller.text)
    settle(api)
    derived_id, caller_id = derived.json()["memory_id"], caller.json()["memory_id"]
    got = api.get(f"/memory/{derived_id}", headers=H).json()["memory"]
    assert "entity:people:sarah-connor" in got["enrichment"]["derived_tags"]  # the premise: enrichment derived it
    return api, derived_id, caller_id


def hindsight_ids(api, **body) -> set[str]:
    resp = api.post(f"{BANKS}/{BANK}/memories/recall", json={"query": "launch checklist", "budget": "high", **body})
    assert resp.status_code == 200, resp.text
    return {r["id"] for r in resp.json()["results"]}


def signet_ids(api, tags: str) -> set[str]:
    resp = api.post("/api/memory/recall", json={"query": "launch checklist", "tags": tags, "limit": 10}, headers=H)
    assert resp.status_code == 200, resp.text
    return {r["id"] for r in resp.json()["results"]}


@pytest.mark.parametrize("match", ["any", "any_strict", "all_strict", "exact"])
def test_hindsight_tag_filters_read_caller_tags_only(two_memories, match):
    api, derived_id, caller_id = two_memories
    found = hindsight_ids(api, tags=["entity:people:sarah-connor"], tags_match=match)
    assert caller_id in found and derived_id not in found
    group = hindsight_ids(api, tag_groups=[{"tags": ["entity:people:sarah-connor"], "match": match}])
    assert caller_id in group and derived_id not in group


@pytest.mark.parametrize("tags", ["entity:people:sarah-connor", "entity:people", "Entity/People"])
def test_signet_tags_read_caller_tags_only(two_memories, tags):
    api, derived_id, caller_id = two_memories
    assert signet_ids(api, tags) == {caller_id}


def test_automem_scope_includes_derived_tags(two_memories):
    api, derived_id, caller_id = two_memories
    resp = api.get("/recall", params={"query": "launch checklist", "tags": "entity:people", "tag_match": "prefix"}, headers=H)
    assert resp.status_code == 200, resp.text
    assert {r["id"] for r in resp.json()["results"]} == {derived_id, caller_id}
