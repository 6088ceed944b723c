"""`python -m service` under cProfile, every Python thread of it, for bench.latency --defaults --profile.

    python -m bench.profiled_service OUT.prof [python -m service's arguments]

Each thread gets its own cProfile.Profile timed by time.thread_time, so the figures are that
thread's CPU, not its waits (threading.setprofile hands every new thread a hook that
starts one; the main thread, which runs the event loop, starts its own). SIGUSR1 clears them all,
so start-up, ingest and warm-up stay out; SIGUSR2 writes their merged stats to OUT.prof (pstats
format), {native thread id: name} to OUT.prof.threads.json, the cyclic collector's count
and time to OUT.prof.gc.json, and OUT.prof.done once written. Threads that Python did not start (onnxruntime's
intra-op pool) are not seen: their CPU is in /proc/<pid>/task (bench/cpu.py thread_seconds).
"""

from __future__ import annotations

import cProfile
import gc
import json
import marshal
import signal
import sys
import threading
import time
from pathlib import Path

PROFILES: list[cProfile.Profile] = []
_lock = threading.Lock()


def _start_thread_profile(frame, event, arg) -> None:
    profile = cProfile.Profile(time.thread_time)
    with _lock:
        PROFILES.append(profile)
    profile.enable()  # replaces this hook for the thread


GC = {"collections": [0, 0, 0], "seconds": 0.0, "cpu_seconds": 0.0}
_gc_started: list[float] = [0.0, 0.0]


def _gc_callback(phase: str, info: dict) -> None:
    """The cyclic collector's own time (a collection runs in whichever thread allocated last)."""
    if phase == "start":
        _gc_started[:] = [time.perf_counter(), time.thread_time()]
    else:
        GC["collections"][info["generation"]] += 1
        GC["seconds"] += time.perf_counter() - _gc_started[0]
        GC["cpu_seconds"] += time.thread_time() - _gc_started[1]


def _clear(signum, frame) -> None:
    with _lock:
        for profile in PROFILES:
            profile.clear()
    GC.update(collections=[0, 0, 0], seconds=0.0, cpu_seconds=0.0)


def _dump(out: Path) -> None:
    merged: dict = {}
    with _lock:
        profiles = list(PROFILES)
    for profile in profiles:
        # snapshot_stats reads the entries without disabling the profiler (disable() would act on
        # the calling thread only); it runs under the GIL, so no thread writes meanwhile.
        profile.snapshot_stats()
        for func, (cc, nc, tt, ct, callers) in profile.stats.items():
            if func in merged:
                pcc, pnc, ptt, pct, pcallers = merged[func]
                joined = dict(pcallers)
                for caller, value in callers.items():
                    old = joined.get(caller)
                    joined[caller] = value if old is None else tuple(a + b for a, b in zip(old, value))
                merged[func] = (pcc + cc, pnc + nc, ptt + tt, pct + ct, joined)
            else:
                merged[func] = (cc, nc, tt, ct, dict(callers))
    with open(out, "wb") as fh:
        marshal.dump(merged, fh)
    names = {t.native_id: t.name for t in threading.enumerate() if t.native_id is not None}
    Path(f"{out}.threads.json").write_text(json.dumps(names))
    Path(f"{out}.gc.json").write_text(json.dumps(GC))
    Path(f"{out}.done").write_text(str(len(profiles)))


def main() -> int:
    out = Path(sys.argv[1])
    sys.argv = ["python -m service", *sys.argv[2:]]
    signal.signal(signal.SIGUSR1, _clear)
    signal.signal(signal.SIGUSR2, lambda signum, frame: _dump(out))
    threading.setprofile(_start_thread_profile)
    gc.callbacks.append(_gc_callback)
    main_profile = cProfile.Profile(time.thread_time)
    PROFILES.append(main_profile)
    from service.__main__ import main as service_main

    main_profile.enable()
    return service_main()


if __name__ == "__main__":
    sys.exit(main())
