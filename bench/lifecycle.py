"""Data-lifecycle throughput: import, export, backup and restore of a corpus, and live writes during an import.

    python -m bench.lifecycle --size 100000                 # the `bench` node (started if needed), synthetic vectors
    python -m bench.lifecycle --size 20000 --compare-refresh # also the import with --pause-refresh (the old behaviour)

Each step runs as its own `engram` process (python -m service.cli.main), so its wall time and
peak RSS (`wait4`'s ru_maxrss of that process alone) are what a user sees, model load included:

1. import   the corpus JSONL (bench.corpus: synthetic vectors, ~1.3 edges per memory) into <prefix>-a,
            while a running service on the same store answers one `POST /memory` (refresh=wait_for,
            the default) every 100 ms: their latencies show whether the import holds live writes up;
2. export   <prefix>-a to JSONL (no vectors);
3. backup   <prefix>-a to an AutoMem-layout archive (with vectors), directly against the engine;
4. restore  the archive into an empty <prefix>-b (vectors reused: nothing is embedded).

Figures go to bench/out/lifecycle.json and a markdown table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from bench import corpus as C
from bench.serving import TOKEN, ServiceProcess, percentile

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"


def engram(args: list[str], *, env: dict | None = None) -> dict:
    """Run `engram ARGS` as a process; its wall time, peak RSS (MB), exit status and output."""
    cmd = [sys.executable, "-m", "service.cli.main", *args]
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out_chunks: list[bytes] = []
    reader = threading.Thread(target=lambda: out_chunks.append(proc.stdout.read()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    err = proc.stderr.read()  # type: ignore[union-attr]
    _, status, usage = os.wait4(proc.pid, 0)
    reader.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"engram {' '.join(args)} failed ({proc.returncode}): {err.decode()[-2000:]}")
    return {"seconds": round(seconds, 1), "peak_rss_mb": round(usage.ru_maxrss / 1024, 1), "exit": proc.returncode,
            "stdout": b"".join(out_chunks).decode(errors="replace"), "stderr": err.decode(errors="replace")[-500:]}


class LiveWriter:
    """One POST /memory every `period` s against a running service; the latencies, in ms."""

    def __init__(self, base: str, period: float = 0.1):
        self.base, self.period, self.latencies, self.errors = base, period, [], 0
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(base_url=self.base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http:
            n = 0
            while not self._stop.is_set():
                started = time.perf_counter()
                resp = http.post("/memory", json={"content": f"a live write during the import, number {n}", "tags": ["live"]})
                self.latencies.append((time.perf_counter() - started) * 1000)
                self.errors += resp.status_code != 201
                n += 1
                self._stop.wait(max(0.0, self.period - (time.perf_counter() - started)))

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self.thread.join(120)

    def summary(self) -> dict:
        lat = self.latencies
        return {"writes": len(lat), "errors": self.errors, "p50_ms": round(percentile(lat, 50), 1), "p95_ms": round(percentile(lat, 95), 1),
                "max_ms": round(max(lat), 1) if lat else None}


def imported(result: dict) -> dict:
    report = json.loads(result["stdout"].strip().splitlines()[-1])
    return {**{k: result[k] for k in ("seconds", "peak_rss_mb")}, "stored": report["stored"], "edges": report["edges_stored"],
            "failed": report["failed"], "memories_per_s": report["memories_per_s"]}


def run(args) -> dict:
    OUT.mkdir(parents=True, exist_ok=True)
    url = C.node_url(args.url)
    client = httpx.Client(base_url=url, timeout=60)
    source = OUT / f"lifecycle-corpus-{args.size}.jsonl"
    if not source.exists():
        C.write_jsonl(args.size, source, vectors="synthetic", seed=args.seed)
    a, b = f"{args.prefix}-a", f"{args.prefix}-b"
    engine = lambda prefix: ["--url", url, "--prefix", prefix]  # noqa: E731
    results: dict = {"size": args.size, "corpus_bytes": source.stat().st_size, "load_avg_before": os.getloadavg()}

    def fresh(prefix: str) -> None:
        client.delete(f"/{prefix}-memories-*,{prefix}-edges-*")
        for name in ("memories", "edges"):
            client.delete(f"/_index_template/{prefix}-{name}")

    base_args = args.import_args.split()
    modes = [("import", base_args)] + ([("import --pause-refresh", [*base_args, "--pause-refresh"])] if args.compare_refresh else [])
    for label, extra in modes:
        fresh(a)
        with ServiceProcess(url, a) as base:
            with LiveWriter(base) as idle:
                time.sleep(5.0)  # the same writes with no import running: the baseline
            with LiveWriter(base) as live:
                step = engram(["import", str(source), *engine(a), "--json", "--no-progress", *extra])
        results[label] = {**imported(step), "args": " ".join(extra), "live_writes": live.summary(), "live_writes_idle": idle.summary()}
        print(f"{label}: {results[label]}", file=sys.stderr)
    if args.import_only:
        fresh(a)
        return results

    out = OUT / "lifecycle-export.jsonl"
    step = engram(["export", *engine(a), "-o", str(out), "--no-progress"])
    results["export"] = {"seconds": step["seconds"], "peak_rss_mb": step["peak_rss_mb"], "bytes": out.stat().st_size,
                         "memories_per_s": round(args.size / step["seconds"], 1)}
    print(f"export: {results['export']}", file=sys.stderr)

    archive = OUT / "lifecycle-backup.tar.gz"
    step = engram(["backup", *engine(a), "-o", str(archive), "--no-progress"])
    results["backup"] = {"seconds": step["seconds"], "peak_rss_mb": step["peak_rss_mb"], "bytes": archive.stat().st_size,
                         "memories_per_s": round(args.size / step["seconds"], 1)}
    print(f"backup: {results['backup']}", file=sys.stderr)

    fresh(b)
    step = engram(["restore", str(archive), *engine(b), "--json", "--no-progress"])
    body = json.loads(step["stdout"].strip().splitlines()[-1])
    results["restore"] = {"seconds": step["seconds"], "peak_rss_mb": step["peak_rss_mb"], "restored": body["memories"]["restored"],
                          "vectors_reused": body["memories"]["vectors_reused"], "edges": body["edges"]["restored"],
                          "memories_per_s": round(body["memories"]["restored"] / step["seconds"], 1)}
    print(f"restore: {results['restore']}", file=sys.stderr)
    results["load_avg_after"] = os.getloadavg()
    if not args.keep:
        fresh(a)
        fresh(b)
        out.unlink(missing_ok=True)
        archive.unlink(missing_ok=True)
    return results


def markdown(res: dict) -> str:
    rows = ["| step | memories/s | wall s | peak RSS MB | notes |", "|---|---|---|---|---|"]
    for label in ("import", "import --pause-refresh"):
        if label in res:
            r, live = res[label], res[label]["live_writes"]
            rows.append(f"| {label} | {r['memories_per_s']:,} | {r['seconds']} | {r['peak_rss_mb']} | {r['stored']:,} memories, {r['edges']:,} edges; "
                        f"live POST /memory p50 {live['p50_ms']} / p95 {live['p95_ms']} / max {live['max_ms']} ms ({live['writes']} writes; "
                        f"without an import p50 {r['live_writes_idle']['p50_ms']} / p95 {r['live_writes_idle']['p95_ms']} ms) |")
    for label in ("export", "backup"):
        r = res[label]
        rows.append(f"| {label} | {r['memories_per_s']:,} | {r['seconds']} | {r['peak_rss_mb']} | {r['bytes'] / 1e6:,.0f} MB |")
    r = res["restore"]
    rows.append(f"| restore | {r['memories_per_s']:,} | {r['seconds']} | {r['peak_rss_mb']} | {r['restored']:,} memories ({r['vectors_reused']:,} vectors reused), {r['edges']:,} edges |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.lifecycle", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100_000, help="memories in the corpus (default 100000)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--url", help=f"OpenSearch URL (default: the local node {C.NODE_NAME!r}, started if needed)")
    parser.add_argument("--prefix", default="bench-life", help="INDEX_PREFIX stem: <prefix>-a and <prefix>-b are replaced")
    parser.add_argument("--compare-refresh", action="store_true", help="also import with --pause-refresh, to compare the live writes")
    parser.add_argument("--keep", action="store_true", help="keep the indices, the export and the archive")
    parser.add_argument("--import-args", default="", help="more options for `engram import` (e.g. '--batch-size 100 --workers 2')")
    parser.add_argument("--import-only", action="store_true", help="measure the import (and its live writes) only")
    parser.add_argument("--out", type=Path, default=OUT / "lifecycle.json")
    args = parser.parse_args(argv)
    results = run(args)
    args.out.write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2) if args.import_only else markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
