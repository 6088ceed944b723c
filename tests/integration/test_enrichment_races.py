"""Enrichment racing deletes, against the real engine: no SIMILAR_TO or PRECEDED_BY edge outlives a
memory deleted while the worker was planning or writing it (service/enrichment/edges.py).

The worker is driven one batch at a time (no background threads) and the delete is sent through the
API at the exact step of the race; bench/dangling.py runs the same races at random, 10,000 operations."""

from __future__ import annotations

from opensearchpy import helpers

from service.enrichment.gazetteer import load_gazetteer
from service.enrichment.jobs import Job
from tests.integration.support import mem

THREAD = {"thread_id": "race"}


def dangling(api) -> list[str]:
    settings = api.app.state.settings
    client = api.app.state.client
    client.indices.refresh(index=f"{settings.index_prefix}-*")
    alive = {h["_id"] for h in helpers.scan(client, index=settings.memories_alias, query={"query": {"match_all": {}}}, _source=False)}
    edges = [h["_source"] for h in helpers.scan(client, index=settings.edges_alias, query={"query": {"match_all": {}}})]
    return [f"{e['source_id']}-{e['type']}->{e['target_id']}" for e in edges if e["source_id"] not in alive or e["target_id"] not in alive]


def two_neighbours(api):
    """`earlier` enriched (a PRECEDED_BY neighbour for later ones of its thread), `later` to enrich:
    similar contents, so `later`'s plan holds SIMILAR_TO both ways and PRECEDED_BY to `earlier`."""
    worker = api.app.state.enrichment
    worker.gazetteer = load_gazetteer()
    earlier = mem(api, "We decided to use PostgreSQL for the primary database.", metadata=THREAD, timestamp="2025-01-01T00:00:00Z")
    worker.process([Job(earlier)])
    later = mem(api, "Decision: PostgreSQL is our primary database.", metadata=THREAD, timestamp="2025-01-02T00:00:00Z")
    return worker, earlier, later


def test_a_neighbour_deleted_after_planning_gets_no_edge(make_client, monkeypatch):
    api = make_client()  # no background threads: the test drives the batch
    worker, earlier, later = two_neighbours(api)
    planned = worker._neighbours

    def delete_meanwhile(subjects, exclude, bank):
        found = planned(subjects, exclude, bank)
        assert found[0][later].id == earlier  # planned: later -PRECEDED_BY-> earlier
        assert api.delete(f"/memory/{earlier}").status_code == 200
        return found

    monkeypatch.setattr(worker, "_neighbours", delete_meanwhile)
    written: list[dict] = []
    upsert = worker.edges.upsert_many
    monkeypatch.setattr(worker.edges, "upsert_many", lambda bank, edges, now: written.extend(edges) or upsert(bank, edges, now))
    worker.process([Job(later)])
    assert worker.stats.successes == 2  # the memory itself is enriched
    assert [e for e in written if earlier in (e["source_id"], e["target_id"])] == []
    assert dangling(api) == []


def test_a_memory_deleted_while_its_edges_are_written_loses_them(make_client, monkeypatch):
    """The delete (memory, then its edge sweep) runs entirely between the worker's check of the ends
    and its write: the sweep saw nothing, so the worker's check after the write takes the edges back."""
    api = make_client()
    worker, earlier, later = two_neighbours(api)
    upsert = worker.edges.upsert_many

    def delete_then_write(bank, edges, now):
        if any(earlier in (e["source_id"], e["target_id"]) for e in edges):
            assert api.delete(f"/memory/{earlier}").status_code == 200
        return upsert(bank, edges, now)

    monkeypatch.setattr(worker.edges, "upsert_many", delete_then_write)
    worker.process([Job(later)])
    assert dangling(api) == []
    assert worker.stats.edges_taken_back == 3  # SIMILAR_TO both ways and PRECEDED_BY
    assert api.get(f"/memory/{later}").json()["memory"]["enrichment"]["status"] == "done"
