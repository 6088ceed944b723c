"""POST /memory throughput with concurrent clients, and POST /memory/batch embedded ingest, per service variant.

    python -m bench.write_throughput                          # unbatched vs micro-batched writes, 3 rounds in turn
    python -m bench.write_throughput --clients 8 --writes 400 --rounds 3
    python -m bench.write_throughput --variant int8:EMBEDDING_BACKEND=onnx-int8 --variant fp32:EMBEDDING_BACKEND=onnx

Each variant is a set of environment settings; every round starts each variant in turn as its own
process (`python -m service`, fresh INDEX_PREFIX, WRITE_REFRESH default, enrichment and consolidation
off so that only the write path runs) against OPENSEARCH_URL or the local node `bench`, so load that
comes and goes on a shared machine hits every variant alike; medians over rounds are reported.
Memory texts are bench.corpus's (40-1,000 characters, median ~250), each text used once. Measured:
- alone: POST /memory one after another, client-side p50 / p95 (what the batcher's window costs a
  writer with nobody to share a model call with);
- concurrent: `--clients` threads POSTing single memories without pause: writes/s, p50 / p95;
- batch: POST /memory/batch of 100, memories/s (embedding included).
Prints a table and writes bench/out/write_throughput.json with the load average of every run.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import threading
import time
import uuid

import httpx

from bench import corpus as C
from bench.serving import OUT, TOKEN, ServiceProcess, load_avg, percentile

BASE_ENV = {"ENRICHMENT_ENABLED": "false", "CONSOLIDATION_TICK_SECONDS": "0"}
VARIANTS = ("unbatched:EMBEDDING_WRITE_BATCHING=false", "batched-2ms:EMBEDDING_WRITE_BATCHING=true,EMBEDDING_BATCH_WINDOW_MS=2",
            "batched-0ms:EMBEDDING_WRITE_BATCHING=true,EMBEDDING_BATCH_WINDOW_MS=0")


def parse_variant(text: str) -> tuple[str, dict[str, str]]:
    name, _, settings = text.partition(":")
    return name, dict(item.split("=", 1) for item in settings.split(",") if item)


def corpus_texts(n: int, seed: int) -> list[str]:
    return [r["content"] for r, _ in C.CorpusGenerator(n, seed=seed).records()]


def _ms(values: list[float]) -> dict:
    return {"p50": round(percentile(values, 50), 1), "p95": round(percentile(values, 95), 1), "n": len(values)}


def run_variant(url: str, env: dict[str, str], texts: list[str], *, alone: int, clients: int, writes: int, batches: int) -> dict:
    feed = iter(texts)
    out: dict = {"load_before": load_avg()}
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with ServiceProcess(url, f"bench-wt-{uuid.uuid4().hex[:6]}", env={**BASE_ENV, **env}) as base, \
            httpx.Client(base_url=base, headers=auth, timeout=120) as http:
        for _ in range(5):  # warm-up: model, connections, first refresh
            assert http.post("/memory", json={"content": next(feed)}).status_code == 201
        lat = []
        for _ in range(alone):
            started = time.perf_counter()
            resp = http.post("/memory", json={"content": next(feed)})
            lat.append((time.perf_counter() - started) * 1000)
            assert resp.status_code == 201, resp.text
        out["alone_ms"] = _ms(lat)

        lock, lat, todo = threading.Lock(), [], iter(list(itertools.islice(feed, writes)))

        def writer() -> None:
            with httpx.Client(base_url=base, headers=auth, timeout=120) as w:
                while True:
                    with lock:
                        text = next(todo, None)
                    if text is None:
                        return
                    started = time.perf_counter()
                    resp = w.post("/memory", json={"content": text})
                    ms = (time.perf_counter() - started) * 1000
                    assert resp.status_code == 201, resp.text
                    with lock:
                        lat.append(ms)

        threads = [threading.Thread(target=writer) for _ in range(clients)]
        started = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        out["concurrent_per_s"] = round(len(lat) / (time.perf_counter() - started), 1)
        out["concurrent_ms"] = _ms(lat)

        chunks = [list(itertools.islice(feed, 100)) for _ in range(batches)]
        started = time.perf_counter()
        for chunk in chunks:
            resp = http.post("/memory/batch", json={"memories": [{"content": t} for t in chunk]})
            assert resp.status_code == 201, resp.text
        out["batch_per_s"] = round(sum(map(len, chunks)) / (time.perf_counter() - started), 1)
    out["load_after"] = load_avg()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.write_throughput", description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", action="append", default=None, metavar="NAME:K=V,K=V",
                        help=f"a service variant (repeatable; default {' '.join(VARIANTS)})")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--writes", type=int, default=400, help="concurrent single writes per run")
    parser.add_argument("--alone", type=int, default=40, help="single writes one after another per run")
    parser.add_argument("--batches", type=int, default=5, help="POST /memory/batch calls of 100 per run")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--url", default=None, help="OpenSearch URL (default: OPENSEARCH_URL or the local node `bench`)")
    args = parser.parse_args(argv)
    variants = [parse_variant(v) for v in (args.variant or VARIANTS)]
    url = C.node_url(args.url)
    per_run = 5 + args.alone + args.writes + 100 * args.batches
    texts = corpus_texts(per_run * args.rounds * len(variants), seed=11)
    runs: dict[str, list[dict]] = {name: [] for name, _ in variants}
    slices = iter(range(0, len(texts), per_run))
    for rnd in range(args.rounds):
        for name, env in variants:
            start = next(slices)
            one = run_variant(url, env, texts[start : start + per_run], alone=args.alone, clients=args.clients, writes=args.writes,
                              batches=args.batches)
            runs[name].append(one)
            print(f"round {rnd + 1} {name}: {json.dumps(one)}", flush=True)

    def med(name: str, *path: str) -> float:
        vals = []
        for r in runs[name]:
            v = r
            for p in path:
                v = v[p]
            vals.append(v)
        return statistics.median(vals)

    OUT.mkdir(parents=True, exist_ok=True)
    report = {"clients": args.clients, "variants": dict(variants), "runs": runs}
    (OUT / "write_throughput.json").write_text(json.dumps(report, indent=2))
    print(f"\nmedians of {args.rounds} rounds, {args.clients} clients")
    print(f"{'variant':14s} {'alone p50':>9s} {'p95':>6s} {f'{args.clients} clients/s':>12s} {'p50':>6s} {'p95':>6s} {'batch/s':>8s}")
    for name, _ in variants:
        print(f"{name:14s} {med(name, 'alone_ms', 'p50'):9.1f} {med(name, 'alone_ms', 'p95'):6.1f} {med(name, 'concurrent_per_s'):12.1f} "
              f"{med(name, 'concurrent_ms', 'p50'):6.1f} {med(name, 'concurrent_ms', 'p95'):6.1f} {med(name, 'batch_per_s'):8.1f}")
    loads = [r["load_before"][0] for rs in runs.values() for r in rs] + [r["load_after"][0] for rs in runs.values() for r in rs]
    print(f"load average (1 min) over the runs: {min(loads)}-{max(loads)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
