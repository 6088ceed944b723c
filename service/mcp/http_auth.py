"""Who may call the MCP server over HTTP: every request to `engram mcp --http` carries a bearer token,
either the MCP server's own (ENGRAM_MCP_TOKEN: its tool calls then use AUTOMEM_API_KEY) or one the
Engram service accepts (its tool calls then run with that token, so a scoped token stays scoped).
Without one the answer is a 401; the service's verdict on a token is kept for a few minutes. No query
text or token is ever logged."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from collections.abc import Callable

from service.mcp.client import ApiError, EngramClient

log = logging.getLogger("engram.mcp")

# A token the service accepted is trusted this long before it is asked again; refusals are not kept,
# so a token added to the service's tokens file works at once.
ACCEPTED_FOR_S = 300.0
CHALLENGE = [(b"www-authenticate", b'Bearer realm="engram-mcp"')]


def bearer(headers: list[tuple[bytes, bytes]]) -> str | None:
    for name, value in headers:
        if name.lower() == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() or None if scheme.lower() == "bearer" else None
    return None


class TokenGate:
    """ASGI middleware in front of the streamable HTTP app."""

    def __init__(self, app, client: Callable[[], EngramClient], own_token: str | None):
        self.app, self.client, self.own_token = app, client, own_token
        self._accepted: dict[str, float] = {}

    def is_own(self, token: str | None) -> bool:
        return bool(token and self.own_token and hmac.compare_digest(token.encode(), self.own_token.encode()))

    async def allowed(self, token: str | None) -> bool:
        if not token:
            return False
        if self.is_own(token):
            return True
        key = hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()
        now = time.monotonic()
        if self._accepted.get(key, 0.0) > now:
            return True
        try:
            ok = await self.client().with_token(token).accepts_token()
        except ApiError as exc:
            log.warning("MCP HTTP: the service could not check a token (%s)", exc.status or "unreachable")
            return False
        if ok:
            if len(self._accepted) > 10_000:
                self._accepted.clear()
            self._accepted[key] = now + ACCEPTED_FOR_S
        return ok

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or await self.allowed(bearer(scope.get("headers") or [])):
            await self.app(scope, receive, send)
            return
        body = json.dumps({"error": "unauthorized", "message": "send Authorization: Bearer <ENGRAM_MCP_TOKEN or a token the Engram service accepts>"}).encode()
        await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"application/json"), *CHALLENGE]})
        await send({"type": "http.response.body", "body": body})


def caller_token(request) -> str | None:
    """The bearer token of the HTTP request a tool call came in (None over stdio)."""
    headers = getattr(request, "headers", None)
    if headers is None:
        return None
    scheme, _, token = (headers.get("authorization") or "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


