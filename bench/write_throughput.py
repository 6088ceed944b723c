"""POST /memory throughput with concurrent clients, and POST /memory/batch embedded ingest, per service variant.

    python -m bench.write_throughput                          # unbatched vs micro-batched writes, 3 rounds in turn
    python -m bench.write_throughput --clients 8 --writes 400 --rounds 3
    python -m bench.write_throughput --variant int8:EMBEDDING_BACKEND=onnx-int8 --variant fp32:EMBEDDING_BACKEND=onnx
    python -m bench.write_throughput --texts locomo --alone 0 --writes 0 --batches 7 --variant new: --variant old:ROOT=../main

Each variant is a set of environment settings; `ROOT=<checkout>` among them runs that checkout's
service instead of this one's (two versions of the code, A/B in the same rounds);every round starts each variant in turn as its own
process (`python -m service`, fresh INDEX_PREFIX, WRITE_REFRESH default, enrichment and consolidation
off so that only the write path runs) against OPENSEARCH_URL or the local node `bench`, so load that
comes and goes on a shared machine hits every variant alike; medians over rounds are reported.
Memory texts are bench.corpus's (40-1,000 characters, median ~250) or, with `--texts locomo`, the
LoCoMo dev slice's 788 turns as bench.locomo stores them (median ~100 characters, with their tags,
metadata and timestamps; cycled when a run needs more); each text used once per run. Measured:
- alone: POST /memory one after another, client-side p50 / p95 (what the batcher's window costs a
  writer with nobody to share a model call with);
- concurrent: `--clients` threads POSTing single memories without pause: writes/s, p50 / p95;
- batch: POST /memory/batch of 100, memories/s (embedding included), and the service's CPU per
  memory meanwhile (all its threads, /proc; the engine's too with --engine-pid, on a node of
  its own: a shared node's CPU is everyone's);
- with enrichment on (a variant's ENRICHMENT_ENABLED=true): the batches' memories/s until the
  background enrichment has caught up too (`enriched_per_s`, end to end), the CPU per memory over
  that whole time, and the engine's time per memory by operation (`engine_ms`: index, query,
  fetch, refresh, merge, get; /_nodes/_local/stats, so again only on a node of its own).
`--alone 0` / `--writes 0` skip those parts. Each run's indices are dropped after it.
Prints a table and writes bench/out/write_throughput.json with the load average of every run.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
from opensearchpy import OpenSearch
from pydantic import TypeAdapter

from bench import corpus as C
from bench.cpu import cpu_seconds, machine, machine_line
from bench.locomo import wait_for_enrichment
from bench.serving import OUT, ROOT, TOKEN, ServiceProcess, load_avg, percentile, run_load

AUTH = {"Authorization": f"Bearer {TOKEN}"}
BASE_ENV = {"ENRICHMENT_ENABLED": "false", "CONSOLIDATION_TICK_SECONDS": "0"}
VARIANTS = ("unbatched:EMBEDDING_WRITE_BATCHING=false", "batched-2ms:EMBEDDING_WRITE_BATCHING=true,EMBEDDING_BATCH_WINDOW_MS=2",
            "batched-0ms:EMBEDDING_WRITE_BATCHING=true,EMBEDDING_BATCH_WINDOW_MS=0")


def parse_variant(text: str) -> tuple[str, dict[str, str]]:
    name, _, settings = text.partition(":")
    return name, dict(item.split("=", 1) for item in settings.split(",") if item)


def corpus_texts(n: int, seed: int) -> list[dict]:
    return [{"content": r["content"]} for r, _ in C.CorpusGenerator(n, seed=seed).records()]


def locomo_texts(n: int) -> list[dict]:
    """The LoCoMo dev slice's turns as bench.locomo stores them, without their ids, cycled to n."""
    from bench.locomo import DEFAULT_DATA, memories_for

    turns = [{k: v for k, v in m.items() if k != "id"} for sample in json.loads(DEFAULT_DATA.read_text()) for m in memories_for(sample)]
    return list(itertools.islice(itertools.cycle(turns), n))


# /_nodes/_local/stats: the engine's time by operation (ms), and the operation each counts.
ENGINE_OPS = {"index": ("indexing", "index_time_in_millis"), "query": ("search", "query_time_in_millis"),
              "fetch": ("search", "fetch_time_in_millis"), "refresh": ("refresh", "total_time_in_millis"),
              "merge": ("merges", "total_time_in_millis"), "get": ("get", "time_in_millis")}


def engine_op_ms(engine) -> dict[str, int]:
    """The local node's total time per operation so far (ms; every index of the node)."""
    node = next(iter(engine.nodes.stats(node_id="_local", metric="indices")["nodes"].values()))
    return {op: int(node["indices"][group][field]) for op, (group, field) in ENGINE_OPS.items()}


def _ms(values: list[float]) -> dict:
    return {"p50": round(percentile(values, 50), 1), "p95": round(percentile(values, 95), 1), "n": len(values)}


def run_variant(url: str, env: dict[str, str], texts: list[dict], *, alone: int, clients: int, writes: int, batches: int,
                engine_pid: int | None = None, prefix: str = "bench-wt") -> dict:
    feed = iter(texts)
    out: dict = {"load_before": load_avg()}
    env = {**BASE_ENV, **env}
    root = Path(env.pop("ROOT", ROOT)).resolve()
    enriched = TypeAdapter(bool).validate_python(env["ENRICHMENT_ENABLED"])  # read as the service's Settings read it
    run_prefix = f"{prefix}-{uuid.uuid4().hex[:6]}"
    svc = ServiceProcess(url, run_prefix, env=env, tree=root)
    engine = OpenSearch(hosts=[url], timeout=120)
    try:
        with svc as base, httpx.Client(base_url=base, headers=AUTH, timeout=120) as http:
            for _ in range(5):  # warm-up: model, connections, first refresh
                assert http.post("/memory", json=next(feed)).status_code == 201
            out.update(single_writes(http, feed, alone=alone, clients=clients, writes=writes))
            chunks = [list(itertools.islice(feed, 100)) for _ in range(batches)]
            if any(chunks):
                out.update(batch_writes(http, chunks, svc.proc.pid, engine_pid, engine if enriched else None))
    finally:
        C.drop_prefix(engine, run_prefix)
        engine.close()
    out["load_after"] = load_avg()
    return out


def single_writes(http: httpx.Client, feed: Iterator[dict], *, alone: int, clients: int, writes: int) -> dict:
    """POST /memory: `alone` one after another, then `writes` from `clients` threads at once."""
    out: dict = {}
    lat = []
    for _ in range(alone):
        started = time.perf_counter()
        resp = http.post("/memory", json=next(feed))
        lat.append((time.perf_counter() - started) * 1000)
        assert resp.status_code == 201, resp.text
    if alone:
        out["alone_ms"] = _ms(lat)
    if not writes:
        return out

    def write(text: dict) -> None:
        resp = http.post("/memory", json=text)  # httpx.Client is thread-safe: one pooled connection per thread
        assert resp.status_code == 201, resp.text

    lat, _, wall = run_load(write, list(itertools.islice(feed, writes)), clients)
    out["concurrent_per_s"] = round(len(lat) / wall, 1)
    out["concurrent_ms"] = _ms(lat)
    return out


def batch_writes(http: httpx.Client, chunks: list[list[dict]], service_pid: int, engine_pid: int | None, engine) -> dict:
    """POST /memory/batch of each chunk: memories/s and CPU per memory; with `engine` (enrichment on),
    the same until enrichment has caught up, and the engine's time per memory by operation."""
    out: dict = {}
    n = sum(map(len, chunks))
    pids = {"service": service_pid, "engine": engine_pid}
    cpu = {who: cpu_seconds(pid) for who, pid in pids.items()}
    ops_before = engine_op_ms(engine) if engine is not None else {}
    started = time.perf_counter()

    def figures(label: str) -> None:
        out[f"{label}_per_s"] = round(n / (time.perf_counter() - started), 1)
        for who, before in cpu.items():
            after = cpu_seconds(pids[who])
            if before is not None and after is not None:
                out[f"{label}_{who}_cpu_ms"] = round((after - before) / n * 1000, 2)

    for chunk in chunks:
        resp = http.post("/memory/batch", json={"memories": chunk})
        assert resp.status_code == 201, resp.text
    figures("batch")
    if engine is not None:
        wait_for_enrichment(http)
        figures("enriched")
        ops_after = engine_op_ms(engine)
        out["engine_ms"] = {op: round((ops_after[op] - ops_before[op]) / n, 2) for op in ENGINE_OPS}
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
    parser.add_argument("--texts", choices=["corpus", "locomo"], default="corpus")
    parser.add_argument("--engine-pid", type=int, default=None, help="the engine's pid: its CPU per memory of the batch part")
    parser.add_argument("--prefix", default="bench-wt", help="INDEX_PREFIX stem of the services (each run adds a suffix)")
    args = parser.parse_args(argv)
    variants = [parse_variant(v) for v in (args.variant or VARIANTS)]
    url = C.node_url(args.url)
    per_run = 5 + args.alone + args.writes + 100 * args.batches
    total = per_run * args.rounds * len(variants)
    texts = corpus_texts(total, seed=11) if args.texts == "corpus" else locomo_texts(total)
    runs: dict[str, list[dict]] = {name: [] for name, _ in variants}
    slices = iter(range(0, len(texts), per_run))
    for rnd in range(args.rounds):
        for name, env in variants:
            start = next(slices)
            one = run_variant(url, env, texts[start : start + per_run], alone=args.alone, clients=args.clients, writes=args.writes,
                              batches=args.batches, engine_pid=args.engine_pid, prefix=args.prefix)
            runs[name].append(one)
            print(f"round {rnd + 1} {name}: {json.dumps(one)}", flush=True)

    def med(name: str, *path: str) -> float:
        vals = []
        for r in runs[name]:
            v = r
            for p in path:
                v = v.get(p, {}) if isinstance(v, dict) else v
            vals.append(v if isinstance(v, (int, float)) else float("nan"))
        return statistics.median(vals)

    OUT.mkdir(parents=True, exist_ok=True)
    report = {"clients": args.clients, "texts": args.texts, "machine": machine(), "variants": dict(variants), "runs": runs}
    (OUT / "write_throughput.json").write_text(json.dumps(report, indent=2))
    print(f"\n{machine_line(report['machine'])}")
    print(f"medians of {args.rounds} rounds, {args.clients} clients, {args.texts} texts")
    print(f"{'variant':14s} {'alone p50':>9s} {'p95':>6s} {f'{args.clients} clients/s':>12s} {'p50':>6s} {'p95':>6s} {'batch/s':>8s}"
          f" {'service CPU ms':>14s} {'engine CPU ms':>13s}")
    for name, _ in variants:
        print(f"{name:14s} {med(name, 'alone_ms', 'p50'):9.1f} {med(name, 'alone_ms', 'p95'):6.1f} {med(name, 'concurrent_per_s'):12.1f} "
              f"{med(name, 'concurrent_ms', 'p50'):6.1f} {med(name, 'concurrent_ms', 'p95'):6.1f} {med(name, 'batch_per_s'):8.1f}"
              f" {med(name, 'batch_service_cpu_ms'):14.2f} {med(name, 'batch_engine_cpu_ms'):13.2f}")
        print(f"{'':14s} batch/s per round: {[r.get('batch_per_s') for r in runs[name]]}")
        if any("enriched_per_s" in r for r in runs[name]):
            ops = ", ".join(f"{op} {med(name, 'engine_ms', op):.2f}" for op in ENGINE_OPS)
            print(f"{'':14s} until enriched: {med(name, 'enriched_per_s'):.1f} memories/s, CPU ms per memory service"
                  f" {med(name, 'enriched_service_cpu_ms'):.2f} engine {med(name, 'enriched_engine_cpu_ms'):.2f};"
                  f" engine ms per memory by operation: {ops}")
    loads = [r["load_before"][0] for rs in runs.values() for r in rs] + [r["load_after"][0] for rs in runs.values() for r in rs]
    print(f"load average (1 min) over the runs: {min(loads)}-{max(loads)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
