"""Engram's MCP server: AutoMem's MCP tools for agents, as a client of Engram's HTTP API.

server.py (the tools over the SDK's low-level Server) · tools.py (names, schemas, annotations) ·
recall_request.py (recall_memory's three modes -> one HTTP request) · formatting.py and budget.py
(pure: previews, stubs, text, the token budget) · client.py (httpx) · settings.py (the env vars).
Run it with `python -m service.mcp [--http]`.
"""
