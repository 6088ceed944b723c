"""Mixed load: many clients recalling and storing at once, against the service as its own process.

    python -m bench.load                          # 50 clients, 60 s, 80% recall / 20% store
    python -m bench.load --clients 8 --seconds 20 --store-share 0.5

Seeds SEED_MEMORIES memories (texts from bench.corpus) into a fresh INDEX_PREFIX on the local node
`bench` (or OPENSEARCH_URL), starts `python -m service` on a free port, then runs the clients as
asyncio tasks of one process (httpx, keep-alive; one connection per client) for the given time.
Prints throughput, p50/p95/p99 per operation and the answers by status; writes bench/out/load.json.
Other processes on the machine skew the figures: the load average is recorded before and after.
The clients share the machine with the service (one process, asyncio). The enrichment worker is off
unless --enrichment (it would spend the run enriching the seeded corpus); the seeded indices are
dropped afterwards unless --keep.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import time
from collections import Counter
from datetime import datetime, timezone

import httpx

from bench import corpus as C
from bench.serving import OUT, TOKEN, ServiceProcess, load_avg, percentile

SEED_MEMORIES = 2_000
QUERY_WORDS = ("deploy", "database", "postgres", "meeting", "budget", "release", "customer", "latency", "design", "review",
               "incident", "roadmap", "hiring", "migration", "security", "backup", "python", "search", "memory", "agent")


async def client_loop(http: httpx.AsyncClient, rng: random.Random, until: float, store_share: float, out: list, statuses: Counter, texts: list[str]) -> None:
    while time.monotonic() < until:
        store = rng.random() < store_share
        started = time.perf_counter()
        try:
            if store:
                resp = await http.post("/memory", json={"content": rng.choice(texts), "tags": [f"load:{rng.randrange(20)}"]})
            else:
                query = " ".join(rng.sample(QUERY_WORDS, 3))
                params = {"query": query, "limit": "10"}
                if rng.random() < 0.3:
                    params["tags"] = f"load:{rng.randrange(20)}"
                resp = await http.get("/recall", params=params)
            status = resp.status_code
        except httpx.HTTPError as exc:
            status = type(exc).__name__
        elapsed = (time.perf_counter() - started) * 1000
        out.append(("store" if store else "recall", elapsed, status))
        statuses[status] += 1


async def run(base: str, clients: int, seconds: float, store_share: float, texts: list[str], seed: int) -> tuple[list, Counter, float]:
    out: list = []
    statuses: Counter = Counter()
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120, limits=limits) as http:
        started = time.monotonic()
        until = started + seconds
        await asyncio.gather(*(client_loop(http, random.Random(seed + i), until, store_share, out, statuses, texts) for i in range(clients)))
        wall = time.monotonic() - started
    return out, statuses, wall


def report(samples: list, statuses: Counter, wall: float, args) -> dict:
    result: dict = {
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"), "clients": args.clients, "seconds": args.seconds,
        "store_share": args.store_share, "wall_s": round(wall, 1), "requests": len(samples),
        "throughput_rps": round(len(samples) / wall, 1), "statuses": {str(k): v for k, v in sorted(statuses.items(), key=str)},
    }
    for op in ("recall", "store"):
        ok = [ms for kind, ms, status in samples if kind == op and status in (200, 201)]
        result[op] = {
            "n": len(ok), "rps": round(len(ok) / wall, 1),
            **{f"p{p}": round(percentile(ok, p), 1) for p in (50, 95, 99)},
        }
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.load", description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--store-share", type=float, default=0.2, help="share of requests that store (default 0.2)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--url", default=os.environ.get("OPENSEARCH_URL"), help="OpenSearch URL (default: OPENSEARCH_URL or the local node `bench`)")
    parser.add_argument("--enrichment", action="store_true",
                        help="run the enrichment worker too (off by default: it would spend the run enriching the seeded corpus)")
    parser.add_argument("--keep", action="store_true", help="keep the seeded indices (INDEX_PREFIX bench-load) afterwards")
    args = parser.parse_args(argv)

    OUT.mkdir(parents=True, exist_ok=True)
    url = C.node_url(args.url)
    prefix = "bench-load"
    from service.embedding import Embedder
    from service.config import default_embedding_model

    embedder = Embedder(default_embedding_model())
    C.load(SEED_MEMORIES, prefix=prefix, url=url, vectors="model", seed=args.seed, embedder=embedder)
    texts = [record["content"] for record, _ in C.CorpusGenerator(500, seed=args.seed + 1).records()]
    before = load_avg()
    try:
        with ServiceProcess(url, prefix, env={"ENRICHMENT_ENABLED": "true" if args.enrichment else "false"}) as base:
            samples, statuses, wall = asyncio.run(run(base, args.clients, args.seconds, args.store_share, texts, args.seed))
    finally:
        if not args.keep:
            from opensearchpy import OpenSearch

            engine = OpenSearch([url], timeout=60)
            C.drop_prefix(engine, prefix)
            engine.close()
    result = report(samples, statuses, wall, args)
    result["enrichment"] = args.enrichment
    result["load_average"] = {"before": before, "after": load_avg()}
    (OUT / "load.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
