"""`python -m service.mcp --http`: the same tools over streamable HTTP on 127.0.0.1, reached with the
`mcp` SDK's own streamable HTTP client; a request without a bearer token (the MCP server's own or one
the service accepts) is a 401, a request naming another host is refused (DNS rebinding), and nothing
a caller sends reaches the log."""

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


MCP_TOKEN = "mcp-own-token"


def start(engram, port: int, **env: str) -> subprocess.Popen:
    env = {**os.environ, "AUTOMEM_API_URL": engram.url, "AUTOMEM_API_KEY": TOKEN, **env}
    proc = subprocess.Popen([sys.executable, "-m", "service.mcp", "--http", "--port", str(port), "--log-level", "info"],
                            cwd=PROJECT_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, proc.stderr.read().decode()
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return proc
        except OSError:
            assert time.monotonic() < deadline, "the HTTP server did not start"
            time.sleep(0.1)


def session_with(url: str, token: str | None):
    from mcp.shared._httpx_utils import create_mcp_http_client

    return create_mcp_http_client(headers={"Authorization": f"Bearer {token}"} if token else None)


def test_streamable_http(engram):
    port = free_port()
    proc = start(engram, port, ENGRAM_MCP_TOKEN=MCP_TOKEN)
    url = f"http://127.0.0.1:{port}/mcp"
    secret_query = "streamable HTTP zebra-unlogged"
    try:
        async def scenario(token):
            async with session_with(url, token) as http, streamable_http_client(url, http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    init = await session.initialize()
                    tools = [t.name for t in (await session.list_tools()).tools]
                    stored = await session.call_tool("store_memory", {"content": "Served over streamable HTTP.", "tags": ["over-http"]})
                    ranked = await session.call_tool("recall_memory", {"query": secret_query, "tags": ["over-http"], "format": "detailed"})
                    listed = await session.call_tool("recall_memory", {"tags": ["over-http"], "exhaustive": True})
                    refused = await session.call_tool("recall_memory", {"tags": ["over-http"], "exhaustive": True, "query": "x"})
                    return init, tools, stored, ranked, listed, refused

        init, tools, stored, ranked, listed, refused = anyio.run(scenario, MCP_TOKEN)  # the MCP server's own token
        assert init.server_info.name == "engram" and len(tools) == 6
        mid = ok(stored).structured_content["memory_id"]
        assert [r["memory_id"] for r in ok(ranked).structured_content["results"]] == [mid]
        assert ok(listed).structured_content["results"][0]["memory_id"] == mid and listed.structured_content["has_more"] is False
        assert refused.is_error and "does not accept query" in text(refused)
        # The service's own token works too: the calls then run with it.
        _, _, stored_again, _, _, _ = anyio.run(scenario, TOKEN)
        ok(stored_again)

        probe = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        # No token, a wrong one, another scheme: 401 with the challenge, before anything runs.
        for auth in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"}):
            resp = httpx.post(url, json=probe, headers={**headers, **auth})
            assert resp.status_code == 401 and resp.headers["www-authenticate"].startswith("Bearer"), auth
        # Only loopback Host / Origin headers are served (the SDK's DNS-rebinding protection).
        authed = {**headers, "Authorization": f"Bearer {MCP_TOKEN}"}
        assert httpx.post(url, json=probe, headers={**authed, "Host": "evil.example"}).status_code == 421
        assert httpx.post(url, json=probe, headers={**authed, "Origin": "http://evil.example"}).status_code == 403
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    logged = proc.stderr.read().decode()
    assert "recall_memory ok" in logged  # the calls are logged ...
    assert "zebra-unlogged" not in logged and TOKEN not in logged and MCP_TOKEN not in logged  # ... never what they carried
