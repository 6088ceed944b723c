"""API and admin tokens as in spec 003 (Authentication), compared in constant time."""

from __future__ import annotations

import secrets

from fastapi import Request

from service.errors import Forbidden, Unauthorized


def _matches(given: str | None, expected: str | None) -> bool:
    if not given or not expected:
        return False
    return secrets.compare_digest(given.encode(), expected.encode())


def presented_api_token(request: Request) -> str | None:
    """Authorization: Bearer <t>, X-API-Key: <t>, or ?api_key=<t> — in that order."""
    auth = request.headers.get("authorization", "")
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip()
    return request.headers.get("x-api-key") or request.query_params.get("api_key")


def require_api_token(request: Request) -> None:
    expected = request.app.state.settings.automem_api_token
    if not _matches(presented_api_token(request), expected):
        raise Unauthorized("Missing or invalid API token: send Authorization: Bearer <AUTOMEM_API_TOKEN>, X-API-Key or ?api_key=")


def require_admin_token(request: Request) -> None:
    """Admin endpoints need the API token and X-Admin-Token / X-Admin-Api-Key (spec 003: Admin)."""
    require_api_token(request)
    expected = request.app.state.settings.admin_api_token
    given = request.headers.get("x-admin-token") or request.headers.get("x-admin-api-key")
    if expected is None:
        raise Forbidden("Admin endpoints are disabled: ADMIN_API_TOKEN is not configured")
    if _matches(expected, request.app.state.settings.automem_api_token):
        # Else the regular token alone would open /backup (spec 003: it must not).
        raise Forbidden("Admin endpoints are disabled: ADMIN_API_TOKEN must differ from AUTOMEM_API_TOKEN")
    if not _matches(given, expected):
        raise Forbidden("Admin token required: send X-Admin-Token or X-Admin-Api-Key")
