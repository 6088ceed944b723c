"""Background work in every bank: the enrichment worker enriches each bank's memories with edges in
that bank only; consolidation clusters, links and schedules bank by bank."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

from tests.integration.support import mem

X, Y = {"X-Bank": "x"}, {"X-Bank": "y"}


def wait_enriched(api, ids_by_bank: dict[str, list[str]], timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    for bank, ids in ids_by_bank.items():
        for mid in ids:
            while True:
                memory = api.get(f"/memory/{mid}", headers={"X-Bank": bank}).json()["memory"]
                if (memory.get("enrichment") or {}).get("status") == "done":
                    break
                assert time.monotonic() < deadline, f"{mid} in {bank} was not enriched: {memory.get('enrichment')}"
                time.sleep(0.2)


def related_ids(api, mid: str, headers: dict) -> set[str]:
    resp = api.get(f"/memories/{mid}/related", params={"max_depth": 1, "limit": 50, "relationship_types": "SIMILAR_TO,PRECEDED_BY"}, headers=headers)
    assert resp.status_code == 200, resp.text
    return {m["id"] for m in resp.json()["related_memories"]}


def test_enrichment_works_in_every_bank_and_links_within_it(make_client):
    api = make_client(write_refresh="true", enrichment_enabled=True, enrichment_similarity_threshold=0.8)
    t0 = datetime(2024, 5, 1, 9, tzinfo=timezone.utc)
    text = "Sarah Connor moved the weekly sync to Thursday at 10"
    x1 = api.post("/memory", json={"content": text, "timestamp": t0.isoformat()}, headers=X).json()["memory_id"]
    y1 = api.post("/memory", json={"content": text, "timestamp": (t0 + timedelta(minutes=1)).isoformat()}, headers=Y).json()["memory_id"]
    x2 = api.post("/memory", json={"content": text + ".", "timestamp": (t0 + timedelta(minutes=2)).isoformat()}, headers=X).json()["memory_id"]
    y2 = api.post("/memory", json={"content": text + "!", "timestamp": (t0 + timedelta(minutes=3)).isoformat()}, headers=Y).json()["memory_id"]
    wait_enriched(api, {"x": [x1, x2], "y": [y1, y2]})
    # entities found in each bank's memories
    assert any(t.startswith("entity:") for t in api.get(f"/memory/{y1}", headers=Y).json()["memory"]["tags"])
    # SIMILAR_TO and PRECEDED_BY join each bank's pair, never across banks (the texts are near-identical);
    # the worker writes edges without waiting for a refresh, so they show within a second
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not (related_ids(api, x2, X) and related_ids(api, y2, Y)):
        time.sleep(0.2)
    assert related_ids(api, x2, X) == {x1} and related_ids(api, x1, X) == {x2}
    assert related_ids(api, y2, Y) == {y1} and related_ids(api, y1, Y) == {y2}
    stats_x = api.get("/v1/default/banks/x/stats").json()
    stats_y = api.get("/v1/default/banks/y/stats").json()
    assert stats_x["links_by_link_type"] == stats_y["links_by_link_type"] == {"SIMILAR_TO": 2, "PRECEDED_BY": 1}
    assert api.get("/v1/default/banks/default/stats").json()["total_links"] == 0


def test_reprocess_keeps_the_vectors_of_other_banks(make_client):
    """Marking memories pending updates them in their own bank, carrying their vector back in."""
    api = make_client(write_refresh="true")
    mid = api.post("/memory", json={"content": "A memory in bank x about vectors"}, headers=X).json()["memory_id"]
    worker = api.app.state.enrichment
    worker.mark_pending([mid])
    store = api.app.state.memories
    (vector, _, _) = store.vectors("x", [mid])[mid]
    assert vector is not None and len(vector) == api.app.state.embedder.dimension
    assert (store.get("x", mid)["enrichment"]["status"], store.get("x", mid)["enrichment"]["forced"]) == ("pending", True)


def test_consolidation_works_bank_by_bank(make_client):
    api = make_client(write_refresh="true", consolidation_tick_seconds=0, consolidation_decay_interval_seconds=3600,
                      consolidation_creative_interval_seconds=0, consolidation_cluster_interval_seconds=0)
    base = "Deploy checklist: run the smoke tests before every staging deploy"
    xs = [api.post("/memory", json={"content": f"{base} ({i})"}, headers=X).json()["memory_id"] for i in range(2)]
    for i in range(2):
        mem(api, f"{base} ({i})")  # the default bank holds the same two
    # two in x and two in default: no cluster of 3 in either (a search across banks would find one of 4)
    for headers in (X, {}):
        run = api.post("/consolidate", json={"mode": "cluster", "dry_run": False}, headers=headers).json()["consolidation"]
        assert run["steps"]["cluster"]["clusters_found"] == 0
    xs.append(api.post("/memory", json={"content": f"{base} (2)"}, headers=X).json()["memory_id"])
    run = api.post("/consolidate", json={"mode": "cluster", "dry_run": False}, headers=X).json()["consolidation"]
    assert run["steps"]["cluster"]["clusters_found"] == 1 and run["steps"]["cluster"]["meta_memories_created"] == 1
    (sample,) = run["steps"]["cluster"]["sample_clusters"]
    assert sorted(sample["memory_ids"]) == sorted(xs)
    meta = api.get(f"/memory/{sample['cluster_id']}", headers=X).json()["memory"]
    assert meta["type"] == "MetaPattern"
    assert api.get(f"/memory/{sample['cluster_id']}").status_code == 404  # not in the default bank
    assert api.get("/v1/default/banks/x/stats").json()["links_by_link_type"] == {"SUMMARIZES": 3}
    assert api.get("/v1/default/banks/default/stats").json()["total_links"] == 0
    # history per bank
    assert [h["mode"] for h in api.get("/consolidate/status", headers=X).json()["history"]] == ["cluster", "cluster"]
    assert [h["mode"] for h in api.get("/consolidate/status").json()["history"]] == ["cluster"]
    # the scheduler ticks every bank, each on its own schedule
    service = api.app.state.consolidation
    now = datetime.now(timezone.utc)
    assert service.tick(now) == []  # fresh schedules start now
    ran = service.tick(now + timedelta(seconds=3601))
    assert sorted(r["steps"]["decay"]["processed"] for r in ran) == [2, 4]  # default's two; x's three and their summary
    assert [h["trigger"] for h in api.get("/consolidate/status", headers=X).json()["history"]][0] == "scheduled"
    assert [h["trigger"] for h in api.get("/consolidate/status").json()["history"]][0] == "scheduled"
