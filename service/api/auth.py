"""How a request presents its token (spec 003: Authentication), as FastAPI security schemes, so the
OpenAPI page declares them and its Authorize button works: `Authorization: Bearer <t>`,
`X-API-Key: <t>`, `?api_key=<t>` (checked in that order). Admin routes also need `X-Admin-Token`
(or `X-Admin-Api-Key`). All comparisons are constant-time."""

from __future__ import annotations

import secrets
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import APIKeyHeader, APIKeyQuery, HTTPAuthorizationCredentials, HTTPBearer

from service.auth.tokens import ADMIN, ADMIN_PRINCIPAL, API_PRINCIPAL, Principal, TokenRegistry
from service.errors import Forbidden, Unauthorized

bearer_scheme = HTTPBearer(auto_error=False, scheme_name="BearerToken", description="AUTOMEM_API_TOKEN (or a scoped token) as a bearer token (recommended)")
header_scheme = APIKeyHeader(name="X-API-Key", auto_error=False, scheme_name="ApiKeyHeader", description="The API token in a header")
query_scheme = APIKeyQuery(name="api_key", auto_error=False, scheme_name="ApiKeyQuery", description="The API token in the query string (kept out of logs)")
admin_scheme = APIKeyHeader(name="X-Admin-Token", auto_error=False, scheme_name="AdminToken", description="ADMIN_API_TOKEN, for admin routes (X-Admin-Api-Key also works)")

# RFC 6750: a 401 says which scheme to use.
CHALLENGE = {"WWW-Authenticate": 'Bearer realm="engram"'}
def _matches(given: str | None, expected: str | None) -> bool:
    if not given or not expected:
        return False
    return secrets.compare_digest(given.encode("utf-8", "replace"), expected.encode("utf-8", "replace"))


def presented_api_token(bearer: HTTPAuthorizationCredentials | None, header: str | None, query: str | None) -> str | None:
    if bearer is not None:
        return bearer.credentials.strip()
    return header or query


# The schemes are its own dependencies, not those of a dependency of it: FastAPI walks every level of
# a dependency's tree on each use, cached or not (~0.01 ms a level).
async def require_api_token(
    request: Request,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)],
    header: Annotated[str | None, Depends(header_scheme)],
    query: Annotated[str | None, Depends(query_scheme)],
) -> Principal:
    token = presented_api_token(bearer, header, query)
    settings = request.app.state.settings
    principal = None
    if token:
        if _matches(token, settings.automem_api_token):
            principal = API_PRINCIPAL
        else:
            principal = getattr(request.app.state, "tokens", TokenRegistry()).find(token)
    if principal is None:
        raise Unauthorized(
            "Missing or invalid API token: send Authorization: Bearer <AUTOMEM_API_TOKEN>, X-API-Key or ?api_key=",
            headers=CHALLENGE,
        )
    request.state.principal = principal
    return principal


async def require_admin_token(
    request: Request,
    principal: Annotated[Principal, Depends(require_api_token)],
    admin: Annotated[str | None, Depends(admin_scheme)],
) -> Principal:
    """Admin endpoints (spec 003: Admin): the API token and X-Admin-Token / X-Admin-Api-Key, or a scoped
    token with the admin permission (on its own banks)."""
    if principal is not API_PRINCIPAL:
        if not principal.may(ADMIN):
            raise Forbidden(f"token '{principal.name}' lacks the admin permission")
        return principal
    settings = request.app.state.settings
    expected = settings.admin_api_token
    given = admin or request.headers.get("x-admin-api-key")
    if expected is None:
        raise Forbidden("Admin endpoints are disabled: ADMIN_API_TOKEN is not configured")
    # The same value for both would let the regular token alone open admin routes (/backup).
    if _matches(expected, settings.automem_api_token):
        raise Forbidden("Admin endpoints are disabled: ADMIN_API_TOKEN must differ from AUTOMEM_API_TOKEN")
    if not _matches(given, expected):
        raise Forbidden("Admin token required: send X-Admin-Token or X-Admin-Api-Key")
    request.state.principal = ADMIN_PRINCIPAL
    return ADMIN_PRINCIPAL
