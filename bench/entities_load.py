"""Enrichment throughput (memories/s) and its effect on concurrent recall latency, over HTTP.

    python -m bench.entities_load                      # 5,000 memories, 300 recalls per phase
    python -m bench.entities_load --size 2000 --queries 200 --workers 1

Phases, against one corpus from bench.corpus (model-embedded up to 10,000 memories), through an
in-process service on a free port (uvicorn, like bench.locomo):
  1. idle:      enrichment off; recall latency (one client, limit 10) — the baseline;
  2. alone:     a service with enrichment on resumes every pending memory at start-up; time until
                none is pending = throughput with nothing else running;
  3. busy:      POST /enrichment/reprocess for every memory (forced re-runs), and the same recalls
                while the worker runs: recall latency under enrichment, and its throughput then.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import threading
import time
from pathlib import Path

import httpx

from bench.corpus import drop_prefix, load, node_url
from bench.locomo import LocalServer, percentile

ROOT = Path(__file__).resolve().parent.parent
TOKEN, ADMIN = "bench-token", "bench-admin"


def queries_from(engine, prefix: str, n: int, seed: int) -> list[str]:
    """Recall queries: the first words of random stored memories (so each has real matches)."""
    rng = random.Random(seed)
    body = {"size": n, "_source": ["content"], "query": {"function_score": {"random_score": {"seed": seed, "field": "_seq_no"}}}}
    hits = engine.search(index=f"{prefix}-memories", body=body)["hits"]["hits"]
    return [" ".join(h["_source"]["content"].split()[: rng.randint(4, 9)]) for h in hits]


def recall_latencies(client: httpx.Client, queries: list[str], stop: threading.Event | None = None) -> list[float]:
    out = []
    for q in queries:
        if stop is not None and stop.is_set():
            break
        started = time.perf_counter()
        resp = client.get("/recall", params={"query": q, "limit": "10"})
        out.append((time.perf_counter() - started) * 1000)
        if resp.status_code != 200:
            raise RuntimeError(f"recall failed: {resp.status_code} {resp.text[:300]}")
    return out


def wait_enriched(client: httpx.Client, expect: int, since: float, timeout: float = 3600) -> dict:
    while True:
        status = client.get("/enrichment/status").json()
        done = status["stats"]["successes"] + status["stats"]["skipped"]
        if done >= expect and not (status["queue_size"] or status["inflight"] or status["pending"]):
            return {"seconds": time.perf_counter() - since, "status": status}
        if time.perf_counter() - since > timeout:
            raise RuntimeError(f"enrichment unfinished after {timeout} s: {status}")
        time.sleep(0.2)


def lat(values: list[float]) -> dict:
    return {"n": len(values), "p50": percentile(values, 50), "p95": percentile(values, 95)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.entities_load", description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=5000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--workers", type=int, default=2, help="ENRICHMENT_WORKERS")
    parser.add_argument("--batch", type=int, default=32, help="ENRICHMENT_BATCH_SIZE")
    parser.add_argument("--url", help="OpenSearch (default OPENSEARCH_URL or the local node)")
    parser.add_argument("--prefix", default=None)
    parser.add_argument("--keep", action="store_true", help="keep the indices afterwards")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    url = node_url(args.url or os.environ.get("OPENSEARCH_URL"))
    prefix = args.prefix or f"bench-enrich-{args.size}"
    from opensearchpy import OpenSearch

    engine = OpenSearch(hosts=[url], timeout=120)
    drop_prefix(engine, prefix)
    print(f"loading {args.size} memories into {prefix} ...", file=sys.stderr)
    load(args.size, prefix=prefix, url=url, vectors="auto")
    common = dict(opensearch_url=url, admin_api_token=ADMIN, enrichment_workers=args.workers, enrichment_batch_size=args.batch,
                  enrichment_idle_sleep_seconds=0.2)
    result: dict = {"size": args.size, "workers": args.workers, "batch": args.batch}
    headers = {"Authorization": f"Bearer {TOKEN}"}

    def client(base: str) -> httpx.Client:
        return httpx.Client(base_url=base, headers=headers, timeout=120)

    with LocalServer(TOKEN, prefix, enrichment_enabled=False, **common) as base, client(base) as http:
        queries = queries_from(engine, prefix, args.queries, seed=11)
        recall_latencies(http, queries[:20])  # warm-up
        result["idle"] = lat(recall_latencies(http, queries))
    print(f"idle recall: {result['idle']}", file=sys.stderr)
    with LocalServer(TOKEN, prefix, enrichment_enabled=True, **common) as base, client(base) as http:
        started = time.perf_counter()  # the service is up (model loaded); its worker resumes the pending memories
        done = wait_enriched(http, args.size, started)
        stats = done["status"]["stats"]
        result["alone"] = {"seconds": done["seconds"], "memories_per_s": args.size / done["seconds"],
                           "memories_per_worker_second": stats["memories_per_worker_second"], "entities": stats["entities"],
                           "similar_edges": stats["similar_edges"], "preceded_edges": stats["preceded_edges"]}
        print(f"alone: {result['alone']}", file=sys.stderr)
        ids = [h["_id"] for h in engine.search(index=f"{prefix}-memories", body={"size": args.size, "_source": False})["hits"]["hits"]]
        before = stats["successes"]
        started = time.perf_counter()
        for i in range(0, len(ids), 1000):
            resp = http.post("/enrichment/reprocess", json={"ids": ids[i : i + 1000]}, headers={"X-Admin-Token": ADMIN})
            assert resp.status_code == 202, resp.text
        stop = threading.Event()
        busy: list[float] = []
        runner = threading.Thread(target=lambda: busy.extend(recall_latencies(http, queries * 20, stop)), daemon=True)
        runner.start()
        done = wait_enriched(http, before + len(ids), started)
        stop.set()
        runner.join()
        result["busy"] = {**lat(busy), "seconds": done["seconds"], "memories_per_s": len(ids) / done["seconds"]}
        print(f"busy: {result['busy']}", file=sys.stderr)
    if not args.keep:
        drop_prefix(engine, prefix)
    out = args.out or ROOT / "bench" / "out" / f"entities-load-{args.size}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    i, a, b = result["idle"], result["alone"], result["busy"]
    print(f"\nenrichment of {args.size} memories ({args.workers} workers, batches of {args.batch})")
    print(f"| phase | recall p50 ms | recall p95 ms | recalls | enrichment memories/s |\n|---|---|---|---|---|")
    print(f"| idle (no enrichment) | {i['p50']:.1f} | {i['p95']:.1f} | {i['n']} | — |")
    print(f"| enrichment alone (first pass) | — | — | 0 | {a['memories_per_s']:.0f} |")
    print(f"| enrichment + recall (forced re-run) | {b['p50']:.1f} | {b['p95']:.1f} | {b['n']} | {b['memories_per_s']:.0f} |")
    print(f"\nwritten to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
