"""The MCP server's only way to the memories: Engram's HTTP API, over one httpx.AsyncClient.

Every failure becomes an ApiError whose message the tool shows the agent as is: the service's own
error message and status, a timeout, or an unreachable endpoint (with the URL to check).
"""

from __future__ import annotations

import copy
import json
from typing import Any
from urllib.parse import quote

import httpx

# mcp-automem's automem-client.ts: 25 s, under Claude Desktop's ~30 s tool timeout.
REQUEST_TIMEOUT_S = 25.0


class ApiError(Exception):
    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.message = message
        self.status = status


def _body(payload: Any) -> bytes:
    try:
        # ASCII escapes: a lone surrogate reaches the service (which refuses it with a 400) instead of
        # failing here in the encoder.
        return json.dumps(payload, ensure_ascii=True, allow_nan=False).encode()
    except ValueError as exc:
        raise ApiError(f"the arguments cannot be sent as JSON: {exc} (NaN and Infinity are not JSON numbers)") from None


class EngramClient:
    def __init__(self, endpoint: str, api_key: str | None, *, timeout: float = REQUEST_TIMEOUT_S, transport: httpx.AsyncBaseTransport | None = None):
        self.endpoint = endpoint.rstrip("/")
        self.timeout = timeout
        self._auth = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.AsyncClient(base_url=self.endpoint, headers={"Accept": "application/json", "User-Agent": "engram-mcp"},
                                       timeout=timeout, transport=transport)

    def with_token(self, token: str) -> EngramClient:
        """The same connection pool, calling the service with another token (an HTTP caller's own)."""
        other = copy.copy(self)
        other._auth = {"Authorization": f"Bearer {token}"}
        return other

    async def aclose(self) -> None:
        await self._http.aclose()

    async def request(self, method: str, path: str, *, params: Any = None, body: Any = None) -> dict[str, Any]:
        content = _body(body) if body is not None else None
        headers = {**self._auth, **({"Content-Type": "application/json"} if content is not None else {})}
        try:
            resp = await self._http.request(method, path, params=params, content=content, headers=headers)
        except httpx.TimeoutException:
            raise ApiError(f"Engram at {self.endpoint} did not answer {method} {path} within {self.timeout:g} s") from None
        except (httpx.TransportError, UnicodeError) as exc:
            raise ApiError(f"cannot reach Engram at {self.endpoint} ({type(exc).__name__}: {exc}); check AUTOMEM_API_URL (or AUTOMEM_ENDPOINT)") from None
        try:
            data = resp.json()
        except ValueError:
            data = None
        if resp.status_code >= 400:
            message = (data.get("message") or data.get("detail")) if isinstance(data, dict) else None
            if not isinstance(message, str):
                message = json.dumps(message) if message else None
            if resp.status_code == 401:
                message = f"{message or 'unauthorized'}; set AUTOMEM_API_KEY to the service's AUTOMEM_API_TOKEN"
            raise ApiError(f"{message or resp.reason_phrase} (HTTP {resp.status_code})", resp.status_code)
        if not isinstance(data, dict):
            raise ApiError(f"Engram answered {method} {path} with something other than a JSON object (HTTP {resp.status_code})")
        return data

    # --- the routes the tools use ----------------------------------------------------------------------
    async def store(self, memory: dict[str, Any]) -> dict[str, Any]:
        return await self.request("POST", "/memory", body=memory)

    async def store_batch(self, memories: list[dict[str, Any]]) -> dict[str, Any]:
        return await self.request("POST", "/memory/batch", body={"memories": memories})

    async def get(self, path: str, params: Any = None) -> dict[str, Any]:
        return await self.request("GET", path, params=params)

    async def associate(self, body: dict[str, Any]) -> dict[str, Any]:
        return await self.request("POST", "/associate", body=body)

    async def update(self, memory_id: str, changes: dict[str, Any]) -> dict[str, Any]:
        return await self.request("PATCH", f"/memory/{quote(memory_id, safe='')}", body=changes)

    async def delete(self, memory_id: str) -> dict[str, Any]:
        return await self.request("DELETE", f"/memory/{quote(memory_id, safe='')}")

    async def delete_by_tags(self, tags: list[str]) -> dict[str, Any]:
        return await self.request("DELETE", "/memory/by-tag", params=[("tags", t) for t in tags])

    async def health(self) -> dict[str, Any]:
        return await self.request("GET", "/health")

    async def accepts_token(self) -> bool:
        """Whether the service takes this client's token (one cheap authenticated read); False on a 401."""
        try:
            await self.request("GET", "/stream/status")
        except ApiError as exc:
            if exc.status in (401, 403):
                return False
            raise
        return True
