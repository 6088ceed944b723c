"""API and admin tokens as in spec 003 (Authentication), compared in constant time.

The three ways to present the API token are FastAPI security schemes, so the OpenAPI page declares
them and its Authorize button works: `Authorization: Bearer <t>`, `X-API-Key: <t>`, `?api_key=<t>`
(checked in that order). Admin routes also need `X-Admin-Token` (or `X-Admin-Api-Key`).
"""

from __future__ import annotations

import secrets
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import APIKeyHeader, APIKeyQuery, HTTPAuthorizationCredentials, HTTPBearer

from service.errors import Forbidden, Unauthorized

bearer_scheme = HTTPBearer(auto_error=False, scheme_name="BearerToken", description="AUTOMEM_API_TOKEN as a bearer token (recommended)")
header_scheme = APIKeyHeader(name="X-API-Key", auto_error=False, scheme_name="ApiKeyHeader", description="AUTOMEM_API_TOKEN in a header")
query_scheme = APIKeyQuery(name="api_key", auto_error=False, scheme_name="ApiKeyQuery", description="AUTOMEM_API_TOKEN in the query string (kept out of logs)")
admin_scheme = APIKeyHeader(name="X-Admin-Token", auto_error=False, scheme_name="AdminToken", description="ADMIN_API_TOKEN, for admin routes (X-Admin-Api-Key also works)")

# RFC 6750: a 401 says which scheme to use.
CHALLENGE = {"WWW-Authenticate": 'Bearer realm="engram"'}


def _matches(given: str | None, expected: str | None) -> bool:
    if not given or not expected:
        return False
    return secrets.compare_digest(given.encode("utf-8", "replace"), expected.encode("utf-8", "replace"))


def presented_api_token(
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)],
    header: Annotated[str | None, Depends(header_scheme)],
    query: Annotated[str | None, Depends(query_scheme)],
) -> str | None:
    if bearer is not None:
        return bearer.credentials.strip()
    return header or query


def require_api_token(request: Request, token: Annotated[str | None, Depends(presented_api_token)]) -> None:
    if not _matches(token, request.app.state.settings.automem_api_token):
        raise Unauthorized(
            "Missing or invalid API token: send Authorization: Bearer <AUTOMEM_API_TOKEN>, X-API-Key or ?api_key=",
            headers=CHALLENGE,
        )


def require_admin_token(
    request: Request,
    _: Annotated[None, Depends(require_api_token)],
    admin: Annotated[str | None, Depends(admin_scheme)],
) -> None:
    """Admin endpoints need the API token and X-Admin-Token / X-Admin-Api-Key (spec 003: Admin)."""
    expected = request.app.state.settings.admin_api_token
    given = admin or request.headers.get("x-admin-api-key")
    if expected is None:
        raise Forbidden("Admin endpoints are disabled: ADMIN_API_TOKEN is not configured")
    if _matches(expected, request.app.state.settings.automem_api_token):
        # Else the regular token alone would open /backup (spec 003: it must not).
        raise Forbidden("Admin endpoints are disabled: ADMIN_API_TOKEN must differ from AUTOMEM_API_TOKEN")
    if not _matches(given, expected):
        raise Forbidden("Admin token required: send X-Admin-Token or X-Admin-Api-Key")
