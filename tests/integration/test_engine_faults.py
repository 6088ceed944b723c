"""kill -9 of the engine under concurrent writers, then a restart.

Its own node (not the session's). Writers retry every 503 with the same Idempotency-Key, as a
client following the 503's advice would. Afterwards: no acknowledged write is lost, none is stored
twice, no request answered 500 or another 5xx than 503, every 503 said what happened, and the
service recovered without being restarted.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections import Counter

import pytest

from service.config import Settings
from service.engine.local_node import LocalNode
from service.main import create_app

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("ENGRAM_TEST_OPENSEARCH_URL") or os.environ.get("ENGRAM_TEST_ENGINE")),
    reason="needs the local node launcher",
)

WRITERS = 4
KILL_AFTER_S = 4.0
DOWN_FOR_S = 2.0
RUN_FOR_S = 40.0


def test_kill_9_under_writers_loses_nothing_and_duplicates_nothing(embedder):
    from fastapi.testclient import TestClient

    node = LocalNode(f"faults-{os.getpid()}", heap="512m")
    node.wipe()
    try:
        settings = Settings(opensearch_url=node.start(), automem_api_token="t", index_prefix="faults", opensearch_timeout=5)
        with TestClient(create_app(settings, embedder=embedder), raise_server_exceptions=False) as api:
            api.headers["Authorization"] = "Bearer t"
            acknowledged: dict[str, str] = {}  # content -> id
            statuses: Counter = Counter()
            bad_messages: list[str] = []
            lock = threading.Lock()
            stop = threading.Event()
            restarted_at: list[float] = []
            first_ok_after_restart: list[float] = []

            def writer(n: int) -> None:
                i = 0
                while not stop.is_set():
                    content, key = f"writer {n} write {i}", str(uuid.uuid4())
                    batch = i % 5 == 4
                    while not stop.is_set():  # retry the same logical write until it is acknowledged
                        if batch:
                            resp = api.post("/memory/batch", json={"memories": [{"content": content}]}, headers={"Idempotency-Key": key})
                        else:
                            resp = api.post("/memory", json={"content": content}, headers={"Idempotency-Key": key})
                        with lock:
                            statuses[resp.status_code] += 1
                            if resp.status_code == 201:
                                body = resp.json()
                                acknowledged[content] = body["memory_ids"][0] if batch else body["memory_id"]
                                if restarted_at and not first_ok_after_restart:
                                    first_ok_after_restart.append(time.monotonic())
                            elif resp.status_code == 503:
                                if "OpenSearch" not in resp.json().get("message", ""):
                                    bad_messages.append(resp.text)
                            else:
                                bad_messages.append(f"{resp.status_code} {resp.text}")
                        if resp.status_code == 201:
                            break
                        time.sleep(0.2)
                    i += 1

            threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
            started = time.monotonic()
            for t in threads:
                t.start()
            time.sleep(KILL_AFTER_S)
            assert node.stop(kill=True)
            time.sleep(DOWN_FOR_S)
            restart_began = time.monotonic()
            assert node.start() == settings.opensearch_url  # the same port, so the service's client reconnects
            restarted_at.append(time.monotonic())  # the node answers health (yellow) again
            while time.monotonic() - started < RUN_FOR_S and not first_ok_after_restart:
                time.sleep(0.5)
            time.sleep(3)  # some writes after recovery too
            stop.set()
            for t in threads:
                t.join(timeout=60)

            assert bad_messages == []
            assert set(statuses) <= {201, 503}, statuses
            assert first_ok_after_restart, "the service did not recover by itself"
            api.app.state.memories.refresh_now()
            lost = [c for c, mid in acknowledged.items() if api.get(f"/memory/{mid}").status_code != 200]
            total = api.app.state.memories.count()
            print(
                f"\nacknowledged {len(acknowledged)}, lost {len(lost)}, stored {total} "
                f"(duplicates {total - len(acknowledged)}), statuses {dict(statuses)}, "
                f"node restart took {restarted_at[0] - restart_began:.1f} s, first acknowledged write "
                f"{first_ok_after_restart[0] - restarted_at[0]:.1f} s after the node was healthy"
            )
            assert lost == []
            # Every stored memory is one acknowledged write: retries stored nothing twice. (A write
            # still being retried when the writers stopped may be stored unacknowledged: at most one
            # per writer.)
            assert len(acknowledged) <= total <= len(acknowledged) + WRITERS
    finally:
        node.wipe()
