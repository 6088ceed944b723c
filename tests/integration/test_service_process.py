"""`python -m service` as a user runs it, against the real engine: LOG_FORMAT=json makes every stderr
line one JSON object (uvicorn's own lines included), request ids are on the request's lines, the
engine client's per-request lines stay out, and Ctrl-C stops it cleanly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from service.storage.bootstrap import drop_prefix
from tests.integration.live_server import free_port

ROOT = Path(__file__).resolve().parents[2]


def run_service(engine_url: str, prefix: str, **env: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SEARCH_", "RECALL_", "OPENSEARCH_", "METRICS_", "LOG_"))}
    full = {**clean, "AUTOMEM_API_TOKEN": "tok", "OPENSEARCH_URL": engine_url, "INDEX_PREFIX": prefix, "PORT": str(port),
            "ENRICHMENT_ENABLED": "false", "CONSOLIDATION_TICK_SECONDS": "0", **env}
    proc = subprocess.Popen([sys.executable, "-m", "service"], cwd=ROOT, env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(proc.stderr.read())
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise AssertionError("the service did not come up")


def stop(proc: subprocess.Popen, sig: int = signal.SIGINT) -> tuple[int, str]:
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    return proc.returncode, err


def cleanup(os_client, prefix: str) -> None:
    drop_prefix(os_client, prefix)


def test_json_logs_request_ids_and_a_clean_stop(engine_url, os_client):
    prefix = f"tproc{os.getpid()}"
    proc, url = run_service(engine_url, prefix, LOG_FORMAT="json")
    try:
        with httpx.Client(base_url=url, headers={"Authorization": "Bearer tok"}, timeout=60) as api:
            stored = api.post("/memory", json={"content": "JSON logs are easy to ship"}, headers={"X-Request-ID": "store-1"})
            assert stored.status_code == 201 and stored.headers["x-request-id"] == "store-1"
            recall = api.get("/recall", params={"query": "secret plans"}, headers={"X-Request-ID": "recall-1"})
            assert recall.headers["x-request-id"] == "recall-1"
            assert api.get(f"/memory/{'x' * 10}").status_code == 404  # an engine 404: no engine line for it
            metrics = api.get("/metrics")
            assert metrics.status_code == 200 and 'handler="/memory/{memory_id}",method="GET",status="404"' in metrics.text
    finally:
        code, err = stop(proc)
        cleanup(os_client, prefix)
    assert code == 130, err  # Ctrl-C, after a complete shutdown
    lines = err.strip().splitlines()
    docs = [json.loads(line) for line in lines]  # every line is one JSON object
    assert all({"time", "level", "logger", "message"} <= set(d) for d in docs)
    by_message = {d["message"]: d for d in docs}
    assert by_message["memory_stored"]["request_id"] == "store-1"
    assert by_message["recall_complete"]["request_id"] == "recall-1" and by_message["recall_complete"]["query_length"] == len("secret plans")
    assert any(d["logger"] == "engram.access" and d["message"].startswith("GET /recall 200") and d["request_id"] == "recall-1" for d in docs)
    up = by_message["engram is up (all-MiniLM-L6-v2+int8-rows-v1, onnx-int8)"]
    assert up["api"] == url and up["docs"] == f"{url}/docs" and up["engine"] == engine_url
    assert any(d["logger"].startswith("uvicorn") for d in docs)  # uvicorn's own lines, in the same format
    assert not any(d["logger"].startswith("opensearch") for d in docs), [d for d in docs if d["logger"].startswith("opensearch")]
    assert "secret" not in err and "plans" not in err and "color_message" not in err
    assert docs[-1]["message"].startswith("Finished server process")
    assert any(d["message"].startswith("enrichment worker stopped") for d in docs)  # the app's shutdown ran


def test_text_logs_carry_request_ids_as_a_field_and_sigterm_stops_cleanly(engine_url, os_client):
    prefix = f"tproctext{os.getpid()}"
    proc, url = run_service(engine_url, prefix, LOG_FORMAT="text")
    try:
        httpx.get(f"{url}/health", headers={"X-Request-ID": "plain-1"}, timeout=30)
    finally:
        code, err = stop(proc, signal.SIGTERM)  # what `docker stop` sends
        cleanup(os_client, prefix)
    # The app's shutdown ran, then uvicorn re-raised the signal: the exit status says SIGTERM.
    assert code == -signal.SIGTERM and "enrichment worker stopped" in err and "Finished server process" in err, err
    (line,) = [line for line in err.splitlines() if "GET /health 200" in line and "plain-1" in line]
    assert line.split(" ", 2)[2].startswith("INFO engram.access: GET /health 200 ") and line.endswith('{"request_id":"plain-1"}')
    banner = err[err.index("engram is up"):].splitlines()[:5]
    assert banner[1] == f"  API     {url}"
