"""Durability: an acknowledged write survives a kill -9 of the engine and a restart.

Runs its own node (not the session's), so killing it disturbs no other test.
"""

from __future__ import annotations

import os
import time

import pytest

from service.engine.local_node import LocalNode

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("ENGRAM_TEST_OPENSEARCH_URL") or os.environ.get("ENGRAM_TEST_ENGINE")),
    reason="needs the local node launcher",
)


@pytest.fixture
def own_node():
    node = LocalNode(f"restart-{os.getpid()}", heap="512m")
    node.wipe()
    yield node
    node.wipe()


def test_acknowledged_writes_survive_kill_and_restart(own_node, embedder):
    from fastapi.testclient import TestClient

    from service.config import Settings
    from service.main import create_app

    started = time.monotonic()
    url = own_node.start()
    first_start = time.monotonic() - started
    settings = Settings(opensearch_url=url, automem_api_token="t", index_prefix="durable")
    headers = {"Authorization": "Bearer t"}
    with TestClient(create_app(settings, embedder=embedder)) as api:
        one = api.post("/memory", json={"content": "The launch code is in the blue folder", "tags": ["ops"]}, headers=headers)
        assert one.status_code == 201
        batch = api.post("/memory/batch", json={"memories": [{"content": f"batch memory {i}"} for i in range(20)]}, headers=headers)
        assert batch.status_code == 201
        ids = [one.json()["memory_id"], *batch.json()["memory_ids"]]

    assert own_node.stop(kill=True)  # SIGKILL: no flush, no clean shutdown
    settings = settings.model_copy(update={"opensearch_url": own_node.start()})  # the port may differ

    with TestClient(create_app(settings, embedder=embedder)) as api:
        for memory_id in ids:
            got = api.get(f"/memory/{memory_id}", headers=headers)
            assert got.status_code == 200, memory_id
        assert api.get(f"/memory/{ids[0]}", headers=headers).json()["memory"]["content"] == "The launch code is in the blue folder"
        recall = api.get("/recall", params={"query": "where is the launch code"}, headers=headers).json()
        assert recall["results"][0]["id"] == ids[0]
    print(f"node first start {first_start:.1f} s")
