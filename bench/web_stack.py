"""The web layer's CPU per GET /recall: the service as users run it (default configuration, default
log level: the access log is on) with the recall pipeline stubbed (bench/web_stub.py: the first
recall is real, every later one returns that body), so what is left is uvicorn, starlette,
FastAPI, the middlewares, the dependencies, the route and the response.

    python -m bench.web_stack --tree before=/work/wt-base --tree after=. [--rounds 6] [--requests 1000] [--py-spy after]

One service per tree runs from its own checkout (`--tree NAME=PATH`; default: this one), all on the
same corpus (INDEX_PREFIX bench-latdef, stored by `python -m bench.latency --defaults`; any prefix
works, an empty one answers an empty page). Each round sends `--requests` recalls to each service
in turn, one after the other on one keep-alive connection, the order of the trees alternating from
round to round; the query is a LoCoMo question of 60 characters (`query=...&tags=locomo:conv-26&
limit=10`, bearer token). Per round and tree: service CPU per request (user + system of the whole
process, /proc), net of its idle rate (measured before, all services idle), the event-loop thread's
share, the client-side p50, and the load average. `--py-spy NAME` adds a block sampled by py-spy
(--gil) on that tree's service, grouped by stage as bench.latency_profile does.

`--asgi`: no server and no socket: each tree's app is called straight through ASGI in its own
process (bench/web_stub.py --asgi), and the CPU per call is that process's (time.process_time: all
threads) and its event loop's (time.thread_time), read by the process itself around each block: no
HTTP parsing or socket I/O, no /proc ticks, much less noise, for A/B of the app's own code.
Results: bench/out/web-stack.json (--asgi: web-stack-asgi.json).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlencode

import httpx

from bench.cpu import CpuMeter, ThreadMeter, cpu_seconds
from bench.latency_defaults import PREFIX, default_environment, start_py_spy, stop_py_spy
from bench.serving import OUT, ROOT, TOKEN, ServiceProcess, load_avg, percentile

STUB = Path(__file__).resolve().with_name("web_stub.py")
QUESTION = "Would Caroline likely have Dr. Seuss books on her bookshelf?"
PATH = "/recall?" + urlencode({"query": QUESTION, "tags": "locomo:conv-26", "limit": "10"})
IDLE_SECONDS = 4.0


def block(http: httpx.Client, pid: int, n: int) -> dict:
    """n recalls one after the other: service CPU per request, by thread, client p50."""
    meter, threads, lat = CpuMeter({"service": pid}), ThreadMeter(pid), []
    for _ in range(n):
        t = time.perf_counter()
        r = http.get(PATH)
        lat.append((time.perf_counter() - t) * 1000)
        if r.status_code != 200:
            raise RuntimeError(f"recall failed: {r.status_code} {r.text[:300]}")
    by_thread = threads.per_request(n)
    return {"cpu_ms": meter.per_request(n)["service"], "event_loop_ms": by_thread.get("main (event loop)", 0.0),
            "other_threads_ms": by_thread.get("other threads", 0.0), "p50_ms": round(percentile(lat, 50), 3)}


class AsgiProcess:
    """bench/web_stub.py --asgi for one tree: a block of N calls per line written, a JSON line back."""

    def __init__(self, tree: Path, url: str, prefix: str):
        env = {**default_environment(), "AUTOMEM_API_TOKEN": TOKEN, "OPENSEARCH_URL": url, "INDEX_PREFIX": prefix, "PYTHONPATH": str(tree)}
        OUT.mkdir(parents=True, exist_ok=True)
        self.log = open(OUT / f"web-stub-asgi-{tree.name}.log", "wb")  # the access log goes somewhere, as it would
        self.proc = subprocess.Popen([sys.executable, str(STUB), "--asgi", PATH.split("?", 1)[1]], cwd=tree, env=env, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log)
        if json.loads(self.proc.stdout.readline() or "{}").get("ready") is not True:
            raise RuntimeError(f"the ASGI stub of {tree} did not start; see {self.log.name}")

    def block(self, n: int) -> dict:
        self.proc.stdin.write(f"{n}\n")
        self.proc.stdin.flush()
        return {k: round(v, 4) for k, v in json.loads(self.proc.stdout.readline()).items()}

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        self.log.close()


def asgi_main(args, trees: dict[str, str], result: dict) -> None:
    procs = {name: AsgiProcess(Path(path).resolve(), args.url, args.prefix) for name, path in trees.items()}
    try:
        for proc in procs.values():
            proc.block(args.warmup)
        names = list(procs)
        for r in range(args.rounds):
            for name in names if r % 2 == 0 else names[::-1]:
                row = {"round": r + 1, "tree": name, "load_avg_1m": load_avg()[0], **procs[name].block(args.requests)}
                result["rounds"].append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
    finally:
        for proc in procs.values():
            proc.close()
    result["summary"] = {name: {k: round(statistics.median(row[k] for row in result["rounds"] if row["tree"] == name), 4)
                                for k in ("cpu_ms", "event_loop_ms", "wall_ms")} for name in trees}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.web_stack", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default=os.environ.get("OPENSEARCH_URL", "http://127.0.0.1:9250"))
    parser.add_argument("--prefix", default=PREFIX)
    parser.add_argument("--tree", action="append", default=[], metavar="NAME=PATH", help="a checkout to measure (repeat; default: this one)")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--requests", type=int, default=1000, help="recalls per tree and round")
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--py-spy", metavar="NAME", help="add a block on this tree's service sampled by py-spy, grouped by stage")
    parser.add_argument("--asgi", action="store_true", help="call each tree's app through ASGI in process: no server, no socket")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    args.out = args.out or OUT / ("web-stack-asgi.json" if args.asgi else "web-stack.json")
    trees = dict(t.split("=", 1) for t in args.tree) or {"this": str(ROOT)}
    result: dict = {"started_at": datetime.now(UTC).isoformat(timespec="seconds"), "path": PATH, "prefix": args.prefix, "asgi": args.asgi,
                    "trees": trees, "requests": args.requests, "rounds": []}
    if args.asgi:
        asgi_main(args, trees, result)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2))
        print(json.dumps({"summary": result["summary"]}, indent=2))
        return 0
    with ExitStack() as stack:
        services: dict[str, tuple[int, httpx.Client]] = {}
        for name, path in trees.items():
            svc = ServiceProcess(args.url, args.prefix, base_env=default_environment(), server_args=(), script=STUB, tree=Path(path).resolve())
            base = stack.enter_context(svc)
            http = stack.enter_context(httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60))
            services[name] = (svc.proc.pid, http)
        bodies = {}
        for name, (pid, http) in services.items():
            block(http, pid, args.warmup)
            bodies[name] = [r["id"] for r in http.get(PATH).json()["results"]]
        result["same_results"] = len({tuple(b) for b in bodies.values()}) == 1
        before = {name: cpu_seconds(pid) for name, (pid, _) in services.items()}
        time.sleep(IDLE_SECONDS)
        idle = {name: (cpu_seconds(pid) - before[name]) / IDLE_SECONDS * 1000 for name, (pid, _) in services.items()}
        result["idle_cpu_ms_per_s"] = {k: round(v, 2) for k, v in idle.items()}
        names = list(services)
        for r in range(args.rounds):
            for name in names if r % 2 == 0 else names[::-1]:
                pid, http = services[name]
                load = load_avg()[0]
                started = time.perf_counter()
                row = block(http, pid, args.requests)
                wall = time.perf_counter() - started
                row.update(round=r + 1, tree=name, load_avg_1m=load,
                           cpu_ms_net_of_idle=round(row["cpu_ms"] - idle[name] * wall / args.requests, 3))
                result["rounds"].append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
        if args.py_spy:
            from bench.latency_profile import spy_by_stage, spy_table

            pid, http = services[args.py_spy]
            spy = args.out.with_suffix(".spy.txt")
            spy.unlink(missing_ok=True)
            proc = start_py_spy(pid, spy)
            row = block(http, pid, args.requests)
            stop_py_spy(proc)
            result["py_spy"] = {"tree": args.py_spy, **row, "stages": spy_by_stage(spy, args.requests, row["cpu_ms"])}
            print(spy_table(result["py_spy"]["stages"]))
    result["summary"] = {
        name: {k: round(statistics.median(row[k] for row in result["rounds"] if row["tree"] == name), 3)
               for k in ("cpu_ms", "cpu_ms_net_of_idle", "event_loop_ms", "other_threads_ms", "p50_ms")}
        for name in trees if any(row["tree"] == name for row in result["rounds"])
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(json.dumps({"summary": result["summary"], "same_results": result["same_results"], "idle_cpu_ms_per_s": result["idle_cpu_ms_per_s"]}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
