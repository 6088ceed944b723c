"""`python -m service.mcp`: Engram's MCP server for agents, over stdio (default) or streamable HTTP.

    python -m service.mcp                    stdio: what Claude Desktop / Claude Code launch
    python -m service.mcp --http [--port N]  streamable HTTP on http://127.0.0.1:N/mcp

It talks to a running Engram service over its HTTP API: AUTOMEM_ENDPOINT (default
http://127.0.0.1:8001), AUTOMEM_API_KEY (or AUTOMEM_API_TOKEN, else the token file `make run` and
`engram serve` write: ENGRAM_TOKEN_FILE, default ~/.config/engram/token), AUTOMEM_RECALL_TOKEN_BUDGET.
Logs go to stderr; stdout carries the protocol.
"""

from __future__ import annotations

import argparse
import logging
import sys

import anyio

from service.auth.local_token import LocalTokenError
from service.mcp.server import create_server
from service.mcp.settings import McpSettings

DEFAULT_HTTP_PORT = 8002  # next to the service's 8001
LOOPBACK = "127.0.0.1"
log = logging.getLogger("engram.mcp")


def parse_args(argv: list[str] | None, prog: str = "python -m service.mcp") -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Engram's MCP server (tools store_memory, recall_memory, associate_memories, update_memory, "
        "delete_memory, check_database_health). It calls the Engram service at AUTOMEM_ENDPOINT "
        "(default http://127.0.0.1:8001) with the token in AUTOMEM_API_KEY (or AUTOMEM_API_TOKEN, else the token file of a "
        "local install, ENGRAM_TOKEN_FILE or ~/.config/engram/token); "
        "recall responses stay under AUTOMEM_RECALL_TOKEN_BUDGET estimated tokens (default 18000).",
    )
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP on 127.0.0.1 instead of stdio")
    parser.add_argument("--port", type=int, default=DEFAULT_HTTP_PORT, help=f"HTTP port with --http (default {DEFAULT_HTTP_PORT})")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    return parser.parse_args(argv)


async def serve_stdio(settings: McpSettings) -> None:
    from mcp.server.stdio import stdio_server

    server = create_server(settings)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def serve_http(settings: McpSettings, port: int, log_level: str) -> None:
    import uvicorn

    from service.mcp.client import EngramClient
    from service.mcp.http_auth import TokenGate

    server = create_server(settings)
    # The SDK turns on DNS-rebinding protection for a loopback host (Host / Origin must be local).
    checker = EngramClient(settings.endpoint, None)
    app = TokenGate(server.streamable_http_app(host=LOOPBACK), lambda: checker, settings.mcp_token)
    log.info("MCP over streamable HTTP at http://%s:%d/mcp (bearer token required: %s)", LOOPBACK, port,
             "ENGRAM_MCP_TOKEN or a service token" if settings.mcp_token else "a token the Engram service accepts")
    # No access log: nothing of a request's content reaches the log.
    uvicorn.run(app, host=LOOPBACK, port=port, log_level=log_level, access_log=False)


def main(argv: list[str] | None = None, prog: str = "python -m service.mcp") -> int:
    args = parse_args(argv, prog)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # httpx logs every request's URL at INFO, query string (the agent's recall query) included.
    for noisy in ("httpx", "httpx2", "httpcore"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLogger().level))
    settings = McpSettings()
    if settings.budget_warning:
        log.warning(settings.budget_warning)
    try:
        key, source = settings.api_key_source
    except LocalTokenError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not key:
        log.warning("AUTOMEM_API_KEY is not set and %s does not exist: calls other than check_database_health will get 401 "
                    "from the service", source.removeprefix("the token file "))
    log.info("Engram MCP server: service %s, token from %s, recall budget %d tokens", settings.endpoint,
             source if key else "nowhere", settings.token_budget)
    try:
        if args.http:
            serve_http(settings, args.port, args.log_level)
        else:
            anyio.run(serve_stdio, settings)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
