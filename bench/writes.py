"""Write latency against read-your-writes: how each refresh policy trades one for the other.

    python -m bench.writes                     # every mode, 100 single writes each
    python -m bench.writes --modes true,wait_for --writes 200

For each mode (WRITE_REFRESH, and for `interval:<t>` WRITE_REFRESH=wait_for with the index's
refresh_interval set to <t>), a fresh INDEX_PREFIX on the local node `bench` (or OPENSEARCH_URL) and
the service as its own process (`python -m service`):
- single writes: POST /memory one after another (the service embeds each), client-side p50/p95;
- read-your-writes: right after each acknowledged write, a recall for its exact text; the share
  that found the memory at once;
- batches: POST /memory/batch of 100, memories/s;
- recall under writes: one client recalling while 4 threads write, recall p50/p95.
Prints a table and writes bench/out/writes.json. The load average is recorded: other processes skew it.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
import uuid

import httpx

from bench import corpus as C
from bench.serving import OUT, TOKEN, ServiceProcess, load_avg, percentile

MODES = ("wait_for", "true", "false", "interval:200ms")


def _ms(values: list[float]) -> dict:
    return {"p50": round(percentile(values, 50), 1), "p95": round(percentile(values, 95), 1), "n": len(values)}


def measure(url: str, mode: str, writes: int) -> dict:
    refresh, interval = ("wait_for", mode.split(":", 1)[1]) if mode.startswith("interval:") else (mode, None)
    prefix = f"bench-writes-{uuid.uuid4().hex[:6]}"
    env = {"WRITE_REFRESH": refresh, "ENRICHMENT_ENABLED": "false", "CONSOLIDATION_TICK_SECONDS": "0"}
    if interval:
        env["INDEX_REFRESH_INTERVAL"] = interval
    out: dict = {"mode": mode}
    with ServiceProcess(url, prefix, env=env) as base, httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http:
        for i in range(5):  # warm-up: model, connections, first refresh
            http.post("/memory", json={"content": f"warm-up memory {i}"})
        latencies, visible = [], 0
        for i in range(writes):
            text = f"zq{uuid.uuid4().hex[:10]} note {i} about the deploy checklist"
            started = time.perf_counter()
            resp = http.post("/memory", json={"content": text})
            latencies.append((time.perf_counter() - started) * 1000)
            assert resp.status_code == 201, resp.text
            found = http.get("/recall", params={"query": text.split()[0], "limit": 1}).json()
            visible += bool(found["results"]) and found["results"][0]["id"] == resp.json()["memory_id"]
        out["single_write_ms"] = _ms(latencies)
        out["read_your_writes"] = round(visible / writes, 3)

        started = time.perf_counter()
        for b in range(5):
            resp = http.post("/memory/batch", json={"memories": [{"content": f"batch {b} memory {i} on release planning"} for i in range(100)]})
            assert resp.status_code == 201, resp.text
        out["batch_memories_per_s"] = round(500 / (time.perf_counter() - started), 1)

        stop = threading.Event()

        def writer(n: int) -> None:
            with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as w:
                i = 0
                while not stop.is_set():
                    w.post("/memory", json={"content": f"writer {n} memory {i} about incident reviews"})
                    i += 1

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        recalls = []
        for i in range(100):
            started = time.perf_counter()
            http.get("/recall", params={"query": f"incident review {i % 7}", "limit": 10})
            recalls.append((time.perf_counter() - started) * 1000)
        stop.set()
        for t in threads:
            t.join()
        out["recall_under_writes_ms"] = _ms(recalls)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.writes", description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--writes", type=int, default=100)
    parser.add_argument("--url", default=None, help="OpenSearch URL (default: OPENSEARCH_URL or the local node `bench`)")
    args = parser.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    url = C.node_url(args.url)
    before = load_avg()
    results = [measure(url, mode, args.writes) for mode in args.modes.split(",")]
    report = {"results": results, "load_average": {"before": before, "after": load_avg()}}
    (OUT / "writes.json").write_text(json.dumps(report, indent=2))
    print(f"{'mode':16s} {'write p50':>10s} {'p95':>7s} {'read-your-writes':>17s} {'batch/s':>8s} {'recall p50':>11s} {'p95':>7s}")
    for r in results:
        w, rc = r["single_write_ms"], r["recall_under_writes_ms"]
        print(f"{r['mode']:16s} {w['p50']:10.1f} {w['p95']:7.1f} {r['read_your_writes']:17.3f} {r['batch_memories_per_s']:8.1f} {rc['p50']:11.1f} {rc['p95']:7.1f}")
    print(f"load average before {before}, after {report['load_average']['after']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
