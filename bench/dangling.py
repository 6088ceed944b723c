"""Dangling edges after random concurrent operations, with background enrichment ON (the default).

    python -m bench.dangling --ops 10000                 # the issue's run: 10,000 operations, 8 at a time
    python -m bench.dangling --ops 2000 --seed 7         # a quicker look with another seed

Runs the app in this process (FastAPI's TestClient, real lifespan: the enrichment worker runs) on a
fresh INDEX_PREFIX of OPENSEARCH_URL (default http://127.0.0.1:9250), dropped at the end. A seeded
generator sends OPS operations, WORKERS at a time, on a few recent memories so they race each
other: store (one or a small batch), store-superseding, PATCH (importance and tags, sometimes the
content: the memory is enriched again), delete, delete-by-tag, associate. Contents come from a few
topics and tags from a few sets, so enrichment writes SIMILAR_TO (kNN neighbours) and PRECEDED_BY
(sequences by tag set) edges between memories that are being deleted meanwhile.

Once every operation is answered and the worker is idle, counts the edges of every type and those
with an end that is no stored memory (dangling), and the supersessions naming a missing memory.
Prints one JSON object and writes it to bench/out/dangling.json; exits 1 on any dangling edge,
broken supersession or 5xx.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from opensearchpy import OpenSearch, helpers

OUT = Path(__file__).resolve().parent / "out"
TOKEN = "bench-token"
TOPICS = ["the deploy pipeline for the billing service", "the postgres migration of the orders table",
          "the on-call rotation for the search team", "the quarterly planning of the mobile app"]
TAG_SETS = [["alpha"], ["beta"], ["alpha", "beta"], ["gamma"]]
DOOMED = "doomed"  # only delete-by-tag targets it: one call removes a few memories
KINDS = ["store", "batch", "supersede", "patch", "delete", "delete_tag", "associate"]
WEIGHTS = [28, 6, 6, 20, 18, 4, 18]
RECENT = 40


class World:
    """The ids the generator has seen stored (some deleted since: the races are the point)."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.lock = threading.Lock()

    def pick(self, rng: random.Random) -> str:
        with self.lock:
            return rng.choice(self.ids[-RECENT:]) if self.ids else "none"

    def add(self, *ids: str) -> None:
        with self.lock:
            self.ids.extend(ids)


def memory(rng: random.Random) -> dict:
    tags = list(rng.choice(TAG_SETS)) + ([DOOMED] if rng.random() < 0.15 else [])
    return {"content": f"Note {rng.randrange(10**6)} about {rng.choice(TOPICS)}", "tags": tags}


def operation(http, world: World, rng: random.Random) -> tuple[str, int, str]:
    kind = rng.choices(KINDS, WEIGHTS)[0] if world.ids else "store"
    if kind == "store":
        resp = http.post("/memory", json=memory(rng))
        if resp.status_code == 201:
            world.add(resp.json()["memory_id"])
    elif kind == "batch":
        resp = http.post("/memory/batch", json={"memories": [memory(rng) for _ in range(rng.randint(2, 6))]})
        if resp.status_code == 201:
            world.add(*resp.json()["memory_ids"])
    elif kind == "supersede":
        resp = http.post("/memory", json={**memory(rng), "supersedes": world.pick(rng)})
        if resp.status_code == 201:
            world.add(resp.json()["memory_id"])
    elif kind == "patch":
        body: dict = {"importance": round(rng.random(), 3), "tags": list(rng.choice(TAG_SETS))}
        if rng.random() < 0.5:
            body["content"] = f"Note {rng.randrange(10**6)} about {rng.choice(TOPICS)}, revised"
        resp = http.patch(f"/memory/{world.pick(rng)}", json=body)
    elif kind == "delete":
        resp = http.delete(f"/memory/{world.pick(rng)}")
    elif kind == "delete_tag":
        resp = http.delete("/memory/by-tag", params={"tags": DOOMED})
    else:
        resp = http.post("/associate", json={"memory1_id": world.pick(rng), "memory2_id": world.pick(rng),
                                             "type": rng.choice(["RELATES_TO", "LEADS_TO", "EVOLVED_INTO"]), "strength": 0.5})
    return kind, resp.status_code, resp.text[:200] if resp.status_code >= 500 else ""


def wait_idle(app, timeout: float) -> bool:
    """The worker idle for 3 s in a row (a requeued memory comes back within its back-off)."""
    worker = app.state.enrichment
    deadline, quiet = time.monotonic() + timeout, 0
    while time.monotonic() < deadline:
        quiet = quiet + 1 if worker.idle() else 0
        if quiet >= 30:
            return True
        time.sleep(0.1)
    return False


def census(client: OpenSearch, settings) -> dict:
    """Edges per type, dangling edges per type, supersessions naming a missing memory."""
    client.indices.refresh(index=f"{settings.index_prefix}-*")
    memories = {h["_id"]: h["_source"].get("supersessions") or []
                for h in helpers.scan(client, index=settings.memories_alias, query={"query": {"match_all": {}}}, _source=["supersessions"])}
    edges = [h["_source"] for h in helpers.scan(client, index=settings.edges_alias, query={"query": {"match_all": {}}})]
    dangling = [e for e in edges if e["source_id"] not in memories or e["target_id"] not in memories]
    broken = [(mid, s["by"]) for mid, entries in memories.items() for s in entries if s["by"] not in memories]
    return {
        "memories": len(memories), "edges": len(edges), "edges_by_type": dict(Counter(e["type"] for e in edges)),
        "dangling": len(dangling), "dangling_by_type": dict(Counter(e["type"] for e in dangling)),
        "dangling_examples": [f"{e['source_id']}-{e['type']}->{e['target_id']}" for e in dangling[:5]],
        "broken_supersessions": len(broken),
    }


def run(url: str, ops: int, workers: int, seed: int) -> dict:
    from fastapi.testclient import TestClient

    from service.config import Settings, default_embedding_model
    from service.embedding import Embedder
    from service.main import create_app
    from service.storage.bootstrap import drop_prefix

    prefix = f"dangling-{uuid.uuid4().hex[:8]}"
    # write_refresh=false: writes return at once, so operations overlap more (what the races need).
    settings = Settings(opensearch_url=url, index_prefix=prefix, automem_api_token=TOKEN, enrichment_enabled=True, write_refresh="false")
    client = OpenSearch(hosts=[url], timeout=120)
    app = create_app(settings, embedder=Embedder(default_embedding_model()))
    rng, world, statuses, errors = random.Random(seed), World(), Counter(), []
    started = time.perf_counter()
    try:
        with TestClient(app, raise_server_exceptions=False) as http:
            http.headers.update({"Authorization": f"Bearer {TOKEN}"})
            with ThreadPoolExecutor(workers) as pool:
                seeds = [rng.randrange(1 << 30) for _ in range(ops)]
                for kind, status, text in pool.map(lambda s: operation(http, world, random.Random(s)), seeds):
                    statuses[f"{kind} {status}"] += 1
                    if status >= 500:
                        errors.append(f"{kind} {status}: {text}")
            ran = time.perf_counter() - started
            idle = wait_idle(app, timeout=600)
            result = {"ops": ops, "workers": workers, "seed": seed, "seconds": round(ran, 1), "worker_idle": idle,
                      **census(client, settings), "statuses": dict(sorted(statuses.items())),
                      "server_errors": len(errors), "server_error_examples": errors[:5]}
    finally:
        drop_prefix(client, prefix)
        client.close()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--url", default=os.environ.get("OPENSEARCH_URL", "http://127.0.0.1:9250"))
    args = parser.parse_args(argv)
    result = run(args.url, args.ops, args.workers, args.seed)
    OUT.mkdir(exist_ok=True)
    (OUT / "dangling.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return int(bool(result["dangling"] or result["broken_supersessions"] or result["server_errors"]))


if __name__ == "__main__":
    sys.exit(main())
