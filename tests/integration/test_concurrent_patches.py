"""Concurrent PATCHes of one memory (issue 23 item 9): a version conflict is retried inside the
service, so 160 PATCHes from 16 clients at once all succeed (before: 31 of them got a 503 with no
engine failure behind it), each change lands (the memory holds every client's last key), and the
stored memory keeps its vector."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx

from tests.conftest import AUTH
from tests.integration.live import live_app

CLIENTS, EACH = 16, 10


def test_160_concurrent_patches_of_one_memory_all_succeed(engine_url, embedder, os_client):
    with live_app(engine_url, embedder, os_client) as (app, url):
        with httpx.Client(base_url=url, headers=AUTH, timeout=120) as http:
            mid = http.post("/memory", json={"content": "a memory many clients patch at once", "metadata": {}}).json()["memory_id"]

        def client(n: int) -> list[int]:
            statuses = []
            with httpx.Client(base_url=url, headers=AUTH, timeout=120) as http:
                for i in range(EACH):
                    # metadata is replaced whole by a PATCH; tags are too: each client's own tag names the last write
                    resp = http.patch(f"/memory/{mid}", json={"importance": round((n * EACH + i) / (CLIENTS * EACH), 4), "tags": [f"c{n}-{i}"]})
                    statuses.append(resp.status_code)
            return statuses

        with ThreadPoolExecutor(CLIENTS) as pool:
            statuses = [s for got in pool.map(client, range(CLIENTS)) for s in got]
        assert statuses.count(200) == CLIENTS * EACH, sorted(set(statuses))
        with httpx.Client(base_url=url, headers=AUTH, timeout=60) as http:
            stored = http.get(f"/memory/{mid}").json()["memory"]
            # one client's last write is what stands, whole
            (tag,) = stored["tags"]
            n, i = map(int, tag[1:].split("-"))
            assert stored["importance"] == round((n * EACH + i) / (CLIENTS * EACH), 4)
            hits = http.get("/recall", params={"query": "a memory many clients patch at once", "limit": 1}).json()["results"]
            assert hits[0]["id"] == mid and hits[0]["score_components"]["vector"] > 0.9  # the vector survived every rewrite
