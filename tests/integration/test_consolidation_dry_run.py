"""A dry run reports exactly what the run does on the same data (POST /consolidate, real engine).

The corpus of test_consolidation_api.py (two clusters, a bridge, a loner) plus an old, unimportant
cluster that this run's decay scores far below 0.3 and its forget step archives: before, the dry
run planned creative and cluster on the relevance stored before the run while the real run read
the relevance its own decay had just written, so the two disagreed on clusters and edges."""

from __future__ import annotations

from opensearchpy import helpers

from tests.integration.support import link, mem
from tests.integration.test_consolidation_api import ago, consolidate, corpus, vec

STEPS = ("decay", "creative", "cluster", "forget")
# Fields that say what was written, or when: the rest says what the run does (or would do).
WRITTEN = {"updated", "created", "meta_memories_created", "meta_memories_updated", "meta_memories_removed", "elapsed_ms"}
WHEN = {"discovered_at", "created_at"}


def plan_of(result: dict) -> dict:
    """A result's plan: written counts and times dropped, scores rounded (the two runs are seconds
    apart, and relevance decays by ~1e-7 a second)."""
    def norm(value):
        if isinstance(value, dict):
            return {k: norm(v) for k, v in value.items() if k not in WHEN}
        if isinstance(value, list):
            return [norm(v) for v in value]
        return round(value, 4) if isinstance(value, float) else value
    return {step: norm({k: v for k, v in result["steps"][step].items() if k not in WRITTEN}) for step in STEPS}


def stored(api, os_client) -> tuple[set[str], set[tuple[str, str]], set[str]]:
    s = api.app.state.settings
    os_client.indices.refresh(index=f"{s.index_prefix}-*")
    memories = {h["_id"]: h["_source"] for h in helpers.scan(os_client, index=s.memories_alias, query={"query": {"match_all": {}}})}
    edges = [h["_source"] for h in helpers.scan(os_client, index=s.edges_alias, query={"query": {"match_all": {}}})]
    metas = {mid for mid, m in memories.items() if m.get("type") == "MetaPattern"}
    discovered = {(e["source_id"], e["target_id"]) for e in edges if e["type"] == "DISCOVERED"}
    archived = {mid for mid, m in memories.items() if m.get("archived")}
    return metas, discovered, archived


def test_a_full_dry_run_reports_exactly_what_the_run_then_does(make_client, os_client):
    api = make_client(write_refresh="true", consolidation_tick_seconds=0, consolidation_archive_threshold=0.3)
    ids = corpus(api)
    old = [mem(api, f"Old note {i}: the fax gateway was retired.", type="Context", importance=0.1, timestamp=ago(400),
               embedding=vec(**{"e5": 1.0, f"e{30 + i}": 0.15})) for i in range(3)]
    mem(api, "Old note: the fax gateway sent invoices.", type="Context", importance=0.1, timestamp=ago(400), embedding=vec(e5=0.65, e0=0.76))
    link(api, ids["a"][0], ids["b"][0])

    dry = consolidate(api, "full", dry_run=True)
    real = consolidate(api, "full", dry_run=False)
    assert (dry["success"], real["success"]) == (True, True)
    assert real["changes"] == dry["changes"], (dry["changes"], real["changes"])
    assert plan_of(real) == plan_of(dry)
    # What was written is what the dry run said would be.
    metas, discovered, archived = stored(api, os_client)
    steps = dry["steps"]
    assert len(metas) == steps["cluster"]["would_create"] == steps["cluster"]["clusters_found"] == 3  # A, B and the old one
    assert {c["cluster_id"] for c in steps["cluster"]["sample_clusters"]} <= metas  # the samples: the first two
    assert len(discovered) == steps["creative"]["discovered"] > len(steps["creative"]["sample_associations"])
    assert {(a["memory1_id"], a["memory2_id"]) for a in steps["creative"]["sample_associations"]} <= discovered
    assert archived == {e["id"] for e in steps["forget"]["archived"]} and set(old) <= archived
    assert real["steps"]["decay"]["updated"] == steps["decay"]["would_update"]
    assert real["steps"]["creative"]["created"] == steps["creative"]["discovered"]
    assert real["steps"]["cluster"]["meta_memories_created"] == steps["cluster"]["would_create"]


def test_a_memory_deleted_while_the_run_plans_gets_no_edge(make_client, os_client, monkeypatch):
    """The bridge memory is deleted after creative and cluster planned edges to it, before they are
    written: its DISCOVERED edges are not written (service/graph/system_edges.py)."""
    api = make_client(write_refresh="true", consolidation_tick_seconds=0)
    ids = corpus(api)
    consolidator = api.app.state.consolidation.consolidator
    planned = consolidator.forget

    def delete_meanwhile(run):
        assert any(ids["x"] in pair for pair in run.overlay.new_edges)  # planned: the bridge's links
        assert api.delete(f"/memory/{ids['x']}").status_code == 200
        return planned(run)

    monkeypatch.setattr(consolidator, "forget", delete_meanwhile)
    real = consolidate(api, "full", dry_run=False)
    assert real["success"] is True
    s = api.app.state.settings
    os_client.indices.refresh(index=f"{s.index_prefix}-*")
    alive = {h["_id"] for h in helpers.scan(os_client, index=s.memories_alias, query={"query": {"match_all": {}}}, _source=False)}
    edges = [h["_source"] for h in helpers.scan(os_client, index=s.edges_alias, query={"query": {"match_all": {}}})]
    assert [e for e in edges if e["source_id"] not in alive or e["target_id"] not in alive] == []
    creative = real["steps"]["creative"]
    assert creative["created"] == sum(e["type"] == "DISCOVERED" for e in edges) < creative["discovered"]
