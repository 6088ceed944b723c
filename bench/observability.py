"""What metrics and the recall log cost per request: the service as its own process, three ways.

    python -m bench.observability --url http://127.0.0.1:9200 [--requests 400 --rounds 3]

- `off`: METRICS_ENABLED=false (request ids stay: they cannot be turned off);
- `metrics`: the default (the HTTP metrics middleware and the recall stage histograms);
- `metrics+log`: RECALL_LOG_ENABLED=true as well (one document per recall, written in the background).

Each configuration is its own `python -m service` on its own INDEX_PREFIX (`bench-obs-*`, dropped
afterwards) with the same 200 memories; rounds alternate between them so drift in the machine's load
hits all three alike. Sequential requests from one client: GET /health, GET /memory/{id}, GET /recall.
Prints the median and p95 per route and configuration, in ms, and the load average.
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid

import httpx
from opensearchpy import OpenSearch

from bench.serving import TOKEN, ServiceProcess, load_avg
from service.storage.bootstrap import drop_prefix

CONFIGS = {
    "off": {"METRICS_ENABLED": "false"},
    "metrics": {},
    "metrics+log": {"RECALL_LOG_ENABLED": "true"},
}
QUERIES = ["database decision", "deploy on friday", "who owns the billing service", "postgres migration plan"]


def timed(client: httpx.Client, n: int, path: str, params: dict | None = None) -> list[float]:
    out = []
    for _ in range(n):
        started = time.perf_counter()
        resp = client.get(path, params=params)
        out.append((time.perf_counter() - started) * 1000)
        resp.raise_for_status()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.observability", description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="an OpenSearch URL (its own INDEX_PREFIX per configuration, dropped afterwards)")
    parser.add_argument("--requests", type=int, default=400, help="requests per route, configuration and round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    run = uuid.uuid4().hex[:6]
    prefixes = {name: f"bench-obs-{run}-{i}" for i, name in enumerate(CONFIGS)}
    env = {"ENRICHMENT_ENABLED": "false", "CONSOLIDATION_TICK_SECONDS": "0"}
    samples: dict[tuple[str, str], list[float]] = {}
    engine = OpenSearch(hosts=[args.url])
    services = {name: ServiceProcess(args.url, prefixes[name], {**env, **extra}) for name, extra in CONFIGS.items()}
    try:
        bases = {name: svc.__enter__() for name, svc in services.items()}
        ids = {}
        for name, base in bases.items():
            with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as c:
                batch = [{"content": f"memory {i}: {QUERIES[i % len(QUERIES)]} and more words {i}", "tags": ["bench"]} for i in range(200)]
                ids[name] = c.post("/memory/batch", json={"memories": batch}).json()["memory_ids"][0]
        for _ in range(args.rounds):
            for name, base in bases.items():
                with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as c:
                    timed(c, 20, "/health")  # warm the connection
                    samples.setdefault((name, "GET /health"), []).extend(timed(c, args.requests, "/health"))
                    samples.setdefault((name, "GET /memory/{id}"), []).extend(timed(c, args.requests, f"/memory/{ids[name]}"))
                    samples.setdefault((name, "GET /recall"), []).extend(
                        timed(c, args.requests // 4, "/recall", {"query": QUERIES[0], "limit": 5}))
    finally:
        for svc in services.values():
            svc.__exit__(None, None, None)
        for prefix in prefixes.values():
            drop_prefix(engine, prefix)
    print(f"load average {load_avg()}; {args.rounds} rounds; {args.requests} requests per route and round ({args.requests // 4} for /recall)")
    print(f"{'route':18s}" + "".join(f"{name + ' p50':>16s}{name + ' p95':>16s}" for name in CONFIGS))
    for route in ("GET /health", "GET /memory/{id}", "GET /recall"):
        row = f"{route:18s}"
        for name in CONFIGS:
            xs = sorted(samples[(name, route)])
            row += f"{statistics.median(xs):16.2f}{xs[int(len(xs) * 0.95) - 1]:16.2f}"
        print(row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
