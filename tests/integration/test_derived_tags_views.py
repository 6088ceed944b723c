"""The tags enrichment derives (`entity:...`, recorded in enrichment.derived_tags) are in AutoMem's view
of a memory (AutoMem's enrichment merges them into its tags, spec 003) and in no other surface's:
Signet's recall, search and similar rows, Hindsight's recall and list (service/memory/codec.caller_tags).
Before, Signet's comma-string tags showed them."""

from __future__ import annotations

import time

from tests.integration.support import mem

CALLER = ["trip", "entity:people:rachel"]  # a caller's own entity tag stays the caller's


def test_only_automem_shows_derived_tags(make_client):
    api = make_client(enrichment_enabled=True, enrichment_idle_sleep_seconds=0.1, write_refresh="true")
    mid = mem(api, "Rachel said Sarah Connor moved to Berlin to work on PostgreSQL.", tags=CALLER)
    other = mem(api, "Sarah Connor moved to Berlin.", tags=["trip"])
    deadline = time.monotonic() + 120
    while not (api.get("/enrichment/status").json()["stored"].get("done") == 2 and api.app.state.enrichment.idle()):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    api.app.state.memories.refresh_now()
    stored = api.get(f"/memory/{mid}").json()["memory"]
    derived = stored["enrichment"]["derived_tags"]
    assert derived and set(derived) <= set(stored["tags"]) and stored["tags"][:2] == CALLER  # AutoMem: every tag

    def row_tags(rows):
        return {r["id"]: r["tags"] for r in rows}

    signet = api.post("/api/memory/recall", json={"query": "Sarah Connor Berlin PostgreSQL", "limit": 5}).json()["results"]
    assert row_tags(signet)[mid] == ",".join(CALLER)
    search = api.get("/api/memory/search", params={"q": "Sarah Connor Berlin"}).json()["results"]
    assert row_tags(search)[mid] == ",".join(CALLER)
    legacy = api.get("/memory/search", params={"q": "Berlin"}).json()["results"]
    assert row_tags(legacy)[mid] == ",".join(CALLER)
    similar = api.get("/memory/similar", params={"id": other}).json()["results"]
    assert row_tags(similar)[mid] == CALLER
    hindsight = api.post("/v1/default/banks/default/memories/recall", json={"query": "Sarah Connor Berlin"}).json()["results"]
    assert row_tags(hindsight)[mid] == CALLER
    listed = api.get("/v1/default/banks/default/memories/list").json()["items"]
    assert row_tags(listed)[mid] == CALLER
