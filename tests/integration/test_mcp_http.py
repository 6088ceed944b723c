"""`python -m service.mcp --http`: the same tools over streamable HTTP on 127.0.0.1, reached with the
`mcp` SDK's own streamable HTTP client; a request naming another host is refused (DNS rebinding)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import anyio
import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.integration.test_mcp_stdio import PROJECT_ROOT, TOKEN, engram, ok, text  # noqa: F401 - engram is a fixture


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_streamable_http(engram):
    port = free_port()
    env = {**os.environ, "AUTOMEM_ENDPOINT": engram.url, "AUTOMEM_API_KEY": TOKEN}
    proc = subprocess.Popen([sys.executable, "-m", "service.mcp", "--http", "--port", str(port), "--log-level", "warning"],
                            cwd=PROJECT_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stderr.read().decode()
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert time.monotonic() < deadline, "the HTTP server did not start"
                time.sleep(0.1)

        async def scenario():
            async with streamable_http_client(url) as (read, write):
                async with ClientSession(read, write) as session:
                    init = await session.initialize()
                    tools = [t.name for t in (await session.list_tools()).tools]
                    stored = await session.call_tool("store_memory", {"content": "Served over streamable HTTP.", "tags": ["over-http"]})
                    ranked = await session.call_tool("recall_memory", {"query": "streamable HTTP", "tags": ["over-http"], "format": "detailed"})
                    listed = await session.call_tool("recall_memory", {"tags": ["over-http"], "exhaustive": True})
                    refused = await session.call_tool("recall_memory", {"tags": ["over-http"], "exhaustive": True, "query": "x"})
                    return init, tools, stored, ranked, listed, refused

        init, tools, stored, ranked, listed, refused = anyio.run(scenario)
        assert init.server_info.name == "engram" and len(tools) == 6
        mid = ok(stored).structured_content["memory_id"]
        assert [r["memory_id"] for r in ok(ranked).structured_content["results"]] == [mid]
        assert ok(listed).structured_content["results"][0]["memory_id"] == mid and listed.structured_content["has_more"] is False
        assert refused.is_error and "does not accept query" in text(refused)
        # Only loopback Host / Origin headers are served (the SDK's DNS-rebinding protection).
        probe = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        assert httpx.post(url, json=probe, headers={**headers, "Host": "evil.example"}).status_code == 421
        assert httpx.post(url, json=probe, headers={**headers, "Origin": "http://evil.example"}).status_code == 403
    finally:
        proc.terminate()
        proc.wait(timeout=30)
