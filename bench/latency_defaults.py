"""`python -m bench.latency --defaults`: recall latency and the service's CPU per recall in its DEFAULT
configuration, with natural-language questions, over HTTP.

    python -m bench.latency --defaults --url http://127.0.0.1:9250                 # 3 rounds
    python -m bench.latency --defaults --url http://127.0.0.1:9250 --profile       # + one round under cProfile
    python -m bench.latency --defaults --url http://127.0.0.1:9250 --fresh-connections

The service runs as its own process (`python -m service`, as users run it) with nothing set but
AUTOMEM_API_TOKEN, OPENSEARCH_URL and INDEX_PREFIX: every other setting of service/config.py is
removed from its environment, so enrichment, metrics and access tracking are on as by default. Its
memories are the LoCoMo dev slice's turns, stored through `POST /memory/batch` by bench.locomo's
ingest (the service embeds them; 788 memories), once per prefix; the bench waits for enrichment to
finish, so it is on and idle while measured. The questions are every distinct question of the
slice (303), each recalled within its conversation's tag as bench.locomo does (`GET /recall?query=
...&tags=locomo:<id>&limit=10`; the service embeds the question). Each round starts a fresh service
(the query-embedding cache starts empty), recalls the first 15 questions to warm up and measures
the other 288 one after the other, on one keep-alive connection (`--fresh-connections`: a new
connection per recall).

Per round: client-side p50/p95, the server's query_time_ms and stage timings, and **service CPU
per recall**: user + system time of the service process over the measured recalls ÷ recalls
(bench/cpu.py), also net of its idle rate (measured over 5 s before, when background threads
tick), and split by thread (the event loop vs the others). `--profile` adds a round under
cProfile (bench/profiled_service.py; slower, not a latency figure) and groups its CPU by stage
(bench/latency_profile.py). Results: bench/out/latency-defaults.json (and .md).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlencode

import httpx
import orjson

from bench import locomo
from bench.cpu import CpuMeter, ThreadMeter, cpu_seconds, machine, machine_line
from bench.serving import (
    OUT,
    TOKEN,
    ServiceProcess,
    load_avg,
    percentile,
    run_load,
    summary,
)

WARMUP = 15
PREFIX = "bench-latdef"
IDLE_SECONDS = 5.0


def default_environment() -> dict[str, str]:
    """This process's environment without any variable a setting of the service reads."""
    from service.config import Settings

    names = set()
    for name, field in Settings.model_fields.items():
        names.add(name.lower())
        alias = field.validation_alias
        if isinstance(alias, str):
            names.add(alias.lower())
    return {k: v for k, v in os.environ.items() if k.lower() not in names}


def questions(data: list[dict]) -> list[tuple[str, str, set[str]]]:
    """(sample id, question, evidence ids) for every distinct question of the slice, in file order."""
    seen, out = set(), []
    for sample in data:
        for qa in sample["qa"]:
            key = (sample["sample_id"], qa["question"])
            if key not in seen:
                seen.add(key)
                out.append((*key, locomo.evidence_ids(qa)))
    return out


def copies_of(data: list[dict], copies: int) -> list[dict]:
    """The slice and copies-1 more of each conversation under another sample id (`conv-26-copy2`, ...): a
    store of a held-out run's size (6 copies: 4,728 memories; the held-out run had 5,094) whose
    recalls still search one conversation's tag. The questions stay those of the originals."""
    out = list(data)
    for k in range(2, copies + 1):
        out += [{**sample, "sample_id": f"{sample['sample_id']}-copy{k}"} for sample in data]
    return out


def memory_count(url: str, prefix: str) -> int:
    with httpx.Client(base_url=url, timeout=60) as h:
        h.post(f"/{prefix}-memories/_refresh")
        r = h.get(f"/{prefix}-memories/_count")
        return r.json()["count"] if r.status_code == 200 else 0


def ensure_memories(http: httpx.Client, url: str, prefix: str, data: list[dict]) -> dict | None:
    expected = sum(len(locomo.memories_for(s)) for s in data)
    if memory_count(url, prefix) == expected:
        return None
    rate = locomo.ingest(http, data)
    enrichment = locomo.wait_for_enrichment(http)
    return {"memories": expected, "embedded_per_s": round(rate, 1), "enrichment_s": round(enrichment["seconds"], 1)}


def recall_call(http: httpx.Client, qs: list[tuple[str, str, set[str]]]):
    # URLs built and parsed before the timed calls, as bench.latency's recall_fn does.
    urls = {q[1]: http.base_url.join("/recall?" + urlencode({"query": q[1], "tags": f"locomo:{q[0]}", "limit": "10"})) for q in qs}

    def call(q: tuple[str, str, set[str]]) -> dict:
        r = http.get(urls[q[1]])
        if r.status_code != 200:
            raise RuntimeError(f"recall failed: {r.status_code} {r.text[:300]}")
        body = orjson.loads(r.content)
        ranked = [(res["memory"]["id"], round(res.get("final_score", 0.0), 6)) for res in body["results"]]
        got = [locomo.dialog_id(res["memory"].get("metadata") or {}) for res in body["results"]]
        hit = len(q[2] & set(got)) / len(q[2]) if q[2] else None
        return {"q": q[1], "ranked": ranked, "recall@10": hit, "query_time_ms": body.get("query_time_ms"), "timings": body.get("timings") or {}}

    return call


def ranking_digest(rows: list[dict]) -> str:
    """One hash of every question's ranked ids and scores: equal digests, equal results."""
    h = hashlib.sha256()
    for row in sorted(rows, key=lambda r: r["q"]):
        h.update(orjson.dumps([row["q"], row["ranked"]]))
    return h.hexdigest()[:16]


def wait_for(path: Path, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{path} did not appear")
        time.sleep(0.1)


def py_spy_exe() -> str | None:
    beside = Path(sys.executable).with_name("py-spy")
    return shutil.which("py-spy") or (str(beside) if beside.exists() else None)


def start_py_spy(pid: int, out: Path) -> subprocess.Popen:
    """py-spy sampling the running service 250 times a second, raw stacks to `out`. --gil: only the
    thread holding the GIL, i.e. Python code running; py-spy's own idle test counted threads waiting
    in queue.get or the event loop's poll as busy (half the samples of a first try)."""
    exe = py_spy_exe()
    cmd = [exe, "record", "--pid", str(pid), "--rate", "250", "--format", "raw", "--output", str(out), "--threads", "--gil"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(2.0)  # attaching takes a moment; a sample lost at the start is noise, a missed second is not
    if proc.poll() is not None:
        raise RuntimeError(f"py-spy did not start: {proc.stderr.read().decode()[:500]}")
    return proc


def stop_py_spy(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGINT)  # py-spy writes its output on Ctrl-C
    proc.wait(timeout=120)


def one_round(args, url: str, data: list[dict], qs: list, profile: Path | None, spy: Path | None = None) -> dict:
    module = ("bench.profiled_service", str(profile)) if profile else ("service",)
    svc = ServiceProcess(url, args.prefix, base_env=default_environment(), module=module, server_args=())  # the default log level too
    limits = httpx.Limits(max_connections=8, max_keepalive_connections=0 if args.fresh_connections else 8)
    row: dict = {"profiled": "cProfile" if profile else "py-spy" if spy else "no", "fresh_connections": args.fresh_connections}
    with svc as base, httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120, limits=limits) as http:
        pid = svc.proc.pid
        row["ingest"] = ensure_memories(http, url, args.prefix, data)
        warm, rest = qs[:WARMUP], qs[WARMUP:]
        run_load(recall_call(http, warm), warm, 1)
        before = cpu_seconds(pid)
        time.sleep(IDLE_SECONDS)
        idle_ms_per_s = (cpu_seconds(pid) - before) / IDLE_SECONDS * 1000
        if profile:
            svc.proc.send_signal(signal.SIGUSR1)
            time.sleep(0.5)
        row["load_avg_before"] = load_avg()
        spy_proc = start_py_spy(pid, spy) if spy else None
        meter, threads = CpuMeter({"service": pid, "client": os.getpid()}), ThreadMeter(pid)
        lat, srv, wall = run_load(recall_call(http, rest), rest, args.concurrency)
        cpu = meter.per_request(len(rest))
        if spy_proc:
            stop_py_spy(spy_proc)
        names = None
        if profile:
            svc.proc.send_signal(signal.SIGUSR2)
            wait_for(Path(f"{profile}.done"))
            names = {int(k): v for k, v in json.loads(Path(f"{profile}.threads.json").read_text()).items()}
            gc_stats = json.loads(Path(f"{profile}.gc.json").read_text())
            row["gc"] = {"collections": gc_stats["collections"], "cpu_ms_per_recall": round(gc_stats["cpu_seconds"] * 1000 / len(rest), 3)}
        by_thread = threads.per_request(len(rest), names)
        row["load_avg_after"] = load_avg()
    service_ms = cpu["service"]
    idle_share = idle_ms_per_s * wall / len(rest)
    stages = sorted({k for x in srv for k in x["timings"]})
    hits = [x["recall@10"] for x in srv if x["recall@10"] is not None]
    row.update({
        "recalls": len(rest), "concurrency": args.concurrency, "wall_s": round(wall, 2),
        "recall": summary(lat, wall),
        "server_query_time_ms": summary([x["query_time_ms"] for x in srv if x["query_time_ms"] is not None], wall),
        "server_stages_p50_ms": {k: round(percentile([x["timings"].get(k, 0.0) for x in srv], 50), 2) for k in stages},
        "service_cpu_ms_per_recall": service_ms,
        "service_idle_cpu_ms_per_s": round(idle_ms_per_s, 2),
        "service_cpu_ms_per_recall_net_of_idle": round(service_ms - idle_share, 2) if service_ms is not None else None,
        "client_cpu_ms_per_recall": cpu["client"],
        "service_cpu_ms_per_recall_by_thread": by_thread,
        "recall@10": round(sum(hits) / len(hits), 4) if hits else None,
        "ranking_digest": ranking_digest(srv),
    })
    return row


def markdown(result: dict) -> str:
    lines = [
        ("| round | profiled | recalls | recall p50 / p95 ms | server query_time p50 ms | service CPU ms per recall (net of idle) | "
         "by thread | idle ms/s | recall@10 | rankings | load avg before → after |"),
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(result["rounds"], 1):
        threads = ", ".join(f"{k} {v:.1f}" for k, v in r["service_cpu_ms_per_recall_by_thread"].items())
        lines.append(
            f"| {i} | {r['profiled']} | {r['recalls']} | {r['recall']['p50']:.1f} / {r['recall']['p95']:.1f} | "
            f"{r['server_query_time_ms']['p50']:.1f} | {r['service_cpu_ms_per_recall']:.1f} ({r['service_cpu_ms_per_recall_net_of_idle']:.1f}) | "
            f"{threads} | {r['service_idle_cpu_ms_per_s']:.1f} | {r['recall@10']} | {r['ranking_digest']} | "
            f"{' '.join(map(str, r['load_avg_before']))} → {' '.join(map(str, r['load_avg_after']))} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.latency --defaults", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default=os.environ.get("OPENSEARCH_URL"), help="OpenSearch URL (default OPENSEARCH_URL, else the bench's local node)")
    parser.add_argument("--data", type=Path, default=locomo.DEFAULT_DATA, help="LoCoMo JSON (default the dev slice)")
    parser.add_argument("--prefix", default=PREFIX, help=f"INDEX_PREFIX of the service (default {PREFIX}); memories are stored once per prefix")
    parser.add_argument("--copies", type=int, default=1, help="store the slice this many times (each copy under its own "
                        "sample ids and tags; 6: 4,728 memories, a held-out run's size); the questions search the originals")
    parser.add_argument("--rounds", type=int, default=3, help="rounds without the profiler, each a fresh service (default 3)")
    parser.add_argument("--concurrency", type=int, default=1, help="clients (default 1: the questions one after the other)")
    parser.add_argument("--fresh-connections", action="store_true", help="a new connection per recall (default: one keep-alive connection)")
    parser.add_argument("--profile", action="store_true", help="add a round under cProfile and group its CPU by stage")
    parser.add_argument("--py-spy", action="store_true", help="add a round sampled by py-spy (needs py-spy on PATH or beside python) and group it by stage")
    parser.add_argument("--embed-cpu-ms", type=float, help="CPU ms of one question's embedding, measured apart (python -m bench.embed_query_cpu): "
                        "py-spy's GIL samples miss onnxruntime's work, so with it the other stages share the rest")
    parser.add_argument("--out", type=Path, default=OUT / "latency-defaults.json")
    args = parser.parse_args(argv)
    if args.py_spy and py_spy_exe() is None:
        parser.error("--py-spy needs py-spy on PATH or beside python (make bench-latency installs the bench extra; or pip install py-spy)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    from bench import corpus as C

    url = C.node_url(args.url)
    data = json.loads(args.data.read_text())
    qs = questions(data)
    data = copies_of(data, args.copies)
    result: dict = {
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"), "url": url, "prefix": args.prefix, "data": str(args.data),
        "questions": len(qs), "copies": args.copies, "warmup": WARMUP, "machine": machine(), "rounds": [],
    }
    extra = (["py-spy"] if args.py_spy else []) + (["cProfile"] if args.profile else [])
    for i in range(args.rounds + len(extra)):
        kind = extra[i - args.rounds] if i >= args.rounds else None
        profile = args.out.with_suffix(".prof") if kind == "cProfile" else None
        spy = args.out.with_suffix(".spy.txt") if kind == "py-spy" else None
        for stale in ([profile, Path(f"{profile}.done"), Path(f"{profile}.threads.json")] if profile else []) + ([spy] if spy else []):
            stale.unlink(missing_ok=True)
        row = one_round(args, url, data, qs, profile, spy)
        plain = [r for r in result["rounds"] if r["profiled"] == "no"]
        from bench.latency_profile import by_stage, spy_by_stage

        if profile:
            native = row["service_cpu_ms_per_recall_by_thread"].get("native (not a Python thread)", 0.0)
            result["native_threads_cpu_ms_per_recall"] = native
            unprofiled = min(r["service_cpu_ms_per_recall_net_of_idle"] for r in plain) - native if plain else None
            row["profile"] = by_stage(profile, row["recalls"], unprofiled)
        if spy:
            row["profile"] = spy_by_stage(spy, row["recalls"], row["service_cpu_ms_per_recall"], args.embed_cpu_ms)
        result["rounds"].append(row)
        r = row["recall"]
        print(f"round {i + 1}{' (cProfile)' if profile else ''}: recall p50 {r['p50']:.1f} p95 {r['p95']:.1f} ms | service CPU ms/recall "
              f"{row['service_cpu_ms_per_recall']} (net of idle {row['service_cpu_ms_per_recall_net_of_idle']}) | "
              f"{row['service_cpu_ms_per_recall_by_thread']} | load {row['load_avg_before']}", file=sys.stderr)
    args.out.write_text(json.dumps(result, indent=2))
    table = machine_line(result["machine"]) + "\n\n" + markdown(result)
    from bench.latency_profile import spy_table, stage_table

    for row in result["rounds"]:
        if row["profiled"] == "py-spy":
            table += "\n\npy-spy (samples of the thread holding the GIL):\n\n" + spy_table(row["profile"])
        if row["profiled"] == "cProfile":
            table += "\n\ncProfile (every Python thread, timed by its CPU clock):\n\n" + stage_table(row["profile"])
    args.out.with_suffix(".md").write_text(table + "\n")
    print(table)
    print(f"\nwritten: {args.out}, {args.out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
