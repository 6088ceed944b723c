"""Background enrichment against the real engine: entities, SIMILAR_TO / PRECEDED_BY, state on the
memory (restart resumes, nothing enriched twice), cancellation on a concurrent edit, caller fields
never overwritten, GET /enrichment/status and POST /enrichment/reprocess."""

from __future__ import annotations

import json
import logging
import time
import uuid

import pytest

from service.admin.reenrich import reenrich, wait_enriched, warn_older_rules
from service.cli.main import main
from service.enrichment.extractor import EXTRACTION_RULES
from service.enrichment.jobs import Job
from service.filters import clauses as C
from tests.conftest import ADMIN
from tests.integration.support import assert_error, mem, recall

ADMIN_H = {"X-Admin-Token": ADMIN}


def enriched_api(make_client, **overrides):
    values = dict(enrichment_enabled=True, enrichment_idle_sleep_seconds=0.1, enrichment_similarity_threshold=0.8)
    values.update(overrides)
    return make_client(**values)


def settle(api, timeout: float = 60.0) -> dict:
    """Wait until the worker has nothing queued or in flight (three looks in a row), then refresh."""
    worker = api.app.state.enrichment
    deadline = time.monotonic() + timeout
    quiet = 0
    while quiet < 3:
        assert time.monotonic() < deadline, worker.status("default")
        quiet = quiet + 1 if worker.idle() else 0
        time.sleep(0.1)
    worker.memories.refresh_now()
    api.app.state.client.indices.refresh(index=api.app.state.edges.alias)
    return worker.status("default")


def memory(api, mid: str) -> dict:
    resp = api.get(f"/memory/{mid}")
    assert resp.status_code == 200, resp.text
    return resp.json()["memory"]


def edges_of(api, mid: str, types: str) -> list[dict]:
    return api.app.state.edges.touching("default", [mid], types.split(","), size=100)


def test_entities_tags_and_metadata_written(make_client):
    api = enriched_api(make_client)
    mid = mem(api, "Met with Sarah Connor in Paris; we chose PostgreSQL over MongoDB for project Atlas.", tags=["work"])
    status = settle(api)
    m = memory(api, mid)
    assert m["tags"] == ["work", "entity:people:sarah-connor", "entity:places:paris", "entity:tools:mongodb",
                         "entity:tools:postgresql", "entity:projects:atlas"]
    assert m["metadata"]["entities"] == {"people": ["Sarah Connor"], "places": ["Paris"], "tools": ["MongoDB", "PostgreSQL"], "projects": ["Atlas"]}
    e = m["enrichment"]
    assert e["status"] == "done" and e["attempts"] == 1 and e["last_error"] is None
    assert e["derived_tags"] == m["tags"][1:] and e["derived_metadata_keys"] == ["entities"]
    assert status["stats"]["successes"] == 1 and status["stored"] == {"pending": 0, "done": 1, "failed": 0}
    # The prefix filter of spec 001 ("tags=entity:people") now finds it.
    assert [r["id"] for r in recall(api, tags="entity:people", tag_match="prefix")["results"]] == [mid]


def test_spec_multi_hop_example_through_derived_entities(make_client):
    """spec 000 Entity Expansion: "Sarah's sister is Rachel" -> memories tagged for rachel -> Rachel's job."""
    api = enriched_api(make_client)
    seed = mem(api, "Sarah's sister is Rachel.")
    job = mem(api, "Rachel works as a nurse at Mercy Hospital.")
    mem(api, "The weather was cold all week.")
    settle(api)
    assert "entity:people:rachel" in memory(api, job)["tags"]
    body = recall(api, query="What is Sarah's sister's job?", expand_entities="true", limit=1)
    assert [r["id"] for r in body["results"]][:1] == [seed]
    assert "rachel" in body["entity_expansion"]["entities_found"]
    expanded = [r for r in body["results"] if r.get("match_type") == "entity_expansion"]
    assert [r["id"] for r in expanded] == [job] and expanded[0]["expanded_from_entity"] == "rachel"


def test_similar_to_both_ways_with_cosine_strength(make_client, embedder):
    api = enriched_api(make_client)
    a = mem(api, "We decided to use PostgreSQL for the primary database.")
    b = mem(api, "Decision: PostgreSQL is our primary database.")
    c = mem(api, "My cat likes to sleep in the sun.")
    settle(api)
    va, vb = embedder.embed_documents(["We decided to use PostgreSQL for the primary database.", "Decision: PostgreSQL is our primary database."])
    cos = sum(x * y for x, y in zip(va, vb)) / (sum(x * x for x in va) ** 0.5 * sum(y * y for y in vb) ** 0.5)
    assert cos >= 0.8
    similar = {(e["source_id"], e["target_id"]): e for e in edges_of(api, a, "SIMILAR_TO")}
    assert set(similar) == {(a, b), (b, a)}
    assert similar[(a, b)]["strength"] == pytest.approx(cos, abs=2e-3)
    assert similar[(a, b)]["properties"]["score"] == similar[(a, b)]["strength"]
    assert edges_of(api, c, "SIMILAR_TO") == []
    # System edges are readable, never authorable.
    assert_error(api.post("/associate", json={"memory1_id": a, "memory2_id": c, "type": "SIMILAR_TO"}), 400, "system relationship")


def test_preceded_by_follows_threads_then_tag_scope(make_client):
    api = enriched_api(make_client, enrichment_batch_size=2)
    t = lambda d: f"2024-03-0{d}T10:00:00Z"  # noqa: E731
    s1 = [mem(api, f"note {n} of session one", metadata={"session_id": "one"}, timestamp=t(n)) for n in (1, 2, 3)]
    s2 = mem(api, "note of session two", metadata={"session_id": "two"}, timestamp=t(4))
    tagged = [mem(api, f"tagged note {n}", tags=["conversation:42"], timestamp=t(n)) for n in (1, 2)]
    scoped = [mem(api, f"scoped note {n}", tags=["project-x"], timestamp=t(n)) for n in (5, 6)]
    settle(api)
    def pred(mid):
        out = [e["target_id"] for e in edges_of(api, mid, "PRECEDED_BY") if e["source_id"] == mid]
        assert len(out) <= 1
        return out[0] if out else None
    assert [pred(m) for m in s1] == [None, s1[0], s1[1]]
    assert pred(s2) is None
    assert [pred(m) for m in tagged] == [None, tagged[0]]
    assert [pred(m) for m in scoped] == [None, scoped[0]]
    assert memory(api, s1[2])["enrichment"]["scope"] == "session:one"


def test_preceded_by_repaired_when_an_earlier_memory_arrives_later(make_client):
    api = enriched_api(make_client)
    first = mem(api, "first", metadata={"thread_id": "t"}, timestamp="2024-01-01T00:00:00Z")
    third = mem(api, "third", metadata={"thread_id": "t"}, timestamp="2024-01-03T00:00:00Z")
    settle(api)
    second = mem(api, "second, stored last", metadata={"thread_id": "t"}, timestamp="2024-01-02T00:00:00Z")
    settle(api)
    links = {(e["source_id"], e["target_id"]) for m in (first, second, third) for e in edges_of(api, m, "PRECEDED_BY")}
    assert links == {(second, first), (third, second)}


def test_caller_tags_and_metadata_are_never_overwritten(make_client):
    api = enriched_api(make_client)
    mine = {"people": ["Dr. Who"]}
    mid = mem(api, "Rachel said she met Sarah Connor in Berlin.", tags=["entity:people:rachel", "keep"], metadata={"entities": mine, "source": "chat"})
    settle(api)
    m = memory(api, mid)
    assert m["metadata"] == {"entities": mine, "source": "chat"}  # the caller's key stays as given
    assert m["tags"][:2] == ["entity:people:rachel", "keep"]
    assert "entity:people:rachel" not in m["enrichment"]["derived_tags"]
    assert set(m["enrichment"]["derived_tags"]) == {"entity:people:sarah-connor", "entity:places:berlin"}
    assert m["enrichment"]["derived_metadata_keys"] == []
    # A PATCH that replaces tags drops derived ones; the next run puts them back, caller's order first.
    assert api.patch(f"/memory/{mid}", json={"tags": ["new"]}).status_code == 200
    settle(api)
    m = memory(api, mid)
    assert m["tags"] == ["new", "entity:people:rachel", "entity:people:sarah-connor", "entity:places:berlin"]
    assert m["metadata"] == {"entities": mine, "source": "chat"}


def test_a_patched_derived_key_becomes_the_callers(make_client):
    api = enriched_api(make_client)
    mid = mem(api, "Rachel moved to Berlin.")
    settle(api)
    assert memory(api, mid)["metadata"]["entities"] == {"people": ["Rachel"], "places": ["Berlin"]}
    mine = ["Rachel Green"]  # a list: PATCH merges nested objects into the stored metadata
    assert api.patch(f"/memory/{mid}", json={"metadata": {"entities": mine}, "content": "Rachel moved to Munich."}).status_code == 200
    settle(api)
    m = memory(api, mid)
    assert m["metadata"] == {"entities": mine}
    assert "entity:places:munich" in m["tags"] and "entity:places:berlin" not in m["tags"]


def test_restart_resumes_pending_and_never_enriches_twice(make_client):
    prefix = f"t{uuid.uuid4().hex[:10]}"
    first = make_client(index_prefix=prefix)  # enrichment off: what it stores stays pending
    done = mem(first, "Gina opened a store in Rome.")
    second = enriched_api(make_client, index_prefix=prefix)
    settle(second)
    enriched_at = memory(second, done)["enrichment"]["enriched_at"]
    second.app.state.enrichment.stop()  # else its idle look (every few seconds) could take `left` first
    left = mem(first, "Jon visited Paris with Gina.")  # written while no worker runs
    assert "enrichment" not in memory(first, left)
    third = enriched_api(make_client, index_prefix=prefix)  # a fresh process: scans at start-up
    status = settle(third)
    assert memory(third, left)["enrichment"]["status"] == "done"
    assert "entity:places:paris" in memory(third, left)["tags"]
    assert memory(third, done)["enrichment"]["enriched_at"] == enriched_at  # not enriched twice
    assert status["stats"]["successes"] == 1  # `left` only


def _manual_worker(api):
    from service.enrichment.gazetteer import load_gazetteer

    worker = api.app.state.enrichment
    worker.gazetteer = load_gazetteer()
    return worker


def test_content_edit_during_extraction_cancels_the_stale_result(make_client, monkeypatch):
    api = make_client()  # no background threads: the test drives one batch
    worker = _manual_worker(api)
    mid = mem(api, "Alice flew to Tokyo.")
    original = worker._similar

    def edit_meanwhile(bank, subjects):
        assert api.patch(f"/memory/{mid}", json={"content": "Bob moved to Madrid."}).status_code == 200
        return original(bank, subjects)

    monkeypatch.setattr(worker, "_similar", edit_meanwhile)
    events = []
    worker.on_event = lambda kind, data: events.append((kind, data))
    worker.process([Job(mid)])
    assert worker.stats.cancelled == 1 and worker.stats.successes == 0
    m = memory(api, mid)
    assert m["content"] == "Bob moved to Madrid." and "enrichment" not in m and not any(t.startswith("entity:") for t in m["tags"])
    assert [k for k, _ in events] == ["enrichment.start", "enrichment.complete"] and events[1][1]["cancelled"] is True
    monkeypatch.setattr(worker, "_similar", original)
    worker.process(worker._take())  # re-queued: enriched from the new content
    m = memory(api, mid)
    assert set(m["enrichment"]["derived_tags"]) == {"entity:people:bob", "entity:places:madrid"}


def test_other_concurrent_writes_are_kept_and_the_run_replanned(make_client, monkeypatch):
    api = make_client()
    worker = _manual_worker(api)
    mid = mem(api, "Alice flew to Tokyo.", importance=0.2)
    original = worker._similar

    def touch_meanwhile(bank, subjects):
        assert api.patch(f"/memory/{mid}", json={"importance": 0.9}).status_code == 200
        return original(bank, subjects)

    monkeypatch.setattr(worker, "_similar", touch_meanwhile)
    worker.process([Job(mid)])
    m = memory(api, mid)
    assert worker.stats.conflicts_replanned == 1 and worker.stats.successes == 1
    assert m["importance"] == 0.9 and m["enrichment"]["status"] == "done"
    assert api.app.state.memories.vectors("default", [mid])[mid][0] is not None  # the vector survived the rewrite


@pytest.mark.parametrize("edit, marked", [
    ({"content": "Bob moved to Madrid."}, True),
    ({"tags": ["travel"]}, True),
    ({"metadata": {"session_id": "s2"}}, True),
    ({"timestamp": "2024-05-01T00:00:00Z"}, True),
    ({"content": "Alice flew to Tokyo."}, False),  # the same content: nothing to do again
    ({"importance": 0.9}, False),  # not a thing enrichment reads
    ({"pinned": True}, False),
])
def test_an_edit_of_what_enrichment_reads_marks_the_memory_pending_in_the_same_write(make_client, edit, marked):
    prefix = f"t{uuid.uuid4().hex[:10]}"
    api = make_client(index_prefix=prefix)  # no background threads: the test drives the worker
    worker = _manual_worker(api)
    mid = mem(api, "Alice flew to Tokyo.")
    worker.process([Job(mid)])
    assert api.patch(f"/memory/{mid}", json=edit).status_code == 200
    m = memory(api, mid)
    assert m["enrichment"]["status"] == ("pending" if marked else "done")
    assert "entity:places:tokyo" in m["tags"] or "tags" in edit  # the derived fields stay until the run
    # A fresh process (the first one's queue lost, as by a restart): its quick look finds the mark alone,
    # and so does its first full scan (an edit of other fields moved the run's record along).
    fresh = _manual_worker(make_client(index_prefix=prefix))
    assert fresh.scan(quick=True) == int(marked)
    assert _manual_worker(make_client(index_prefix=prefix)).scan() == int(marked)


def test_edits_a_store_holds_no_mark_for_are_found_by_the_first_full_scans(make_client):
    prefix = f"t{uuid.uuid4().hex[:10]}"
    api = make_client(index_prefix=prefix)
    worker = _manual_worker(api)
    mid = mem(api, "Alice flew to Tokyo.")
    worker.process([Job(mid)])
    assert api.patch(f"/memory/{mid}", json={"content": "Bob moved to Madrid."}).status_code == 200
    store = api.app.state.memories
    # As an earlier release left an edit whose enqueue a restart lost: enriched, updated_at past the run.
    assert store.bulk("default", [{"_op_type": "update", "_index": store.alias, "_id": mid, "doc": {"enrichment": {"status": "done"}}}],
                      "unmark", refresh="true") == [None]
    fresh = _manual_worker(make_client(index_prefix=prefix))
    assert fresh.scan(quick=True) == 0
    assert fresh.looks.due(time.monotonic(), backlog=True) == "full"
    assert fresh.scan() == 1 and fresh.looks.caught_up  # found, and the scan came back short: quick ones from now on
    fresh.process(fresh._take())
    m = memory(api, mid)
    assert m["enrichment"]["status"] == "done" and {"entity:people:bob", "entity:places:madrid"} <= set(m["tags"])
    assert "entity:places:tokyo" not in m["tags"]


def test_status_shape_and_auth(make_client):
    api = enriched_api(make_client)
    mem(api, "Caroline went to a LGBTQ support group.")
    body = settle(api)
    resp = api.get("/enrichment/status")
    assert resp.status_code == 200
    body = resp.json()
    assert {"status", "queue_size", "pending", "inflight", "max_attempts", "stats", "classification", "circuit"} <= set(body)
    assert body["status"] == "running" and body["max_attempts"] == 3
    assert body["circuit"] == {"open": False, "circuit_open_skips": 0, "recoveries": 0}
    assert body["classification"]["llm_attempts"] == 0 and body["classification"]["llm_successes"] == 0
    assert {"processed_total", "successes", "failures", "last_success_id", "last_success_at", "last_error", "last_error_at"} <= set(body["stats"])
    assert api.get("/enrichment/status", headers={"Authorization": "Bearer wrong"}).status_code == 401
    off = make_client()
    assert off.get("/enrichment/status").json()["status"] == "stopped"


def test_reprocess_body_and_query_forms(make_client):
    api = enriched_api(make_client)
    a = mem(api, "Jon teaches dance in Paris.")
    b = mem(api, "Gina sells dresses.")
    settle(api)
    before = memory(api, a)["enrichment"]["enriched_at"]
    resp = api.post("/enrichment/reprocess", json={"ids": [a, "no-such-memory"]}, headers=ADMIN_H)
    assert resp.status_code == 202, resp.text
    assert resp.json() == {"status": "queued", "count": 1, "ids": [a], "missing": ["no-such-memory"]}
    settle(api)
    after = memory(api, a)["enrichment"]
    assert after["enriched_at"] > before and after["forced"] is True  # forced: enriched again though up to date
    resp = api.post(f"/enrichment/reprocess?ids={a},{b}", headers=ADMIN_H)
    assert resp.status_code == 202 and resp.json()["count"] == 2 and resp.json()["ids"] == sorted([a, b])


def test_reenrich_command_marks_the_bank_and_the_worker_redoes_it(make_client, capsys, caplog):
    # What an upgrade of the extractor needs: every stored memory enriched again, vectors kept.
    api = enriched_api(make_client)
    ids = [mem(api, f"Went to see the Denver Broncos play, game {i}.") for i in range(4)]
    theirs = api.post("/memory", json={"content": "Another bank's memory."}, headers={"X-Bank": "b"}).json()["memory_id"]
    status = settle(api)
    before = {mid: memory(api, mid)["enrichment"]["enriched_at"] for mid in ids}
    assert status["older_rules"] == 0 and {memory(api, mid)["enrichment"]["rules"] for mid in ids} == {EXTRACTION_RULES}
    # One enriched by the edition before: the status counts it, start-up names its bank.
    store = api.app.state.enrichment.memories
    older = [{"_op_type": "update", "_index": store.alias, "_id": ids[0], "doc": {"enrichment": {"rules": EXTRACTION_RULES - 1}}}]
    assert store.bulk("default", older, "make an older edition") == [None]
    store.refresh_now()
    assert api.app.state.enrichment.status("default")["older_rules"] == 1
    with caplog.at_level(logging.WARNING, logger="engram.reenrich"):
        assert warn_older_rules(store) == {"default": 1}
    assert "banks default (1) were enriched by an older edition" in caplog.text
    s = api.app.state.settings
    engine = ["--url", s.opensearch_url, "--prefix", s.index_prefix, "--json", "--no-progress"]
    assert main(["reenrich", *engine, "--limit", "1"]) == 0
    assert json.loads(capsys.readouterr().out) == {"status": "complete", "bank": "default", "marked": 1, "failed": 0, "total": 1}
    assert main(["reenrich", *engine]) == 0
    assert json.loads(capsys.readouterr().out)["marked"] == 4
    store.refresh_now()
    pending = {"bool": {"filter": [{"term": {"enrichment.status": "pending"}}, {"term": {"enrichment.forced": True}}]}}
    assert store.ids_matching(pending) == sorted(ids)  # not bank b's
    assert store.count({"bool": {"filter": [{"terms": {"id": ids}}, C.HAS_VECTOR]}}) == 4  # the updates carried the vectors
    # No nudge: the idle worker's quick scan (ScanSchedule) finds the marks by itself.
    deadline = time.monotonic() + 30
    while store.count(pending) and time.monotonic() < deadline:
        time.sleep(0.2)
        store.refresh_now()
    settle(api)
    for mid in ids:
        m = memory(api, mid)
        assert m["enrichment"]["status"] == "done" and m["enrichment"]["enriched_at"] > before[mid]
        assert "entity:organizations:denver-broncos" in m["tags"]
    assert api.app.state.enrichment.status("default")["older_rules"] == 0
    assert api.get(f"/memory/{theirs}", headers={"X-Bank": "b"}).json()["memory"]["enrichment"]["status"] == "done"


def test_reenrich_wait_follows_the_worker_until_the_bank_is_enriched(make_client, capsys):
    api = enriched_api(make_client)
    ids = [mem(api, f"Met Priya at the Boston Dynamics lab, visit {i}.") for i in range(3)]
    settle(api)
    before = {mid: memory(api, mid)["enrichment"]["enriched_at"] for mid in ids}
    s = api.app.state.settings
    args = ["reenrich", "--url", s.opensearch_url, "--prefix", s.index_prefix, "--json", "--no-progress", "--wait"]
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out) == {"status": "complete", "bank": "default", "marked": 3, "failed": 0, "total": 3, "remaining": 0,
                                                   "stored": {"pending": 0, "done": 3, "failed": 0}}
    for mid in ids:  # returned only once the worker had enriched them again
        assert memory(api, mid)["enrichment"]["enriched_at"] > before[mid]


def test_reenrich_wait_gives_up_when_no_worker_enriches(make_client, caplog):
    api = make_client()  # enrichment off: nothing takes the marks
    ids = [mem(api, f"Note {i}") for i in range(2)]
    store = api.app.state.memories
    assert reenrich(store, "default").processed == len(ids)
    mem(api, "Written after the marking")  # pending too (never enriched), but not the wait's to count
    store.refresh_now()
    done = []
    with caplog.at_level(logging.WARNING, logger="engram.reenrich"):
        assert wait_enriched(store, "default", progress=done.append, stall=0.5, poll=0.1) == len(ids)
    assert done == [] and "is the service running, with ENRICHMENT_ENABLED=true?" in caplog.text


def test_reprocess_hostile_inputs(make_client):
    api = make_client(enrichment_reprocess_max=3)
    mid = mem(api, "x")
    post = lambda headers=ADMIN_H, **kw: api.post("/enrichment/reprocess", headers=headers, **kw)  # noqa: E731
    assert_error(post(json={}), 400, "No memory ids")
    assert_error(post(json={"ids": []}), 400, "No memory ids")
    assert_error(post(json={"ids": "  , ,"}), 400, "No memory ids")
    assert_error(post(json=[mid]), 400, "object")
    assert_error(post(json={"ids": {"a": 1}}), 400, "list")
    assert_error(post(json={"ids": [1, 2]}), 400, "invalid memory id")
    assert_error(post(json={"ids": [["nested", ["deeper"]]]}), 400, "invalid memory id")
    raw = lambda text: post(content=text.encode(), headers={**ADMIN_H, "Content-Type": "application/json"})  # noqa: E731
    assert_error(raw('{"ids": ["\\ud800"]}'), 400, "invalid memory id")
    assert_error(raw('{"ids": [NaN]}'), 400)
    assert_error(raw('{"ids": ' + "[" * 5000 + "]" * 5000 + "}"), 400)
    assert_error(post(json={"ids": ["a" * 500]}), 400, "invalid memory id")
    assert_error(post(json={"ids": ["a", "b", "c", "d"]}), 400, "at most 3")
    assert_error(post(content=b"{not json", headers={**ADMIN_H, "Content-Type": "application/json"}), 400)
    assert_error(api.post("/enrichment/reprocess", json={"ids": [mid]}), 403, "Admin")
    resp = post(json={"ids": [mid, mid]})  # duplicates count once; the worker is off: pending in the engine
    assert resp.status_code == 202 and resp.json()["count"] == 1
    assert memory(api, mid)["enrichment"]["status"] == "pending"


def test_hostile_memories_are_enriched_or_fail_cleanly(make_client):
    api = enriched_api(make_client)
    odd = [
        mem(api, "Zoë met José in Zürich \U0001F600 and \u202eevil"),
        mem(api, ("Caroline went home. " * 1000)[:19_000]),
        mem(api, "x", metadata={"session_id": {"nested": [1, {"deep": True}]}, "thread_id": float("1e308")}),
        mem(api, "'''\"\"\" `` ' \" [ ] ( ) - — :"),
        mem(api, "NaN Infinity null true"),
    ]
    status = settle(api)  # (lone surrogates in content: the extractor's unit tests; the write path refuses them)
    assert status["stats"]["failures"] == 0 and status["stored"]["done"] == len(odd)
    assert "entity:people:caroline" in memory(api, odd[1])["tags"]
    assert memory(api, odd[2])["enrichment"]["scope"] == "tags:"  # no usable thread id, no tags


def test_the_worker_rests_while_clients_are_served(make_client):
    # ENRICHMENT_DUTY_WHILE_SERVING=0.25: after each batch, three times its duration of rest.
    api = enriched_api(make_client, enrichment_duty_while_serving=0.25, enrichment_batch_size=4)
    for i in range(12):
        api.post("/memory", json={"content": f"Ravi moved the Borealis standup to Thursday, note {i}"})
    stats = settle(api)["stats"]
    assert stats["successes"] == 12
    assert stats["paced_seconds"] > 0  # the API's own requests counted as clients
    assert stats["paced_seconds"] <= 3 * stats["busy_seconds"] + 0.01


def test_the_worker_runs_at_full_speed_when_nobody_is_served(make_client):
    api = enriched_api(make_client, enrichment_duty_while_serving=0.25)
    worker = api.app.state.enrichment
    worker.serving = lambda: False
    for i in range(6):
        api.post("/memory", json={"content": f"Aiko reviewed the Tundra CI logs, note {i}"})
    stats = settle(api)["stats"]
    assert stats["successes"] == 6 and stats["paced_seconds"] == 0
