"""Where the service's CPU per recall goes: a cProfile dump of the service (bench/profiled_service.py,
every Python thread timed by its own CPU clock), or py-spy's raw stacks of it (spy_by_stage), grouped
by stage.

    python -m bench.latency_profile bench/out/latency-defaults.prof 288 [unprofiled Python ms per recall]
    python -m bench.latency_profile bench/out/latency-defaults.spy.txt 288 23.4 6.40   # service CPU, embedding CPU

Each function has a home stage when its module (and name) says so (STAGES, first match wins);
any other function (builtins such as orjson.loads or isinstance, generic helpers) is charged to
its callers' stages, in proportion to the time it spent under each caller (pstats' caller edges;
through several levels when the caller has no stage either).

cProfile charges every call its own timer overhead (two thread_time reads, ~1-2 µs), so Python-heavy
stages look larger than they are. Given the same run's CPU without the profiler, `corrected` takes
off a fixed cost per call, fitted so that the stages sum to that CPU: corrected = profiled − calls ×
(profiled total − unprofiled) / all calls. It is a model (the same overhead for every call), not a
measurement, and on the default-configuration run it undershot (FastAPI's parameter resolution
0.34 ms against ~1 ms from py-spy's samples): rank by py-spy (spy_by_stage), use cProfile for call
counts and for single C calls (the ONNX run, orjson), where its overhead is negligible.
"""

from __future__ import annotations

import functools
import pstats
import re
import sys
from pathlib import Path

# (stage, path pattern, function-name pattern or None). Paths are matched after site-packages/,
# the worktree and the standard library's folder are cut off (see short()).
STAGES: list[tuple[str, str, str | None]] = [
    ("metrics", r"^(service/observability/(http_metrics|metrics|counters)\.py|prometheus_client/)", None),
    ("recall log", r"^service/recall/log\.py", None),
    ("access tracking", r"^service/storage/memories\.py", r"^(touch|stale_accesses)$"),
    ("access tracking", r"^service/recall/pipeline\.py", r"^track_access$"),
    ("access tracking", r"^starlette/background\.py", None),
    ("auth", r"^service/(api/auth|api/scope|auth/|banks/scope)", None),
    ("embedding the query", r"^(service/embedding/|onnxruntime/|tokenizers/)", None),
    ("arms' request (query DSL, date phrases, keywords)", r"^(service/recall/(queries|request|multi)\.py|service/filters/|service/clock/(mentions|phrases|expressions|months|periods)\.py)", None),
    ("arms' request (query DSL, date phrases, keywords)", r"^service/recall/retrieval\.py", r"^(plan_arms|fetch_k)$"),
    ("engine client: JSON encode", r"^service/storage/client\.py", r"^dumps$"),
    ("engine client: JSON encode", r"^opensearchpy/", r"^(dumps|_make_ndjson)$"),
    ("engine client: JSON decode", r"^service/storage/client\.py", r"^loads$"),
    ("engine client: HTTP (opensearch-py, urllib3, http.client)", r"^(opensearchpy/|urllib3/|stdlib/(http/|email/|socket\.py|ssl\.py|selectors\.py))", None),
    ("engine client: HTTP (opensearch-py, urllib3, http.client)", r"^service/storage/", None),
    ("arms' response -> candidates", r"^service/recall/retrieval\.py", None),
    ("scoring", r"^(scoring/|snowballstemmer/|service/recall/rerank\.py)", None),
    ("scoring", r"^service/recall/(pipeline|pool)\.py", r"^(merged|order|rerank|scoring_request|candidate_of)$"),
    ("scoring", r"^service/clock/instants\.py", r"^stored_datetime$"),
    ("state (current-state filter)", r"^(service/graph/current_state\.py|service/threads/)", None),
    ("state (current-state filter)", r"^service/recall/pipeline\.py", r"^(current_state|lookup|rescore)$"),
    ("graph expansion", r"^service/graph/", None),
    ("shaping", r"^service/recall/(shaping|placement)\.py", None),
    ("response serialization", r"^(service/api/responses\.py|starlette/responses\.py)", None),
    ("event stream", r"^service/stream/", None),
    ("request id, access log", r"^(asgi_correlation_id/|service/observability/request_id\.py|service/api/middleware\.py|stdlib/logging/)", None),
    ("route dependencies (deps.py)", r"^service/api/deps\.py", None),
    ("request parsing and validation", (r"^(fastapi/dependencies/|fastapi/_compat/|fastapi/params\.py|pydantic/|pydantic_core/|service/api/query_model\.py|"
                                        r"service/api/automem/recall_models\.py|starlette/datastructures\.py|stdlib/urllib/|stdlib/typing\.py|<frozen abc>)"), None),
    ("thread-pool handoff (anyio)", r"^(anyio/|starlette/concurrency\.py|sniffio/|stdlib/(threading|queue|concurrent/)|fastapi/telemetry/_api\.py)", None),
    ("HTTP server and ASGI stack (uvicorn, starlette, fastapi)", r"^(uvicorn/|httptools/|starlette/|fastapi/|stdlib/asyncio/|uvloop/|service/api/http_protocol\.py)", None),
    ("enrichment worker and its pacing", r"^service/enrichment/", None),
    ("consolidation scheduler", r"^service/consolidation/", None),
    ("recall pipeline glue", r"^(service/recall/(pipeline|pool)\.py|service/api/automem/recall\.py)", None),
]
COMPILED = [(stage, re.compile(path), re.compile(name) if name else None) for stage, path, name in STAGES]
OTHER = "other (unattributed)"


def short(path: str) -> str:
    """A profiled function's file as STAGES match it: a package's path from site-packages, the
    standard library's under stdlib/, and this repository's from its root, wherever the checkout
    measured lives (cProfile and py-spy give absolute paths)."""
    if "site-packages/" in path:
        return re.sub(r".*site-packages/", "", path)
    path = re.sub(r".*/lib/python3\.\d+/", "stdlib/", path)
    return re.sub(r"^.*/(?=(service|scoring|bench)/)", "", path)


def home(func: tuple[str, int, str]) -> str | None:
    path, _, name = func
    p = short(path)
    parts = name.split(".")  # py-spy names are qualified (Class.method.<locals>.inner); cProfile's are not
    for stage, path_re, name_re in COMPILED:
        if path_re.search(p) and (name_re is None or any(name_re.search(part) for part in parts)):
            return stage
    return None


def stage_shares(stats: dict) -> dict:
    """{function: {stage: share}}: a function's own stage, else its callers', weighted by the time
    it spent under each (edges without time: by calls)."""
    memo: dict = {}

    def shares(func, depth: int = 0) -> dict[str, float]:
        if func in memo:
            return memo[func]
        own = home(func)
        if own is not None:
            memo[func] = {own: 1.0}
            return memo[func]
        callers = stats[func][4] if func in stats else {}
        if not callers or depth > 40:
            return {OTHER: 1.0}
        memo[func] = {OTHER: 1.0}  # a cycle's way back lands here
        weights = {c: (v[2] or 0.0) + (v[3] or 0.0) * 1e-3 + v[0] * 1e-12 for c, v in callers.items()}
        total = sum(weights.values()) or 1.0
        out: dict[str, float] = {}
        for caller, w in weights.items():
            for stage, s in shares(caller, depth + 1).items():
                out[stage] = out.get(stage, 0.0) + s * w / total
        memo[func] = out
        return out

    return {f: shares(f) for f in stats}


def by_stage(path: Path, recalls: int, unprofiled_ms: float | None = None) -> dict:
    """{stage: {ms, calls}} per recall, sorted by ms; `unprofiled_ms` (the Python threads' CPU per
    recall without the profiler) adds the corrected figures."""
    stats = pstats.Stats(str(path)).stats
    shares = stage_shares(stats)
    stages: dict[str, dict[str, float]] = {}
    for func, (cc, nc, tt, ct, callers) in stats.items():
        for stage, s in shares[func].items():
            row = stages.setdefault(stage, {"ms": 0.0, "calls": 0.0})
            row["ms"] += tt * s * 1000 / recalls
            row["calls"] += nc * s / recalls
    total_ms = sum(r["ms"] for r in stages.values())
    total_calls = sum(r["calls"] for r in stages.values())
    out = {"recalls": recalls, "profiled_ms_per_recall": round(total_ms, 2), "calls_per_recall": round(total_calls), "stages": {}}
    per_call = None
    if unprofiled_ms is not None and total_calls:
        per_call = (total_ms - unprofiled_ms) / total_calls
        out["unprofiled_ms_per_recall"] = round(unprofiled_ms, 2)
        out["overhead_us_per_call"] = round(per_call * 1000, 3)
    for stage, row in sorted(stages.items(), key=lambda kv: -kv[1]["ms"]):
        entry = {"ms": round(row["ms"], 3), "calls": round(row["calls"], 1)}
        if per_call is not None:
            entry["corrected_ms"] = round(row["ms"] - row["calls"] * per_call, 3)
        out["stages"][stage] = entry
    return out


def stage_table(profile: dict) -> str:
    corrected = "overhead_us_per_call" in profile
    head = "| stage | CPU ms per recall under cProfile | share | calls per recall |" + (" corrected ms (model, see bench/latency_profile.py) |" if corrected else "")
    lines = [head, "|---|---|---|---|" + ("---|" if corrected else "")]
    total = profile["profiled_ms_per_recall"] or 1.0
    for stage, row in profile["stages"].items():
        lines.append(f"| {stage} | {row['ms']:.2f} | {row['ms'] / total:.1%} | {row['calls']:.0f} |" + (f" {row['corrected_ms']:.2f} |" if corrected else ""))
    lines.append(f"| **all Python threads** | **{profile['profiled_ms_per_recall']:.2f}** | 100% | {profile['calls_per_recall']} |"
                 + (f" {profile['unprofiled_ms_per_recall']:.2f} (unprofiled; {profile['overhead_us_per_call']} µs per call taken off) |" if corrected else ""))
    return "\n".join(lines)


# --- py-spy's raw stacks ----------------------------------------------------------------------------
FRAME = re.compile(r"^(?P<name>.*) \((?P<path>[^()]*):(?P<line>\d+)\)$")
ENGINE_STAGES = ("engine client",)
ENTRY = re.compile(r"^service/(storage|graph|recall)/")


@functools.cache
def spy_path(path: str) -> str:
    """py-spy's paths are relative to sys.path entries: the standard library's get the stdlib/
    prefix home() expects."""
    if path.startswith(("/", "<")):
        return path
    if path.split("/", 1)[0] in ("service", "scoring", "bench") or any((Path(p) / path).exists() for p in sys.path if "site-packages" in p):
        return path
    return f"stdlib/{path}"


def spy_stage(frames: list[tuple[str, str]]) -> str:
    """The stage of one sample: its innermost frame with a home stage; engine-client samples also
    say which of the service's own functions made the engine call (the outermost service/storage
    frame below the pipeline)."""
    for i in range(len(frames) - 1, -1, -1):
        path, name = frames[i]
        stage = home((path, 0, name))
        if stage is None:
            continue
        if stage.startswith(ENGINE_STAGES):
            callers = [f"{short(p).rsplit('/', 1)[-1]}:{n}" for p, n in frames[:i] if ENTRY.search(short(p)) and "storage/client.py" not in p]
            return f"{stage} — under {callers[-1] if callers else '?'}"
        return stage
    return OTHER


EMBEDDING = "embedding the query"


def spy_by_stage(path: Path, recalls: int, cpu_ms_per_recall: float | None, embed_cpu_ms: float | None = None) -> dict:
    """py-spy raw output (`frame;frame;... count` per line, root first) grouped by stage; each
    stage's share of the samples times the service's CPU per recall in the same run gives ms.
    onnxruntime releases the GIL, so `--gil` samples miss most of the embedding: `embed_cpu_ms`
    (measured apart, bench/embed_query_cpu.py) is then the embedding's row, and the other stages
    share the rest of the CPU by their samples (the embedding's own samples left out)."""
    counts: dict[str, int] = {}
    for line in Path(path).read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack or not n.isdigit():
            continue
        frames = []
        for part in stack.split(";"):
            m = FRAME.match(part.strip())
            if m:
                frames.append((spy_path(m["path"]), m["name"]))
        stage = spy_stage(frames)
        counts[stage] = counts.get(stage, 0) + int(n)
    out = {"recalls": recalls, "samples": sum(counts.values()), "cpu_ms_per_recall": cpu_ms_per_recall, "embed_cpu_ms": embed_cpu_ms, "stages": {}}
    rest_ms = cpu_ms_per_recall
    if embed_cpu_ms is not None and cpu_ms_per_recall is not None:
        out["stages"][EMBEDDING + " (measured apart)"] = {"samples": counts.pop(EMBEDDING, 0), "share": None, "ms": embed_cpu_ms}
        rest_ms = cpu_ms_per_recall - embed_cpu_ms
    total = sum(counts.values()) or 1
    for stage, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        out["stages"][stage] = {"samples": n, "share": round(n / total, 4), "ms": round(n / total * rest_ms, 3) if rest_ms is not None else None}
    return out


def spy_table(profile: dict) -> str:
    basis = "the run's service CPU per recall" + (f" less the embedding's {profile['embed_cpu_ms']} ms" if profile.get("embed_cpu_ms") is not None else "")
    lines = [f"| stage | samples | share | ≈ CPU ms per recall (share × {basis}) |", "|---|---|---|---|"]
    for stage, row in profile["stages"].items():
        share = "—" if row["share"] is None else f"{row['share']:.1%}"
        ms = "—" if row["ms"] is None else f"{row['ms']:.2f}"
        lines.append(f"| {stage} | {row['samples']} | {share} | {ms} |")
    lines.append(f"| **all** | {profile['samples']} | 100% | {profile['cpu_ms_per_recall']} |")
    return "\n".join(lines)


if __name__ == "__main__":
    # python -m bench.latency_profile FILE.prof RECALLS [UNPROFILED_MS]
    # python -m bench.latency_profile FILE.spy.txt RECALLS SERVICE_CPU_MS [EMBED_CPU_MS]
    path, n, rest = Path(sys.argv[1]), int(sys.argv[2]), [float(a) for a in sys.argv[3:]]
    if path.name.endswith(".spy.txt"):
        print(spy_table(spy_by_stage(path, n, rest[0], rest[1] if len(rest) > 1 else None)))
    else:
        print(stage_table(by_stage(path, n, rest[0] if rest else None)))
