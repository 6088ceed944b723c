"""The service under a benchmark: `python -m service` as its own process on a store of the engine
(ServiceProcess), a load of calls on N threads (run_load), and the figures every bench prints
(percentile, summary, load_avg). Shared by bench.latency, bench.latency_defaults and the other benches."""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
TOKEN = "bench-token"


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def summary(latencies_ms: list[float], wall_s: float) -> dict[str, float]:
    return {
        "n": len(latencies_ms),
        "p50": round(percentile(latencies_ms, 50), 2), "p95": round(percentile(latencies_ms, 95), 2),
        "p99": round(percentile(latencies_ms, 99), 2), "mean": round(statistics.fmean(latencies_ms), 2) if latencies_ms else None,
        "qps": round(len(latencies_ms) / wall_s, 1) if wall_s else None,
    }


def load_avg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# --- the service as its own process ------------------------------------------------------------------
class ServiceProcess:
    def __init__(self, url: str, prefix: str, env: dict[str, str] | None = None, *, base_env: dict[str, str] | None = None,
                 module: Sequence[str] = ("service",), server_args: Sequence[str] = ("--log-level", "warning"),
                 script: Path | None = None, tree: Path = ROOT):
        """`base_env`: the environment to start from (default this process's); `module`: what
        `python -m` runs (bench.profiled_service wraps the service in cProfile); `server_args`: its
        command-line options (by default a quieter log than the service's own default, info);
        `script`: a file python runs instead of a module (bench/web_stub.py), with `tree`, the
        checkout whose service/ is measured, as working directory and first on PYTHONPATH."""
        from service.engine.local_node import free_port

        self.port = free_port()
        self.module, self.server_args = list(module), list(server_args)
        self.script, self.tree = script, Path(tree)
        self.env = {**(os.environ if base_env is None else base_env), "AUTOMEM_API_TOKEN": TOKEN, "OPENSEARCH_URL": url, "INDEX_PREFIX": prefix, **(env or {})}
        if script is not None:
            self.env["PYTHONPATH"] = os.pathsep.join(p for p in (str(self.tree), self.env.get("PYTHONPATH")) if p)
        self.proc: subprocess.Popen | None = None
        self.base = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> str:
        run = [str(self.script)] if self.script is not None else ["-m", *self.module]
        cmd = [sys.executable, *run, "--host", "127.0.0.1", "--port", str(self.port), *self.server_args]
        OUT.mkdir(parents=True, exist_ok=True)  # a fresh clone has no bench/out yet
        self.log = open(OUT / f"service-{self.port}.log", "wb")
        self.proc = subprocess.Popen(cmd, cwd=self.tree, env=self.env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the service exited ({self.proc.returncode}); see {self.log.name}")
            try:
                if httpx.get(f"{self.base}/health", timeout=2).status_code == 200:
                    return self.base
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        raise RuntimeError("the service did not become healthy in 300 s")

    def peak_rss_mb(self) -> float | None:
        """The service process's peak resident memory (VmHWM)."""
        try:
            for line in open(f"/proc/{self.proc.pid}/status"):
                if line.startswith("VmHWM"):
                    return round(int(line.split()[1]) / 1024, 1)
        except OSError:
            return None
        return None

    def __exit__(self, *exc) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()
        if exc[0] is None:  # keep the service's log only when something went wrong
            Path(self.log.name).unlink(missing_ok=True)


def run_load(fn: Callable[[Any], Any], items: list, concurrency: int) -> tuple[list[float], list, float]:
    """Call fn on every item with `concurrency` threads; (client latencies ms, fn results, wall seconds)."""
    lat: list[float] = []
    server: list = []
    lock = threading.Lock()
    it = iter(items)

    def worker():
        while True:
            with lock:
                item = next(it, None)
            if item is None:
                return
            t = time.perf_counter()
            srv = fn(item)
            ms = (time.perf_counter() - t) * 1000
            with lock:
                lat.append(ms)
                if srv is not None:
                    server.append(srv)

    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        for f in [pool.submit(worker) for _ in range(concurrency)]:
            f.result()
    return lat, server, time.perf_counter() - started
