"""What requests cost in CPU: user + system seconds of processes on this machine (Linux /proc),
read before and after a run. On a machine where the service, the engine and the client share the
cores, CPU per request says what latency alone hides: how many requests the cores can serve.

    meter = CpuMeter({"service": pid, "engine": pid, "client": os.getpid()})
    ... the run ...
    meter.per_request(n)    # {"service": ms, "engine": ms, "client": ms}; None where /proc has no such pid
"""

from __future__ import annotations

import os


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
