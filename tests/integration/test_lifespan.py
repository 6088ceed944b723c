"""The app's lifespan against the real engine: each run of it stops what it started. A test that serves
an app a TestClient already started runs the lifespan twice on one app; the first run's background
threads used to outlive it (app.state then held the second run's) and tick on after the store was
dropped."""

from __future__ import annotations

from fastapi.testclient import TestClient


def test_each_run_of_the_lifespan_stops_what_it_started(make_client):
    api = make_client(enrichment_enabled=True)
    state = api.app.state
    first = (state.consolidation, state.enrichment)
    with TestClient(api.app):  # a second run on the same app, as tests/integration/live_server.serve does
        second = (state.consolidation, state.enrichment)
        assert second[0] is not first[0] and all(s.thread_alive for s in (first[0], second[0]))
        assert first[1].running and second[1].running
    assert not second[0].thread_alive and not second[1].running
    assert first[0].thread_alive and first[1].running  # the first run's, still serving its client
    api.__exit__(None, None, None)
    assert not first[0].thread_alive and not first[1].running
