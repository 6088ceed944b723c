"""When one machine is not enough: a three-node cluster, one node killed under load and brought back.

    python -m bench.cluster                           # 3 nodes, 50 clients, 90 s, kill -9 at 30 s for 20 s
    python -m bench.cluster --clients 8 --seconds 40 --kill-after 10 --down 10

Starts three OpenSearch nodes on loopback from the local engine (service.engine.local_node, 512 MB heap each,
one cluster), the service as its own process with OPENSEARCH_URL naming all three and
INDEX_REPLICAS=1, seeds memories, then runs the clients (80% recall / 20% store) while node 2 is
killed with SIGKILL and restarted. Clients retry a 503 or a broken connection up to RETRIES times,
writes with the same Idempotency-Key, as the 503 message advises. Reports failed requests after
retries, lost acknowledged writes, duplicates, latency before / during / after the loss and the time
until the cluster is green again; writes bench/out/cluster.json. The nodes are wiped afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
import uuid
from collections import Counter

import httpx

from bench.serving import OUT, TOKEN, ServiceProcess, load_avg, percentile
from service.engine.local_node import LocalNode, cluster_health, free_port

NODES = 3
HEAP = "512m"
RETRIES = 5
BACKOFF_S = 0.5
TAG = "cluster-bench"
WORDS = ("deploy", "database", "meeting", "budget", "release", "customer", "latency", "design", "incident", "roadmap")


def start_cluster() -> list[LocalNode]:
    names = [f"cluster-{i}" for i in range(1, NODES + 1)]
    transports = [free_port() for _ in names]
    seeds = tuple(f"127.0.0.1:{p}" for p in transports)
    nodes = [
        LocalNode(name, port=free_port(), heap=HEAP, cluster="bench-cluster", transport_port=tp, seed_hosts=seeds, initial_managers=tuple(names))
        for name, tp in zip(names, transports)
    ]
    for node in nodes:
        node.wipe()
        node.start(wait=False)
    wait_green(nodes, timeout=240)
    return nodes


def wait_green(nodes: list[LocalNode], timeout: float, status: tuple[str, ...] = ("green",)) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        for node in nodes:
            health = cluster_health(node.url) if node.url else None
            if health and health.get("number_of_nodes") == len(nodes) and health.get("status") in status:
                return time.monotonic() - started
        time.sleep(0.5)
    raise RuntimeError(f"the cluster was not {'/'.join(status)} with {len(nodes)} nodes within {timeout:.0f} s")


async def request(http: httpx.AsyncClient, method: str, path: str, **kwargs) -> tuple[int | str, int]:
    """(final status, attempts): retried on 503 and broken connections."""
    for attempt in range(1, RETRIES + 1):
        try:
            resp = await http.request(method, path, **kwargs)
            if resp.status_code != 503:
                return resp.status_code, attempt
            status: int | str = 503
        except httpx.HTTPError as exc:
            status = type(exc).__name__
        await asyncio.sleep(BACKOFF_S * attempt)
    return status, RETRIES


async def client_loop(http, rng, until, samples, acknowledged) -> None:
    while time.monotonic() < until:
        started = time.monotonic()
        if rng.random() < 0.2:
            content = f"cluster memory {uuid.uuid4().hex} about the {rng.choice(WORDS)}"
            key = str(uuid.uuid4())
            status, attempts = await request(http, "POST", "/memory", json={"content": content, "tags": [TAG]}, headers={"Idempotency-Key": key})
            if status == 201:
                acknowledged.append(content)
            op = "store"
        else:
            status, attempts = await request(http, "GET", "/recall", params={"query": " ".join(rng.sample(WORDS, 2)), "limit": "10"})
            op = "recall"
        samples.append((started, op, status, attempts, (time.monotonic() - started) * 1000))


async def run_load(base: str, clients: int, seconds: float, events: dict) -> tuple[list, list]:
    samples: list = []
    acknowledged: list[str] = []
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60, limits=limits) as http:
        until = time.monotonic() + seconds
        await asyncio.gather(*(client_loop(http, random.Random(i), until, samples, acknowledged) for i in range(clients)))
    return samples, acknowledged


def phase_stats(samples: list, start: float, end: float) -> dict:
    ok = [ms for t, _, status, _, ms in samples if start <= t < end and status in (200, 201)]
    return {"requests": len(ok), "p50_ms": round(percentile(ok, 50), 1), "p95_ms": round(percentile(ok, 95), 1), "p99_ms": round(percentile(ok, 99), 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cluster", description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=90.0)
    parser.add_argument("--kill-after", type=float, default=30.0)
    parser.add_argument("--down", type=float, default=20.0, help="seconds node 2 stays down")
    args = parser.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    before = load_avg()
    print("starting a 3-node cluster ...", flush=True)
    nodes = start_cluster()
    events: dict = {}
    try:
        url = ",".join(n.url for n in nodes)
        env = {"INDEX_REPLICAS": "1", "ENRICHMENT_ENABLED": "false", "CONSOLIDATION_TICK_SECONDS": "0", "OPENSEARCH_TIMEOUT": "10"}
        with ServiceProcess(url, "bench-cluster", env=env) as base:
            with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http:
                for b in range(5):
                    http.post("/memory/batch", json={"memories": [{"content": f"seed {b}-{i} on the {WORDS[i % len(WORDS)]}", "tags": ["seed"]} for i in range(100)]})
            wait_green(nodes, timeout=120)
            t0 = time.monotonic()

            async def scenario():
                load = asyncio.create_task(run_load(base, args.clients, args.seconds, events))
                await asyncio.sleep(args.kill_after)
                events["killed"] = time.monotonic()
                nodes[1].stop(kill=True)
                print(f"killed node 2 at {events['killed'] - t0:.1f} s", flush=True)
                await asyncio.sleep(args.down)
                events["restarted"] = time.monotonic()
                await asyncio.to_thread(nodes[1].start, wait=False)
                events["green_after_s"] = await asyncio.to_thread(wait_green, nodes, 300)
                print(f"node 2 back; cluster green {events['green_after_s']:.1f} s after the restart", flush=True)
                return await load

            samples, acknowledged = asyncio.run(scenario())
            with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http:
                stored: Counter = Counter()
                offset = 0
                while True:
                    page = http.get("/memory/by-tag", params={"tags": TAG, "limit": 200, "offset": offset}).json()
                    stored.update(m["content"] for m in page["memories"])
                    offset += page["count"]
                    if not page["has_more"]:
                        break
        killed, restarted = events["killed"], events["restarted"]
        result = {
            "clients": args.clients, "seconds": args.seconds, "kill_after": args.kill_after, "down_s": args.down,
            "requests": len(samples),
            "failed_after_retries": dict(Counter(str(s) for _, _, s, _, _ in samples if s not in (200, 201))),
            "retried_requests": sum(1 for *_, a, _ in samples if a > 1),
            "acknowledged_writes": len(acknowledged),
            "lost_acknowledged": sum(1 for c in acknowledged if stored[c] == 0),
            "duplicates": sum(n - 1 for n in stored.values() if n > 1),
            "before": phase_stats(samples, 0, killed), "during_loss": phase_stats(samples, killed, restarted),
            "after": phase_stats(samples, restarted, float("inf")),
            "green_after_restart_s": round(events["green_after_s"], 1),
            "load_average": {"before": before, "after": load_avg()},
        }
    finally:
        for node in nodes:
            node.wipe()
    (OUT / "cluster.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
