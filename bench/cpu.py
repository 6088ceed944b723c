"""What requests cost in CPU: user + system seconds of processes on this machine (Linux /proc),
read before and after a run. On a machine where the service, the engine and the client share the
cores, CPU per request says what latency alone hides: how many requests the cores can serve.

    meter = CpuMeter({"service": pid, "engine": pid, "client": os.getpid()})
    ... the run ...
    meter.per_request(n)    # {"service": ms, "engine": ms, "client": ms}; None where /proc has no such pid
"""

from __future__ import annotations

import os
import platform
import re
import sys


def cpu_model(cpuinfo: str | None = None) -> str:
    """The CPU's name as /proc/cpuinfo gives it ("AMD EPYC", "Intel(R) Xeon(R) ..."; the processor
    type elsewhere). The same code ran at about half the speed on one host as on another: a figure
    means something only beside the CPU it came from."""
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo") as fh:
                cpuinfo = fh.read()
        except OSError:
            cpuinfo = ""
    found = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.M)
    return " ".join(found.group(1).split()) if found else (platform.processor() or platform.machine() or "unknown")


def machine() -> dict:
    """What a benchmark's report says of the machine it ran on."""
    return {"cpus": os.cpu_count(), "cpu": cpu_model(), "python": sys.version.split()[0]}


def machine_line(info: dict) -> str:
    return f"machine: {info.get('cpu', 'unknown CPU')}, {info.get('cpus')} CPUs, Python {info.get('python')}"


def cpu_seconds(pid: int | None) -> float | None:
    """utime + stime of the process (all its threads), or None when it cannot be read."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CpuMeter:
    def __init__(self, pids: dict[str, int | None]):
        self.pids = pids
        self.start = {name: cpu_seconds(pid) for name, pid in pids.items()}

    def per_request(self, n: int) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        for name, pid in self.pids.items():
            now, then = cpu_seconds(pid), self.start[name]
            out[name] = round((now - then) / n * 1000, 2) if now is not None and then is not None and n else None
        return out


def thread_seconds(pid: int | None) -> dict[int, tuple[str, float]]:
    """{thread id: (thread name, utime + stime)} of every thread of the process (/proc/<pid>/task)."""
    out: dict[int, tuple[str, float]] = {}
    if pid is None:
        return out
    tick = os.sysconf("SC_CLK_TCK")
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as fh:
                head, tail = fh.read().rsplit(")", 1)
        except OSError:
            continue  # the thread ended meanwhile
        fields = tail.split()
        out[int(tid)] = (head.split("(", 1)[1], (int(fields[11]) + int(fields[12])) / tick)
    return out


def thread_group(name: str | None) -> str:
    """A Python thread name without its serial numbers ("AnyIO worker thread", "Thread-3 (run)" ->
    "Thread (run)"); None: a thread Python did not start (onnxruntime's pool)."""
    if name is None:
        return "native (not a Python thread)"
    return re.sub(r"[-_ ]?\d+", "", name).strip() or name


class ThreadMeter:
    """CPU per request of one process's threads: the main thread (its id is the pid) and the rest,
    grouped by Python thread name when the process says which native id is which (Python 3.11 does
    not name threads in /proc: every thread there bears the process's name)."""

    def __init__(self, pid: int | None):
        self.pid = pid
        self.start = thread_seconds(pid)

    def per_request(self, n: int, names: dict[int, str] | None = None) -> dict[str, float]:
        """`names`: {native thread id: Python thread name} when the process told them (else every
        thread but the main one is "other threads")."""
        groups: dict[str, float] = {}
        for tid, (name, seconds) in thread_seconds(self.pid).items():
            spent = seconds - self.start.get(tid, (name, 0.0))[1]
            if tid == self.pid:
                key = "main (event loop)"
            elif names is not None:
                key = thread_group(names.get(tid))
            else:
                key = "other threads"
            groups[key] = groups.get(key, 0.0) + spent
        return {k: round(v / n * 1000, 2) for k, v in sorted(groups.items(), key=lambda kv: -kv[1]) if n and v > 0}
