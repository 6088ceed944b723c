"""What reading a recall's page costs the engine, by the way it is read: the stored memories of N
random ids of a stored corpus as a search by ids (in an `_msearch`, as recall sent it, or alone), an
`_mget` with realtime=false (recall's read of a page, service/storage/memories.py `read_sources`) and
a realtime `_mget`. Rounds alternate the ways; the engine's CPU (/proc, the local `bench` node only)
and the wall time per read are printed for each.

    python -m bench.page_read [--url http://127.0.0.1:9250] [--prefix bench-lat-100000] [--reads 1300] [--rounds 4]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable

import httpx

from bench.cpu import cpu_seconds
from bench.latency import local_node_pid


def ways(http: httpx.Client, index: str) -> dict[str, Callable[[list[str]], object]]:
    def search_body(ids: list[str]) -> dict:
        return {"size": len(ids), "query": {"ids": {"values": ids}}, "track_total_hits": False, "_source": True}

    def msearch(ids: list[str]) -> None:
        lines = json.dumps({"index": index}) + "\n" + json.dumps(search_body(ids)) + "\n"
        http.post("/_msearch", content=lines, headers={"content-type": "application/x-ndjson"}).raise_for_status()

    def search(ids: list[str]) -> None:
        http.post(f"/{index}/_search", json=search_body(ids)).raise_for_status()

    def mget(ids: list[str]) -> None:
        http.post(f"/{index}/_mget", params={"realtime": "false"}, json={"ids": ids}).raise_for_status()

    def mget_realtime(ids: list[str]) -> None:
        http.post(f"/{index}/_mget", json={"ids": ids}).raise_for_status()

    return {"_msearch by ids": msearch, "_search by ids": search, "_mget realtime=false": mget, "_mget realtime": mget_realtime}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.page_read", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="http://127.0.0.1:9250")
    parser.add_argument("--prefix", default="bench-lat-100000", help="the corpus (bench.latency stores bench-lat-<size>)")
    parser.add_argument("--page", type=int, default=10, help="memories per read (a recall's limit)")
    parser.add_argument("--reads", type=int, default=1300, help="reads per way and round")
    parser.add_argument("--rounds", type=int, default=4, help="rounds; the first warms the engine and is not reported")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    index = f"{args.prefix}-memories-v1"
    pid = local_node_pid(args.url)
    if pid is None:
        print(f"{args.url} is not the local bench node: its CPU cannot be read", file=sys.stderr)
        return 2
    with httpx.Client(base_url=args.url, timeout=60) as http:
        resp = http.post(f"/{index}/_search", json={"size": 5000, "_source": False, "query": {"match_all": {}}})
        if resp.status_code != 200:
            print(f"cannot read {index}: {resp.status_code} {resp.text[:200]}", file=sys.stderr)
            return 2
        ids = [h["_id"] for h in resp.json()["hits"]["hits"]]
        if len(ids) < args.page:
            print(f"{index} holds {len(ids)} memories, fewer than a page", file=sys.stderr)
            return 2
        rng = random.Random(args.seed)
        pages = [rng.sample(ids, args.page) for _ in range(args.reads)]
        figures: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for round_no in range(args.rounds):
            for name, read in ways(http, index).items():
                cpu, wall = cpu_seconds(pid), time.perf_counter()
                for page in pages:
                    read(page)
                cpu_ms = (cpu_seconds(pid) - cpu) * 1000 / len(pages)
                wall_ms = (time.perf_counter() - wall) * 1000 / len(pages)
                if round_no:
                    figures[name].append((cpu_ms, wall_ms))
                print(f"round {round_no}{' (warm-up)' if not round_no else ''}  {name:22s} engine CPU {cpu_ms:.3f} ms  wall {wall_ms:.3f} ms a read")
    print(f"\n{index}, {args.page} memories a read, {args.reads} reads a way and round; median of rounds 1-{args.rounds - 1}:")
    for name, rows in figures.items():
        print(f"  {name:22s} engine CPU {statistics.median(r[0] for r in rows):.3f} ms  wall {statistics.median(r[1] for r in rows):.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
