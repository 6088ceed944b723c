"""POST /consolidate and GET /consolidate/status against the real engine.

Memories carry explicit vectors built on coordinate axes, so every cosine is known: cluster A
(4 near-duplicates, cosine 0.978), cluster B (3), a bridge memory at cosine 0.643 to A's members,
a loner, and old unimportant memories for forgetting.
"""

from __future__ import annotations

import math
import threading
import time
from datetime import datetime, timedelta, timezone

import pytest
from fastapi.testclient import TestClient

from service.main import create_app
from tests.conftest import AUTH, app_for
from tests.integration.support import assert_error, link, mem, recall

DIM = 384


def vec(**axes: float) -> list[float]:
    v = [0.0] * DIM
    for name, weight in axes.items():
        v[int(name[1:])] = weight
    norm = math.sqrt(sum(x * x for x in v))
    return [x / norm for x in v]


def ago(days: float) -> str:
    # From the clock at the call, not at collection: the service scores with its clock when the test
    # runs, which on a slow machine can be many minutes after the module was imported.
    return (datetime.now(timezone.utc) - timedelta(days=days)).isoformat()


A_TEXTS = [
    "Billing runs on PostgreSQL; we chose it for transactions.",
    "PostgreSQL is the billing database.",
    "The billing service stores invoices in PostgreSQL.",
    "Billing moved to PostgreSQL last year.",
]
B_TEXTS = ["Deploy on Tuesdays only.", "Deployments happen on Tuesday.", "We deploy every Tuesday morning."]


def corpus(api) -> dict[str, object]:
    ids: dict[str, object] = {}
    ids["a"] = [mem(api, t, type="Context", importance=0.5, tags=["billing", f"a{i}"], embedding=vec(**{"e0": 1.0, f"e{10 + i}": 0.15}))
                for i, t in enumerate(A_TEXTS)]
    ids["b"] = [mem(api, t, type="Decision", importance=0.6, tags=["deploy"], embedding=vec(**{"e1": 1.0, f"e{20 + i}": 0.15}))
                for i, t in enumerate(B_TEXTS)]
    ids["x"] = mem(api, "Insight: invoices and databases fail together at month end.", type="Insight", importance=0.5, embedding=vec(e0=0.65, e2=0.76))
    ids["y"] = mem(api, "A loner about gardening.", type="Context", embedding=vec(e3=1.0))
    return ids


def consolidate(api, mode: str, dry_run: bool, status: int = 200) -> dict:
    resp = api.post("/consolidate", json={"mode": mode, "dry_run": dry_run})
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert body["status"] == "success"
    return body["consolidation"]


def snapshot(api, os_client) -> dict:
    """Every document of the service's three indices with its version, and every vector."""
    s = api.app.state.settings
    os_client.indices.refresh(index=f"{s.index_prefix}-*")
    out = {}
    for name, alias in (("memories", s.memories_alias), ("edges", s.edges_alias), ("consolidation", s.consolidation_alias)):
        hits = os_client.search(index=alias, body={"size": 10_000, "seq_no_primary_term": True, "query": {"match_all": {}}})["hits"]["hits"]
        out[name] = {h["_id"]: (h["_seq_no"], h["_source"]) for h in hits}
    out["vectors"] = {k: v[0] for k, v in api.app.state.memories.vectors("default", list(out["memories"])).items()}
    return out


@pytest.fixture
def api(request):
    return app_for(request, write_refresh="true", consolidation_tick_seconds=0)


def test_dry_run_changes_nothing(make_client, os_client):
    api = make_client(write_refresh="true", consolidation_tick_seconds=0, consolidation_archive_threshold=0.3)
    ids = corpus(api)
    old = mem(api, "An old note nobody needs.", type="Context", importance=0.1, timestamp=ago(400), embedding=vec(e4=1.0))
    link(api, ids["a"][0], ids["b"][0])
    before = snapshot(api, os_client)
    result = consolidate(api, "full", dry_run=True)
    assert snapshot(api, os_client) == before
    # ... while saying what it would have done.
    assert result["dry_run"] is True and result["success"] is True
    assert result["changes"] == {"relevance_updates": 10, "discovered_edges": 4, "meta_memories": 2, "meta_memories_removed": 0, "archived": 1, "deleted": 0}
    assert [e["id"] for e in result["steps"]["forget"]["archived"]] == [old]
    assert result["steps"]["decay"]["updated"] == 0 and result["steps"]["cluster"]["meta_memories_created"] == 0
    assert api.get("/consolidate/status").json()["history"] == []  # dry runs are not recorded (AutoMem)


def test_decay_writes_the_formula_and_keeps_vectors(api, os_client):
    target = mem(api, "Scored memory", type="Decision", confidence=0.9, importance=0.8, timestamp=ago(30), last_accessed=ago(10), embedding=vec(e5=1.0))
    others = [mem(api, f"neighbour {i}", embedding=vec(**{f"e{6 + i}": 1.0})) for i in range(3)]
    for o in others:
        link(api, target, o)
    vectors_before = api.app.state.memories.vectors("default", [target, *others])
    result = consolidate(api, "decay", dry_run=False)
    decay = result["steps"]["decay"]
    assert (decay["processed"], decay["updated"], decay["would_update"]) == (4, 4, 4)
    assert decay["importance_threshold"] is None  # manual decay rescores everything (AutoMem)
    stored = api.get(f"/memory/{target}").json()["memory"]["relevance_score"]
    # exp(-0.01*30) * (0.3 + 0.3*exp(-0.05*10)) * (1 + 0.3*ln 4) * (0.5 + 0.8) * (0.7 + 0.3*0.9)
    assert stored == pytest.approx(0.637479, abs=1e-4)
    # A fresh memory with one relationship: 1 * 0.6 * (1 + 0.3 ln 2) * 1.0 * (0.7 + 0.3 * 0.3) (classified Context, 0.3).
    assert api.get(f"/memory/{others[0]}").json()["memory"]["relevance_score"] == pytest.approx(0.6 * (1 + 0.3 * math.log(2)) * 1.0 * 0.79, abs=1e-4)
    assert decay["distribution"] == {"high": 0, "medium": 4, "low": 0, "archive": 0}
    # Every update carried its vector back in.
    after = api.app.state.memories.vectors("default", [target, *others])
    assert {k: v[0] for k, v in after.items()} == {k: v[0] for k, v in vectors_before.items()}
    hits = recall(api, embedding=",".join(map(str, vec(e5=1.0))), limit=1)
    assert hits["results"][0]["id"] == target
    # A second run finds nothing that moved: no rewrite.
    again = consolidate(api, "decay", dry_run=False)["steps"]["decay"]
    assert (again["processed"], again["would_update"], again["updated"]) == (4, 0, 0)


def test_cluster_writes_one_metapattern_per_cluster_hidden_from_recall(api, os_client):
    ids = corpus(api)
    step = consolidate(api, "cluster", dry_run=False)["steps"]["cluster"]
    assert (step["clusters_found"], step["meta_memories_created"], step["meta_memories_removed"]) == (2, 2, 0)
    sample = step["sample_clusters"][0]
    assert sample["memory_ids"] == sorted(ids["a"]) and sample["size"] == 4 and sample["dominant_type"] == "Context"
    assert sample["keywords"] == ["billing", "postgresql"]
    meta_id = sample["cluster_id"]
    meta = api.get(f"/memory/{meta_id}").json()["memory"]
    assert meta["type"] == "MetaPattern" and meta["tags"] == ["billing"] and meta["confidence"] == 0.8
    assert meta["content"].startswith("Meta-pattern: Context cluster with 4 memories over 0 days. Shared keywords: billing, postgresql. Representative: ")
    assert meta["metadata"]["consolidation"]["member_ids"] == sorted(ids["a"])
    # Linked to its members.
    s = api.app.state.settings
    os_client.indices.refresh(index=s.edges_alias)
    edges = os_client.search(index=s.edges_alias, body={"size": 100, "query": {"term": {"source_id": meta_id}}})["hits"]["hits"]
    assert sorted((e["_source"]["type"], e["_source"]["target_id"]) for e in edges) == sorted(("SUMMARIZES", m) for m in ids["a"])
    # RECALL_EXCLUDED_TYPES: never in recall, whatever the query.
    by_vector = recall(api, embedding=",".join(map(str, vec(e0=1.0))), limit=20)
    by_text = recall(api, query="Meta-pattern Context cluster billing postgresql", limit=20)
    assert meta_id not in {r["id"] for r in by_vector["results"] + by_text["results"]}
    assert set(ids["a"]) <= {r["id"] for r in by_vector["results"]}
    # Idempotent: the same clusters rewrite the same summaries.
    again = consolidate(api, "cluster", dry_run=False)["steps"]["cluster"]
    assert (again["clusters_found"], again["meta_memories_created"], again["meta_memories_updated"], again["meta_memories_removed"]) == (2, 0, 2, 0)
    # A new member makes a new summary and removes the stale one.
    mem(api, "PostgreSQL holds billing data too.", type="Context", embedding=vec(e0=1.0, e30=0.15))
    third = consolidate(api, "cluster", dry_run=False)["steps"]["cluster"]
    assert (third["meta_memories_created"], third["meta_memories_removed"]) == (1, 1)
    assert api.get(f"/memory/{meta_id}").status_code == 404


def test_creative_links_across_clusters_only(api, os_client):
    ids = corpus(api)
    link(api, ids["x"], ids["a"][3])  # an existing edge is never duplicated
    step = consolidate(api, "creative", dry_run=False)["steps"]["creative"]
    assert step["sample_size"] == 9 and step["discovered"] == 3 and step["created"] == 3
    s = api.app.state.settings
    os_client.indices.refresh(index=s.edges_alias)
    hits = os_client.search(index=s.edges_alias, body={"size": 100, "query": {"term": {"type": "DISCOVERED"}}})["hits"]["hits"]
    pairs = sorted(tuple(sorted((h["_source"]["source_id"], h["_source"]["target_id"]))) for h in hits)
    assert pairs == sorted(tuple(sorted((ids["x"], a))) for a in ids["a"][:3])
    props = hits[0]["_source"]["properties"]
    assert props["kind"] == "shares_theme" and props["origin"] == "consolidation"
    assert props["similarity"] == pytest.approx(0.65 / math.sqrt(1.0225) / math.sqrt(0.65**2 + 0.76**2), abs=1e-3)
    assert hits[0]["_source"]["strength"] == pytest.approx(props["similarity"], abs=1e-6)
    # Readable through the graph API (a system type), and a second pass finds nothing new.
    related = api.get(f"/memories/{ids['x']}/related", params={"relationship_types": "DISCOVERED"}).json()
    assert {r["id"] for r in related["related_memories"]} == set(ids["a"][:3])
    assert consolidate(api, "creative", dry_run=False)["steps"]["creative"]["discovered"] == 0


def test_forget_archives_low_relevance_never_important_memories(make_client):
    api = make_client(write_refresh="true", consolidation_tick_seconds=0, consolidation_archive_threshold=0.3)
    low = mem(api, "old and unimportant", type="Context", importance=0.1, timestamp=ago(400))
    important = mem(api, "old but important", type="Context", importance=0.9, timestamp=ago(400))
    decision = mem(api, "old decision", type="Decision", importance=0.1, timestamp=ago(400))
    recent = mem(api, "recent but unimportant", type="Context", importance=0.1, timestamp=ago(10))
    flagged = mem(api, "old, flagged protected", type="Context", importance=0.1, timestamp=ago(400), metadata={"protected": True})
    dry = consolidate(api, "forget", dry_run=True)["steps"]["forget"]
    assert [e["id"] for e in dry["archived"]] == [low]
    reasons = {e["id"]: e["protection_reason"] for e in dry["protected"]}
    assert reasons == {
        important: "high importance (0.90 >= 0.7)", decision: "protected type: Decision",
        recent: "within grace period (10 < 90 days)", flagged: "explicitly protected",
    }
    assert api.get(f"/memory/{low}").json()["memory"]["archived"] is False
    step = consolidate(api, "forget", dry_run=False)["steps"]["forget"]
    assert (step["examined"], step["archived_count"], step["protected_count"], step["deleted_count"]) == (5, 1, 4, 0)
    archived = api.get(f"/memory/{low}").json()["memory"]
    assert archived["archived"] is True and archived["relevance_score"] < 0.3
    assert api.get(f"/memory/{important}").json()["memory"]["archived"] is False
    assert low not in {r["id"] for r in recall(api, query="old unimportant", limit=10)["results"]}
    # Archived memories are not examined again.
    assert consolidate(api, "forget", dry_run=False)["steps"]["forget"]["examined"] == 4


def test_forget_deletes_only_when_a_setting_says_so(make_client):
    api = make_client(write_refresh="true", consolidation_tick_seconds=0, consolidation_archive_threshold=0.3, consolidation_delete_threshold=0.05)
    doomed = mem(api, "ancient trivia", type="Context", importance=0.0, timestamp=ago(2000))
    other = mem(api, "another memory", type="Context", importance=0.2, timestamp=ago(400))  # floor 0.06: archived, not deleted
    link(api, doomed, other)
    step = consolidate(api, "forget", dry_run=False)["steps"]["forget"]
    assert [e["id"] for e in step["deleted"]] == [doomed] and [e["id"] for e in step["archived"]] == [other]
    assert api.get(f"/memory/{doomed}").status_code == 404
    assert api.get(f"/memories/{other}/related").json()["related_memories"] == []


def test_forget_is_off_by_default(api):
    mem(api, "old and unimportant", importance=0.0, timestamp=ago(4000))
    step = consolidate(api, "forget", dry_run=False)["steps"]["forget"]
    assert step["disabled"] is True and step["archived_count"] == 0 and step["examined"] == 0


def test_full_runs_every_step_in_order_and_records_history(api):
    corpus(api)
    result = consolidate(api, "full", dry_run=False)
    assert list(result["steps"]) == ["decay", "creative", "cluster", "forget"]
    status = api.get("/consolidate/status").json()
    assert status["status"] == "success" and status["thread_alive"] is False and status["tick_seconds"] == 0
    (run,) = status["history"]
    assert (run["mode"], run["task"], run["trigger"], run["success"], run["dry_run"], run["steps"]) == (
        "full", "full", "manual", True, False, ["decay", "creative", "cluster", "forget"])
    assert run["affected_count"] == 9 + 4 + 2  # relevance updates + DISCOVERED edges + MetaPatterns
    assert run["result"]["steps"]["cluster"]["clusters_found"] == 2
    assert status["next_runs"] == {"decay": "In 23 hour(s)", "creative": "In 6 day(s)", "cluster": "In 29 day(s)", "forget": "Disabled"}
    assert status["schedule"]["decay"]["interval_seconds"] == 86_400


def test_history_survives_a_restart_and_is_pruned(make_client, embedder):
    api = make_client(write_refresh="true", consolidation_tick_seconds=0, consolidation_history_limit=2)
    mem(api, "something to decay")
    for _ in range(3):
        consolidate(api, "decay", dry_run=False)
    first = api.get("/consolidate/status").json()
    assert len(first["history"]) == 2  # CONSOLIDATION_HISTORY_LIMIT
    settings = api.app.state.settings
    api.__exit__(None, None, None)
    with TestClient(create_app(settings, embedder=embedder)) as again:
        again.headers.update(AUTH)
        status = again.get("/consolidate/status").json()
    assert [r["id"] for r in status["history"]] == [r["id"] for r in first["history"]]
    assert status["next_runs"]["decay"] == "In 23 hour(s)"


def test_scheduler_runs_due_tasks_once_across_replicas(make_client, embedder):
    api = make_client(write_refresh="true", consolidation_tick_seconds=0, consolidation_decay_interval_seconds=3600,
                      consolidation_creative_interval_seconds=0, consolidation_cluster_interval_seconds=0)
    mem(api, "important enough for scheduled decay", importance=0.5)
    mem(api, "below CONSOLIDATION_DECAY_IMPORTANCE_THRESHOLD", importance=0.1)
    service = api.app.state.consolidation
    t0 = datetime.now(timezone.utc)
    assert service.tick(t0) == []  # a fresh schedule starts now: nothing is due yet
    later = t0 + timedelta(seconds=3601)
    # A second replica on the same indices: both find decay due, one claim wins.
    with TestClient(create_app(api.app.state.settings, embedder=embedder)) as other:
        results: list = []
        replicas = [service, other.app.state.consolidation]
        threads = [threading.Thread(target=lambda s=s: results.extend(s.tick(later))) for s in replicas]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(results) == 1
    (run,) = results
    assert run["mode"] == "decay" and run["steps"]["decay"]["processed"] == 1  # importance >= 0.3 only
    history = api.get("/consolidate/status").json()["history"]
    assert [(h["mode"], h["trigger"]) for h in history] == [("decay", "scheduled")]
    assert service.tick(later + timedelta(seconds=1)) == []  # the claim moved the schedule
    assert service.tick(later + timedelta(seconds=3601))[0]["mode"] == "decay"


def test_scheduler_thread(make_client):
    api = make_client(write_refresh="true", consolidation_tick_seconds=0.2, consolidation_decay_interval_seconds=1,
                      consolidation_creative_interval_seconds=0, consolidation_cluster_interval_seconds=0)
    mem(api, "decays on schedule", importance=0.5)
    assert api.get("/consolidate/status").json()["thread_alive"] is True
    deadline = time.monotonic() + 30
    while not api.get("/consolidate/status").json()["history"]:
        assert time.monotonic() < deadline, "no scheduled run within 30 s"
        time.sleep(0.2)
    assert api.get("/consolidate/status").json()["history"][0]["trigger"] == "scheduled"


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"mode": "dream"}, "mode: Input should be 'full', 'decay', 'creative', 'cluster' or 'forget'"),
        ({"mode": "FULL"}, "mode"),
        ({"mode": {"a": {"a": {"a": {}}}}}, "mode"),
        ({"mode": "x" * 1_000_000}, "mode"),
        ({"mode": "decay", "dry_run": "maybe"}, "dry_run"),
        ({"mode": "decay", "dry_run": [True]}, "dry_run"),
        ([], "Input should be a valid dictionary"),
    ],
)
def test_hostile_bodies_are_400(api, body, fragment):
    assert_error(api.post("/consolidate", json=body), 400, fragment)


def test_malformed_and_missing_bodies(api):
    assert_error(api.post("/consolidate", content=b"{not json", headers={"Content-Type": "application/json"}), 400, "Malformed JSON")
    lone = api.post("/consolidate", content=b'{"mode": "\\ud800"}', headers={"Content-Type": "application/json"})
    assert_error(lone, 400, "mode")
    deep = b'{"mode": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    assert api.post("/consolidate", content=deep, headers={"Content-Type": "application/json"}).status_code == 400
    huge = b'{"mode": "decay", "pad": "' + b"x" * (9 * 1024 * 1024) + b'"}'
    assert_error(api.post("/consolidate", content=huge, headers={"Content-Type": "application/json"}), 413, "MAX_REQUEST_BYTES")
    # No body: AutoMem's defaults, a full dry run.
    resp = api.post("/consolidate")
    assert resp.status_code == 200 and resp.json()["consolidation"]["mode"] == "full" and resp.json()["consolidation"]["dry_run"] is True
    assert_error(api.post("/consolidate", json={"mode": "decay"}, headers={"Authorization": "Bearer wrong"}), 401)
    assert_error(api.get("/consolidate/status", headers={"Authorization": "Bearer wrong"}), 401)
