"""`python -m service` (and `engram serve`) with a bad setting or an unusable engine: exactly one line on
stderr naming the setting, the value tried and what is wrong, and a nonzero exit status."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from service.storage.bootstrap import drop_prefix
from tests.integration.live_server import free_port

ROOT = Path(__file__).resolve().parents[2]


def start(env: dict[str, str], *args: str, module: str = "service") -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SEARCH_", "RECALL_", "OPENSEARCH_", "METRICS_", "LOG_"))}
    full = {**clean, "AUTOMEM_API_TOKEN": "t", "INDEX_PREFIX": "startup-errors", "OPENSEARCH_URL": f"http://127.0.0.1:{free_port()}", **env}
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, env=full, capture_output=True, text=True, timeout=120)


CASES = [
    ({"PORT": "eighty"}, "error: PORT='eighty' is invalid: input should be a valid integer"),
    ({"PORT": "0"}, "error: PORT='0' is invalid: input should be greater than or equal to 1"),
    ({"WRITE_REFRESH": "sometimes"}, "error: WRITE_REFRESH='sometimes' is invalid: input should be 'wait_for', 'true' or 'false'"),
    ({"SEARCH_WEIGHT_VECTOR": "lots"}, "error: SEARCH_WEIGHT_VECTOR='lots' is invalid: input should be a valid number"),
    ({"SEARCH_WEIGHT_RECENCY": "35"}, "error: SEARCH_WEIGHT_RECENCY='35' is invalid: input should be less than or equal to 10"),
    ({"SEARCH_RECENCY_CURVE": "log"}, "error: SEARCH_RECENCY_CURVE='log' is invalid: input should be 'linear' or 'exp'"),
    ({"SEARCH_SCORING_PROFILE": "fast"}, "error: SEARCH_SCORING_PROFILE='fast' is invalid: input should be 'engram' or 'automem'"),
    ({"OPENSEARCH_URL": "localhost:9200"}, "error: OPENSEARCH_URL='localhost:9200' is invalid: malformed URL (no http:// or https:// scheme)"),
    ({"OPENSEARCH_URL": "http//localhost:9200"}, "error: OPENSEARCH_URL='http//localhost:9200' is invalid: malformed URL"),
    ({"OPENSEARCH_URL": "http://localhost:92OO"}, "error: OPENSEARCH_URL='http://localhost:92OO' is invalid: malformed URL (bad port"),
    ({"OPENSEARCH_URL": "https://admin:hunter2@127.0.0.1:1"}, "error: OPENSEARCH_URL='https://admin:***@127.0.0.1:1': OpenSearch is unreachable (connection refused)"),
    ({"OPENSEARCH_URL": "http://no-such-host.invalid:9200"}, "error: OPENSEARCH_URL='http://no-such-host.invalid:9200': OpenSearch is unreachable ("),
    # Without AUTOMEM_API_TOKEN the local token file is used (made on the first start); one that cannot be read is one line.
    ({"AUTOMEM_API_TOKEN": "", "ENGRAM_TOKEN_FILE": "/"}, "error: ENGRAM_TOKEN_FILE='/': cannot read the token file"),
]


def one_line(result: subprocess.CompletedProcess) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    return lines[0]


def test_each_bad_setting_fails_the_start_in_one_line():
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda case: start(case[0]), CASES))
    for (env, expected), result in zip(CASES, results):
        assert result.returncode == 2, (env, result.stderr)
        line = one_line(result)
        assert line.startswith(expected), (env, line)
        assert "hunter2" not in line


def test_a_port_in_use_is_one_line_before_anything_loads():
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = start({"PORT": str(port), "HOST": "127.0.0.1"})
    assert result.returncode == 2
    assert one_line(result) == (f"error: PORT={port}: 127.0.0.1:{port} is already in use "
                                "(another engram? `PORT=8011 engram serve` picks another port)")


def test_an_unreachable_engine_is_named_with_its_url():
    port = free_port()
    line = one_line(result := start({"OPENSEARCH_URL": f"http://127.0.0.1:{port}"}))
    assert result.returncode == 2
    assert line == f"error: OPENSEARCH_URL='http://127.0.0.1:{port}': OpenSearch is unreachable (connection refused)"


def test_something_that_is_not_opensearch_is_said_so():
    from http.server import BaseHTTPRequestHandler, HTTPServer
    import threading

    class NotOpenSearch(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's naming
            body = b"<html>hello</html>"
            self.send_response(200 if self.path == "/" else 404)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), NotOpenSearch)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        result = start({"OPENSEARCH_URL": f"http://127.0.0.1:{server.server_port}"})
    finally:
        server.shutdown()
    assert result.returncode == 2
    assert one_line(result) == f"error: OPENSEARCH_URL='http://127.0.0.1:{server.server_port}': the answer to GET / is not OpenSearch's; is the URL right?"


def test_engram_serve_reports_the_same_way():
    result = start({"SEARCH_WEIGHT_TAG": "-1"}, "serve", module="service.cli.main")
    assert result.returncode == 2
    assert one_line(result) == "error: SEARCH_WEIGHT_TAG='-1' is invalid: input should be greater than or equal to 0"


def test_a_busy_metrics_port_is_one_line(engine_url):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        prefix = f"startup-metrics-{os.getpid()}"
        result = start({"OPENSEARCH_URL": engine_url, "INDEX_PREFIX": prefix, "METRICS_PORT": str(port), "ENRICHMENT_ENABLED": "false",
                        "CONSOLIDATION_TICK_SECONDS": "0"}, "--log-level", "warning")
    from opensearchpy import OpenSearch

    engine = OpenSearch(hosts=[engine_url])
    drop_prefix(engine, prefix)
    assert result.returncode == 2
    assert one_line(result) == f"error: METRICS_PORT={port}: cannot listen on 127.0.0.1:{port} (Address already in use)"


@pytest.mark.parametrize("args", [["--port", "x"]])
def test_a_bad_option_is_argparse_usage(args):
    result = start({}, *args)
    assert result.returncode == 2 and "invalid int value: 'x'" in result.stderr
