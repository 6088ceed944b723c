"""kill -9 of the service (not the engine) under keyed writers, then a restart, KILLS times.

    python -m bench.service_faults                       # 4 writers, 2 kills, 60 s
    python -m bench.service_faults --kills 1 --seconds 30

Runs `python -m service` (bench.serving.ServiceProcess, enrichment ON) on a fresh INDEX_PREFIX of
OPENSEARCH_URL (default http://127.0.0.1:9250), dropped at the end. WRITERS threads each send one
logical write after another, retried with the same key until acknowledged (a refused connection
while the service is down, a 503): POST /memory with an Idempotency-Key, POST /memory/batch with
one, and Hindsight's async retain with an operation_id. Every KILL_EVERY s the service gets a
SIGKILL and is started again on the same store. Afterwards: every acknowledged write is stored
exactly once (an async retain once its operation says completed), and no answer was a 5xx other
than 503. Prints one JSON object (bench/out/service_faults.json); exits 1 on any loss, duplicate or 5xx.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
import uuid
from collections import Counter

import httpx
from opensearchpy import OpenSearch, helpers

from bench.serving import OUT, TOKEN, ServiceProcess

HEADERS = {"Authorization": f"Bearer {TOKEN}"}
BANK = "faults"


class Target:
    """The running service's base URL (a restart picks a new port)."""

    def __init__(self) -> None:
        self.base: str | None = None
        self.lock = threading.Lock()


def send(target: Target, kind: str, content: str, key: str, statuses: Counter, errors: list[str]) -> httpx.Response | None:
    base = target.base
    if base is None:
        return None
    try:
        if kind == "memory":
            return _count(httpx.post(f"{base}/memory", json={"content": content}, headers={**HEADERS, "Idempotency-Key": key}, timeout=30), statuses, errors)
        if kind == "batch":
            return _count(httpx.post(f"{base}/memory/batch", json={"memories": [{"content": content}]}, headers={**HEADERS, "Idempotency-Key": key},
                                     timeout=30), statuses, errors)
        return _count(httpx.post(f"{base}/v1/default/banks/{BANK}/memories", json={"items": [{"content": content}], "async": True, "operation_id": key},
                                 headers=HEADERS, timeout=30), statuses, errors)
    except httpx.HTTPError as exc:
        statuses[type(exc).__name__] += 1
        return None


def _count(resp: httpx.Response, statuses: Counter, errors: list[str]) -> httpx.Response:
    statuses[resp.status_code] += 1
    if resp.status_code >= 500 and resp.status_code != 503:
        errors.append(f"{resp.status_code} {resp.text[:200]}")
    return resp


def writer(n: int, target: Target, stop: threading.Event, acked: dict, statuses: Counter, errors: list[str], lock: threading.Lock) -> None:
    i = 0
    while not stop.is_set():
        kind = ("memory", "batch", "retain")[i % 3]
        content, key = f"writer {n} {kind} write {i}", str(uuid.uuid4())
        while not stop.is_set():
            resp = send(target, kind, content, key, statuses, errors)
            if resp is not None and resp.status_code in (200, 201):
                with lock:
                    acked[content] = (kind, key)
                break
            time.sleep(0.2)
        i += 1


def verify(client: OpenSearch, prefix: str, base: str, acked: dict) -> dict:
    ops = {key for kind, key in acked.values() if kind == "retain"}
    deadline = time.monotonic() + 300
    pending = set(ops)
    while pending and time.monotonic() < deadline:  # async retains: wait for their operations
        pending = {k for k in pending if httpx.get(f"{base}/v1/default/banks/{BANK}/operations/{k}", headers=HEADERS, timeout=30).json().get("status") != "completed"}
        time.sleep(0.5)
    client.indices.refresh(index=f"{prefix}-*")
    stored = Counter(h["_source"]["content"] for h in helpers.scan(client, index=f"{prefix}-memories", query={"query": {"match_all": {}}}, _source=["content"]))
    lost = [c for c in acked if stored[c] == 0]
    doubled = [c for c in acked if stored[c] > 1]
    return {"acknowledged": len(acked), "by_kind": dict(Counter(kind for kind, _ in acked.values())), "lost": len(lost),
            "lost_examples": lost[:5], "duplicated": len(doubled), "operations_not_completed": len(pending)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--kills", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=60.0, help="writing time in all")
    parser.add_argument("--url", default=os.environ.get("OPENSEARCH_URL", "http://127.0.0.1:9250"))
    args = parser.parse_args(argv)
    prefix = f"faults-{uuid.uuid4().hex[:8]}"
    env = {"ENRICHMENT_ENABLED": "true", "CONSOLIDATION_TICK_SECONDS": "0"}
    client = OpenSearch(hosts=[args.url], timeout=120)
    target, stop, lock = Target(), threading.Event(), threading.Lock()
    acked: dict[str, tuple[str, str]] = {}
    statuses: Counter = Counter()
    errors: list[str] = []
    kills: list[dict] = []
    OUT.mkdir(exist_ok=True)
    try:
        service = ServiceProcess(args.url, prefix, env)
        target.base = service.__enter__()
        threads = [threading.Thread(target=writer, args=(n, target, stop, acked, statuses, errors, lock), daemon=True) for n in range(args.writers)]
        for t in threads:
            t.start()
        every = args.seconds / (args.kills + 1)
        for _ in range(args.kills):
            time.sleep(every)
            with lock:
                before = len(acked)
            service.proc.send_signal(signal.SIGKILL)
            service.proc.wait(timeout=30)
            target.base = None
            service.log.close()
            started = time.monotonic()
            service = ServiceProcess(args.url, prefix, env)
            target.base = service.__enter__()
            kills.append({"acknowledged_before": before, "restart_s": round(time.monotonic() - started, 1)})
        time.sleep(every)
        stop.set()
        for t in threads:
            t.join(timeout=60)
        result = {"writers": args.writers, "kills": kills, **verify(client, prefix, target.base, acked),
                  "statuses": {str(k): v for k, v in sorted(statuses.items(), key=str)}, "server_errors": len(errors), "server_error_examples": errors[:5]}
        service.__exit__(None, None, None)
    finally:
        stop.set()
        client.indices.delete(index=f"{prefix}-*", ignore=[404])
        client.indices.delete_index_template(name=f"{prefix}-*", ignore=[404])
        client.close()
    (OUT / "service_faults.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return int(bool(result["lost"] or result["duplicated"] or result["server_errors"] or result["operations_not_completed"]))


if __name__ == "__main__":
    sys.exit(main())
