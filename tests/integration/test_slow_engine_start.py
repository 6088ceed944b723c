"""A start on a busy engine: creating an index is a cluster-state change that may take longer than
the OPENSEARCH_TIMEOUT a deployment sets for its searches, and must not fail the start."""

from __future__ import annotations

from tests.integration.engine_proxy import EngineProxy


def test_a_slow_index_creation_does_not_fail_a_start_with_a_short_timeout(make_client, engine_url):
    proxy = EngineProxy(engine_url)
    try:
        # Held 1.5 s before the engine sees it, the creation answers after the 1 s search timeout.
        proxy.slow_down(rb"PUT /t[0-9a-f]{10}-memories-v1 ", 1.5)
        api = make_client(opensearch_url=proxy.url, opensearch_timeout=1, write_refresh="true")
        stored = api.post("/memory", json={"content": "Stored once the slow store was made"})
        assert stored.status_code == 201, stored.text
        assert api.get(f"/memory/{stored.json()['memory_id']}").status_code == 200
    finally:
        proxy.close()
