"""Recall latency against the bare engine: GET /recall vs the same arms sent straight to OpenSearch.

    python -m bench.latency                                  # 10k and 100k memories, concurrency 1 and 8
    python -m bench.latency --sizes 1000000 --queries 100    # the long 1M run (loads ~1M memories first)
    python -m bench.latency --sizes 10000 --concurrency 1 --queries 50   # a quick look
    python -m bench.latency --defaults --url http://127.0.0.1:9250     # default settings, LoCoMo questions (bench/latency_defaults.py)

For each corpus size it (re)uses a corpus in the dedicated local node `bench` (2 GB heap, INDEX_PREFIX
`bench-lat-<size>`; built with bench.corpus when missing), starts the service as its own process
(`python -m service`, EMBEDDING_BACKEND from the environment, default the service's) and, per query kind
(see bench/queries.py) and per concurrency:

- `recall`: GET /recall over HTTP (keep-alive), client-side latency, plus the server's query_time_ms;
- `bare`:  the `_msearch` that the same recall sent to OpenSearch, captured from the service's own
  pipeline (RecallService with a recording transport, so the arms are identical by construction),
  pre-encoded and POSTed straight to the engine from this machine; the response is decoded (orjson);
- `bare_all`: every engine request that recall made (the _msearch, graph expansion and state
  lookups, the last_accessed bulk), one after the other — the floor with no Python at all.

For `recall` and `bare` it also reads the CPU time each process spent during the run (bench/cpu.py):
CPU ms per request of the service, the engine (the local node, also when --url is its address) and this client.
On a machine where all three share the cores, that bounds throughput better than latency does.

The ratio recall / bare (p50 and p95) is the main figure. Results go to bench/out/latency.json
(sizes measured earlier are kept, so the 1M run adds to the 10k/100k one), latency.md and latency.png.
Other processes on the machine skew latencies: the report records the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import orjson
from tqdm import tqdm

from bench import corpus as C
from bench.cpu import CpuMeter, machine, machine_line
from bench.latency_report import chart, cpu_cell, markdown
from bench.queries import KINDS, Query, build
from bench.serving import OUT, TOKEN, ServiceProcess, load_avg, percentile, run_load, summary

WARMUP = 15


# --- capturing the engine requests of one recall ----------------------------------------------------
class Recorder:
    """Wraps transport.perform_request; records (method, url, params, body) while `calls` is a list."""

    def __init__(self, transport):
        self.inner = transport.perform_request
        self.calls: list[tuple] | None = None
        transport.perform_request = self

    def __call__(self, method, url, params=None, body=None, timeout=None, ignore=(), headers=None):
        if self.calls is not None:
            self.calls.append((method, url, {k: v.decode() if isinstance(v, bytes) else v for k, v in (params or {}).items()}, body))
        return self.inner(method, url, params=params, body=body, timeout=timeout, ignore=ignore, headers=headers)


def encode_body(body: Any) -> bytes:
    if body is None:
        return b""
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    return orjson.dumps(body)


def capture(url: str, prefix: str, queries: list[Query]) -> list[list[tuple[str, str, dict, bytes]]]:
    """For each query, the engine requests the service's own recall pipeline makes for it."""
    from service.config import Settings
    from service.api.automem.recall_models import RecallQuery
    from service.recall.pipeline import RecallService
    from service.storage.client import make_client
    from service.storage.edges import EdgeStore
    from service.storage.memories import MemoryStore

    settings = Settings(opensearch_url=url, index_prefix=prefix)
    client = make_client(url, settings)
    recorder = Recorder(client.transport)
    dimension = len(next(q.embedding for q in queries if q.embedding))

    class NoEmbedder:  # every captured query carries its embedding; the pipeline must not embed
        def __init__(self):
            self.dimension = dimension

        def embed_query(self, text):
            raise AssertionError("capture queries carry their embedding")

    memories = MemoryStore(client, settings.memories_alias, refresh=settings.write_refresh, access_resolution_s=settings.recall_access_resolution_seconds)
    edges = EdgeStore(client, settings.edges_alias, refresh=settings.write_refresh)
    service = RecallService(settings, memories, NoEmbedder(), edges)  # type: ignore[arg-type]
    out = []
    for q in queries:
        now = datetime.now(timezone.utc)
        params = RecallQuery.model_validate(q.recall_params(with_embedding=True)).to_request(settings, dimension=dimension, now=now, bank=settings.default_bank)
        recorder.calls = []
        service.recall(params, now)
        out.append([(m, u, p, encode_body(b)) for m, u, p, b in recorder.calls])
        recorder.calls = None
    client.close()
    return out


def recall_fn(http: httpx.Client, queries: list[Query], *, with_embedding: bool) -> Callable[[Query], dict]:
    # Like the bare side's pre-encoded bodies, each URL (384 floats in its query string when the
    # embedding is given) is encoded and parsed before the timed calls: httpx parses a ~5 KB URL
    # string in ~1.6 ms per request, client time the bare side does not pay.
    urls = {id(q): http.base_url.join("/recall?" + urlencode(q.recall_params(with_embedding=with_embedding))) for q in queries}

    def call(q: Query) -> dict:
        r = http.get(urls[id(q)])
        if r.status_code != 200:
            raise RuntimeError(f"recall failed: {r.status_code} {r.text[:300]}")
        body = orjson.loads(r.content)
        return {"query_time_ms": body.get("query_time_ms"), "timings": body.get("timings") or {}, "bytes": len(r.content)}

    return call


def bare_fn(engine: httpx.Client, *, msearch_only: bool) -> Callable[[list], None]:
    def call(requests: list) -> None:
        for method, url, params, body in requests:
            if msearch_only and not url.endswith("_msearch"):
                continue
            ctype = "application/x-ndjson" if url.endswith(("_msearch", "_bulk")) else "application/json"
            r = engine.request(method, url, params=params, content=body, headers={"content-type": ctype})
            if r.status_code >= 300:
                raise RuntimeError(f"engine {url}: {r.status_code} {r.text[:300]}")
            orjson.loads(r.content)
        return None

    return call


# --- engine footprint ------------------------------------------------------------------------------
def engine_footprint(url: str, prefix: str) -> dict:
    with httpx.Client(base_url=url, timeout=60) as h:
        indices = h.get(f"/_cat/indices/{prefix}-*", params={"format": "json", "bytes": "b"}).json()
        nodes = h.get("/_nodes/stats/jvm,indices").json()["nodes"]
        segs = h.get(f"/_cat/segments/{prefix}-memories-*", params={"format": "json"}).json()
    node = next(iter(nodes.values()))
    mem = next(i for i in indices if "-memories-" in i["index"])
    edges = next((i for i in indices if "-edges-" in i["index"]), None)
    return {
        "memories_docs": int(mem["docs.count"]), "memories_bytes": int(mem["store.size"]),
        "edges_docs": int(edges["docs.count"]) if edges else 0, "edges_bytes": int(edges["store.size"]) if edges else 0,
        "segments": len(segs), "memories_docs_deleted": int(mem["docs.deleted"]),
        "heap_used_bytes": node["jvm"]["mem"]["heap_used_in_bytes"], "heap_max_bytes": node["jvm"]["mem"]["heap_max_in_bytes"],
        "old_gen_used_bytes": node["jvm"]["mem"]["pools"].get("old", {}).get("used_in_bytes"),
        "segments_memory_bytes": node["indices"]["segments"].get("memory_in_bytes"),
    }


def local_node_pid(url: str | None = None) -> int | None:
    """The local node `bench`'s JVM; with `url`, only when that is the node's address (its CPU is
    read from /proc: an engine elsewhere has none to read)."""
    from service.engine.local_node import LocalNode

    node = LocalNode(C.NODE_NAME)
    state = node._state()
    if not state or (url is not None and url.rstrip("/") != node.url):
        return None
    return state["pid"]


def jvm_rss_bytes(url: str | None = None) -> int | None:
    """Resident memory of the local bench node's JVM (heap + off-heap + the mapped index files it touched)."""
    pid = local_node_pid(url)
    if pid is None:
        return None
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


# --- one corpus size ------------------------------------------------------------------------------
def ensure_corpus(url: str, prefix: str, size: int, vectors: str, embedder, *, fresh: bool = False) -> dict | None:
    with httpx.Client(base_url=url, timeout=60) as h:
        r = h.get(f"/{prefix}-memories/_count")
        if not fresh and r.status_code == 200 and r.json()["count"] == size:
            return None
    return C.load(size, prefix=prefix, url=url, vectors=vectors, embedder=embedder)


def one_segment(url: str, prefix: str) -> None:
    """Merge the memories index into one segment, so every run measures the same index. A bulk load
    leaves several segments, and recalls' access tracking leaves deleted documents and small segments
    behind (30 of them after a few runs doubled the bare _msearch's p50: each segment is searched on
    its own). Blocks until done: ~1 min at 100k on 2 cores."""
    with httpx.Client(base_url=url, timeout=3600) as h:
        h.post(f"/{prefix}-memories/_refresh")
        segments = h.get(f"/_cat/segments/{prefix}-memories", params={"format": "json"}).json()
        if len(segments) > 1 or any(int(seg.get("docs.deleted") or 0) for seg in segments):
            print(f"merging {prefix} into one segment ({len(segments)} now) ...", file=sys.stderr)
            h.post(f"/{prefix}-memories/_forcemerge", params={"max_num_segments": "1"})
            # Searches see the merged segment only after a refresh: without one, a run measured the
            # old segments (20 of them once) although the merge had ended.
            h.post(f"/{prefix}-memories/_refresh")
            segments = h.get(f"/_cat/segments/{prefix}-memories", params={"format": "json"}).json()
            print(f"{prefix}: {len(segments)} segment(s) searched after the merge", file=sys.stderr)


def measure_size(args, url: str, size: int, queries: list[Query], embedder) -> dict:
    prefix = f"{args.prefix}-{size}"
    started = time.perf_counter()
    loaded = ensure_corpus(url, prefix, size, args.vectors, embedder, fresh=args.fresh)
    if loaded:
        print(f"loaded {size:,} memories in {loaded['seconds']:.0f} s ({loaded['memories_per_s']:.0f}/s)", file=sys.stderr)
    one_segment(url, prefix)
    result: dict[str, Any] = {"size": size, "prefix": prefix, "load": loaded, "load_avg_before": load_avg(), "kinds": {}}
    # The footprint of the corpus as loaded; recalls then rewrite the memories they return
    # (last_accessed), which leaves deleted documents behind until merges reclaim them.
    result["footprint_loaded"] = engine_footprint(url, prefix)
    result["footprint_loaded"]["jvm_rss_bytes"] = jvm_rss_bytes(args.url)
    by_kind = {k: [q for q in queries if q.kind == k] for k in KINDS if k in args.kinds}
    print(f"capturing the engine requests of {sum(len(v) for v in by_kind.values())} recalls ...", file=sys.stderr)
    captured = {k: capture(url, prefix, qs) for k, qs in by_kind.items()}
    result["requests_per_recall"] = {k: round(statistics.fmean(len(c) for c in v), 2) for k, v in captured.items()}
    result["msearch_arms"] = {
        k: round(statistics.fmean(b.count(b"\n") // 2 for c in v for m, u, p, b in c if u.endswith("_msearch")), 1) for k, v in captured.items()
    }
    limits = httpx.Limits(max_connections=32, max_keepalive_connections=32)
    # The enrichment worker would work through the corpus's backlog (every loaded memory is pending)
    # during the measurement: at 100k it held ~1.5 of the 2 cores and doubled both sides' latency.
    svc = ServiceProcess(url, prefix, env={"EMBEDDING_BACKEND": args.backend, "ENRICHMENT_ENABLED": "true" if args.enrichment else "false"})
    engine_pid = local_node_pid(args.url)
    with svc as base, \
            httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120, limits=limits) as http, \
            httpx.Client(base_url=url, timeout=120, limits=limits) as engine:
        for conc in args.concurrency:
            for kind, qs in by_kind.items():
                reqs = captured[kind]
                warm, rest = qs[:WARMUP], qs[WARMUP:]
                warm_reqs, rest_reqs = reqs[:WARMUP], reqs[WARMUP:]
                if kind == "embed":  # distinct texts per concurrency: the query cache never answers
                    half = len(rest) // len(args.concurrency)
                    i = args.concurrency.index(conc)
                    rest, rest_reqs = rest[i * half : (i + 1) * half], rest_reqs[i * half : (i + 1) * half]
                with_emb = kind != "embed"
                desc = f"{size:,} {kind} c={conc}"
                run_load(recall_fn(http, warm, with_embedding=True), warm, 1)  # warm-up (embedding given: caches stay cold for embed)
                run_load(bare_fn(engine, msearch_only=True), warm_reqs, 1)
                bar = tqdm(total=3, desc=desc, file=sys.stderr, leave=False)
                meter = CpuMeter({"service": svc.proc.pid, "engine": engine_pid, "client": os.getpid()})
                lat, srv, wall = run_load(recall_fn(http, rest, with_embedding=with_emb), rest, conc)
                recall_cpu = meter.per_request(len(rest))
                bar.update()
                meter = CpuMeter({"engine": engine_pid, "client": os.getpid()})
                blat, _, bwall = run_load(bare_fn(engine, msearch_only=True), rest_reqs, conc)
                bare_cpu = meter.per_request(len(rest_reqs))
                bar.update()
                alat, _, awall = run_load(bare_fn(engine, msearch_only=False), rest_reqs, conc)
                bar.update()
                bar.close()
                stages = sorted({k for x in srv for k in x["timings"]})
                row = {
                    "recall": summary(lat, wall),
                    "server_query_time_ms": summary([x["query_time_ms"] for x in srv if x["query_time_ms"] is not None], wall),
                    "server_stages_p50_ms": {k: round(percentile([x["timings"].get(k, 0.0) for x in srv], 50), 2) for k in stages},
                    "response_bytes_p50": percentile([x["bytes"] for x in srv], 50),
                    "bare": summary(blat, bwall), "bare_all": summary(alat, awall),
                    # CPU ms per request of each process during the run (bench/cpu.py).
                    "cpu_ms_per_recall": recall_cpu, "cpu_ms_per_bare": bare_cpu,
                }
                row["ratio_p50"] = round(row["recall"]["p50"] / row["bare"]["p50"], 2)
                row["ratio_p95"] = round(row["recall"]["p95"] / row["bare"]["p95"], 2)
                row["ratio_all_p50"] = round(row["recall"]["p50"] / row["bare_all"]["p50"], 2)
                result["kinds"].setdefault(kind, {})[str(conc)] = row
                r = row["recall"]
                print(f"{desc:28s} recall p50 {r['p50']:7.1f} p95 {r['p95']:7.1f} ms {r['qps']:6.1f}/s | bare p50 {row['bare']['p50']:6.1f} "
                      f"p95 {row['bare']['p95']:6.1f} | ratio p50 {row['ratio_p50']:.2f} p95 {row['ratio_p95']:.2f} | CPU ms/recall service "
                      f"{cpu_cell(row, 'cpu_ms_per_recall', 'service')} engine {cpu_cell(row, 'cpu_ms_per_recall', 'engine')}", file=sys.stderr)
        result["service_peak_rss_mb"] = svc.peak_rss_mb()
    result["footprint"] = engine_footprint(url, prefix)
    result["footprint"]["jvm_rss_bytes"] = jvm_rss_bytes(args.url)
    result["load_avg_after"] = load_avg()
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--defaults" in argv:  # the service as configured by default, natural-language questions (bench/latency_defaults.py)
        from bench import latency_defaults

        return latency_defaults.main([a for a in argv if a != "--defaults"])

    from service.config import Settings

    parser = argparse.ArgumentParser(prog="python -m bench.latency", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated corpus sizes (default 10000,100000)")
    parser.add_argument("--concurrency", default="1,8", help="comma-separated client counts (default 1,8)")
    parser.add_argument("--queries", type=int, default=215, help="queries per kind, the first 15 are warm-up (default 215)")
    parser.add_argument("--kinds", default=",".join(KINDS), help=f"query kinds (default {','.join(KINDS)})")
    parser.add_argument("--vectors", choices=["auto", "model", "synthetic"], default="auto", help="corpus vectors when a corpus must be built")
    parser.add_argument("--fresh", action="store_true", help="rebuild the corpora even when they exist (recalls leave deleted documents behind)")
    parser.add_argument("--prefix", default="bench-lat", help="INDEX_PREFIX stem; the corpus of size N lives in <prefix>-N")
    parser.add_argument("--url", help=f"OpenSearch URL (default: the local node {C.NODE_NAME!r}, started with a {C.NODE_HEAP} heap)")
    parser.add_argument("--backend", default=os.environ.get("EMBEDDING_BACKEND", Settings.model_fields["embedding_backend"].default),
                        help="EMBEDDING_BACKEND of the service (default: the service's)")
    parser.add_argument("--enrichment", action="store_true", help="keep the service's enrichment worker on (it works through the corpus's backlog meanwhile)")
    parser.add_argument("--out", type=Path, default=OUT / "latency.json")
    args = parser.parse_args(argv)
    args.sizes_list = [int(s) for s in args.sizes.split(",") if s]
    args.concurrency = [int(c) for c in args.concurrency.split(",") if c]
    args.kinds = [k for k in args.kinds.split(",") if k]
    OUT.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    from service.embedding import Embedder

    url = C.node_url(args.url)
    s = Settings()
    embedder = Embedder(s.embedding_model, backend=args.backend)
    queries = build(args.queries, embedder)
    results = json.loads(args.out.read_text()) if args.out.is_file() else {"sizes": {}}
    results.update(
        machine=machine(), backend=args.backend, queries_per_kind=args.queries,
        warmup=WARMUP, node=C.NODE_NAME if not args.url else args.url,
    )
    for size in args.sizes_list:
        started = time.perf_counter()
        results["sizes"][str(size)] = measure_size(args, url, size, queries, embedder)
        results["sizes"][str(size)]["measured_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        results["sizes"][str(size)]["machine"] = results["machine"]  # sizes kept from earlier runs keep theirs
        print(f"{size:,}: done in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    table = machine_line(results["machine"]) + "\n\n" + markdown(results)
    (args.out.with_suffix(".md")).write_text(table + "\n")
    charted = chart(results, args.out.with_suffix(".png"))
    print(table)
    print(f"\nwritten: {args.out}, {args.out.with_suffix('.md')}" + (f", {args.out.with_suffix('.png')}" if charted else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
