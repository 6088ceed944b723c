"""What Signet's recall surface costs on top of the recall pipeline: AutoMem's GET /recall vs POST
/api/memory/recall, sessionless and with session dedupe (a fresh session each call, one long session
whose ledger grows, includeRecalled), on the same corpus and queries.

    python -m bench.signet --url http://127.0.0.1:9200                # 1,000 memories, 40 queries
    python -m bench.signet --url $OPENSEARCH_URL --size 5000 --queries 100

The service runs in process (FastAPI's TestClient, no HTTP), against its own INDEX_PREFIX
(`bench-signet-<pid>`, deleted afterwards). Each mode runs every query once after a warm-up; the
modes take turns query by query, in a rotating order, and the query vectors are computed beforehand,
so no mode pays the embedding: the figures are retrieval, ranking and the ledger. The report gives
the server's time to the response (meta.timings.totalMs; GET /recall's query_time_ms), the client's
(which includes the access-tracking write that TestClient waits for and a server sends after the
response), the ledger's read and write stages, the mean `suppressed`, each stage's p50, and the load
average (other work on the machine skews latency). Results also go to bench/out/signet.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from tqdm import tqdm

from bench.corpus import CorpusGenerator
from bench.serving import percentile
from bench.queries import QUESTION_TEMPLATES
from service.storage.bootstrap import drop_prefix

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
TOKEN = "bench-token"
BATCH = 200


def load(api, size: int) -> None:
    records = [{k: v for k, v in r.items() if k != "associations"} for r, _ in CorpusGenerator(size, seed=5).records()]
    for start in tqdm(range(0, len(records), BATCH), desc="load (embedding)", unit="batch"):
        resp = api.post("/memory/batch", json={"memories": records[start : start + BATCH]})
        resp.raise_for_status()


def questions(n: int) -> list[str]:
    gen = CorpusGenerator(50, seed=9)
    out = []
    for i in range(n):
        cluster = gen.clusters[i % len(gen.clusters)]
        out.append(QUESTION_TEMPLATES[i % len(QUESTION_TEMPLATES)].format(**gen._slots(cluster)))
    return out


def call(api, mode: str, i: int, q: str) -> tuple[float, dict | None]:
    started = time.perf_counter()
    if mode == "automem GET /recall":
        resp = api.get("/recall", params={"query": q, "limit": 10})
    else:
        body: dict[str, Any] = {"query": q, "limit": 10}
        if mode == "signet, fresh session each call":
            body["sessionKey"] = f"fresh-{i}-{os.getpid()}"
        elif mode == "signet, one long session":
            body["sessionKey"] = "long"
        elif mode == "signet, long session, includeRecalled":
            body.update(sessionKey="long-included", includeRecalled=True)
        resp = api.post("/api/memory/recall", json=body)
    elapsed = (time.perf_counter() - started) * 1000
    resp.raise_for_status()
    body = resp.json()
    meta = body.get("meta") or {"timings": {"totalMs": body["query_time_ms"], "stages": []}}
    return elapsed, meta


def summary(mode: str, samples: list[tuple[float, dict | None]]) -> dict[str, Any]:
    wall = [ms for ms, _ in samples]
    server = [m["timings"]["totalMs"] for _, m in samples]
    out = {"mode": mode, "n": len(wall), "p50": percentile(wall, 50), "p95": percentile(wall, 95), "mean": statistics.fmean(wall),
           "server_p50": percentile(server, 50), "server_p95": percentile(server, 95)}
    stages = [{s["name"]: s["durationMs"] for s in m["timings"]["stages"]} for _, m in samples if m["timings"]["stages"]]
    if stages:
        out["stages_p50"] = {name: round(percentile([st.get(name, 0.0) for st in stages], 50), 2) for name in stages[0]}
    if stages and "ledger_read" in stages[0]:
        out.update(ledger_read_p50=percentile([s["ledger_read"] for s in stages], 50),
                   ledger_write_p50=percentile([s["ledger_write"] for s in stages], 50),
                   suppressed_mean=statistics.fmean(m["dedupe"]["suppressed"] for _, m in samples if "dedupe" in m))
    return out


MODES = ["automem GET /recall", "signet, sessionless", "signet, fresh session each call", "signet, one long session",
         "signet, long session, includeRecalled"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.signet", description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=os.environ.get("OPENSEARCH_URL"), help="OpenSearch URL (default: $OPENSEARCH_URL; required)")
    parser.add_argument("--size", type=int, default=1000, help="memories in the corpus (default 1000)")
    parser.add_argument("--queries", type=int, default=40, help="queries per mode (default 40)")
    args = parser.parse_args(argv)
    if not args.url:
        parser.error("--url (or OPENSEARCH_URL) is required")

    from fastapi.testclient import TestClient
    from opensearchpy import OpenSearch

    from service.config import Settings
    from service.main import create_app

    prefix = f"bench-signet-{os.getpid()}"
    settings = Settings(opensearch_url=args.url, index_prefix=prefix, automem_api_token=TOKEN, enrichment_enabled=False,
                        consolidation_tick_seconds=0)
    load_before = os.getloadavg()
    try:
        with TestClient(create_app(settings)) as api:
            api.headers["Authorization"] = f"Bearer {TOKEN}"
            load(api, args.size)
            queries = questions(args.queries)
            for q in queries:  # the query vectors are cached: no mode pays the embedding
                api.app.state.embedder.embed_query(q)
            for q in queries[:10]:  # warm-up: engine caches, code paths
                api.get("/recall", params={"query": q})
                api.post("/api/memory/recall", json={"query": q})
            # Modes interleaved query by query (so a change of load hits them alike), in a rotating order
            # (so each mode is the first to send a query, with the engine's caches cold, equally often).
            samples: dict[str, list] = {mode: [] for mode in MODES}
            for i, q in enumerate(tqdm(queries, desc="queries x modes")):
                for mode in MODES[i % len(MODES):] + MODES[: i % len(MODES)]:
                    samples[mode].append(call(api, mode, i, q))
            results = [summary(mode, samples[mode]) for mode in MODES]
    finally:
        client = OpenSearch(hosts=[args.url])
        drop_prefix(client, prefix)
    report = {"size": args.size, "queries": args.queries, "load_before": load_before, "load_after": os.getloadavg(), "results": results}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "signet.json").write_text(json.dumps(report, indent=2))
    print(f"\n{args.size} memories, {args.queries} queries per mode, limit 10; load {load_before[0]:.1f} -> {report['load_after'][0]:.1f}\n")
    print("| mode | server p50 ms | server p95 ms | client p50 ms | client p95 ms | ledger read p50 | ledger write p50 | suppressed (mean) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        extra = (f"{r['ledger_read_p50']:.2f} | {r['ledger_write_p50']:.2f} | {r['suppressed_mean']:.1f}" if "ledger_read_p50" in r else "- | - | -")
        print(f"| {r['mode']} | {r['server_p50']:.1f} | {r['server_p95']:.1f} | {r['p50']:.1f} | {r['p95']:.1f} | {extra} |")
    print("\nstage p50s (ms, meta.timings):")
    for r in results:
        if "stages_p50" in r:
            print(f"  {r['mode']}: " + ", ".join(f"{k} {v}" for k, v in r["stages_p50"].items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
