"""Who is calling: API and admin tokens (spec 003: Authentication) and tokens scoped to banks.

The three ways to present a token are FastAPI security schemes, so the OpenAPI page declares them
and its Authorize button works: `Authorization: Bearer <t>`, `X-API-Key: <t>`, `?api_key=<t>`
(checked in that order). Admin routes also need `X-Admin-Token` (or `X-Admin-Api-Key`).

Tokens:
- AUTOMEM_API_TOKEN: every bank, recall and remember (as AutoMem's one token);
- AUTOMEM_API_TOKEN plus ADMIN_API_TOKEN in X-Admin-Token: also admin, on every bank;
- ENGRAM_TOKENS_FILE (optional): more tokens, each scoped to banks and permissions, stored as
  SHA-256 hashes (never in plain text). `python -m service.auth hash` prints a token's hash.
All comparisons are constant-time.
"""

from __future__ import annotations

import argparse
import getpass
import hashlib
import json
import secrets
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import APIKeyHeader, APIKeyQuery, HTTPAuthorizationCredentials, HTTPBearer

from service.errors import Forbidden, Unauthorized

bearer_scheme = HTTPBearer(auto_error=False, scheme_name="BearerToken", description="AUTOMEM_API_TOKEN (or a scoped token) as a bearer token (recommended)")
header_scheme = APIKeyHeader(name="X-API-Key", auto_error=False, scheme_name="ApiKeyHeader", description="The API token in a header")
query_scheme = APIKeyQuery(name="api_key", auto_error=False, scheme_name="ApiKeyQuery", description="The API token in the query string (kept out of logs)")
admin_scheme = APIKeyHeader(name="X-Admin-Token", auto_error=False, scheme_name="AdminToken", description="ADMIN_API_TOKEN, for admin routes (X-Admin-Api-Key also works)")

# RFC 6750: a 401 says which scheme to use.
CHALLENGE = {"WWW-Authenticate": 'Bearer realm="engram"'}
RECALL, REMEMBER, ADMIN = "recall", "remember", "admin"
PERMISSIONS = (RECALL, REMEMBER, ADMIN)


@dataclass(frozen=True)
class Principal:
    name: str
    banks: frozenset[str] | None  # None: every bank
    permissions: frozenset[str]

    def sees(self, bank: str) -> bool:
        return self.banks is None or bank in self.banks

    def may(self, permission: str) -> bool:
        return permission in self.permissions


API_PRINCIPAL = Principal("api-token", None, frozenset({RECALL, REMEMBER}))
ADMIN_PRINCIPAL = Principal("admin-token", None, frozenset(PERMISSIONS))


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


class TokenFileError(ValueError):
    pass


class TokenRegistry:
    """ENGRAM_TOKENS_FILE: `{"tokens": [{"name": "agent-a", "sha256": "<64 hex>", "banks": ["team-a"] or "*",
    "permissions": ["recall", "remember", "admin"]}]}`."""

    def __init__(self, entries: dict[str, Principal] | None = None):
        self._by_hash = entries or {}

    def __len__(self) -> int:
        return len(self._by_hash)

    @classmethod
    def load(cls, path: str | None) -> TokenRegistry:
        if not path:
            return cls()
        try:
            raw = json.loads(Path(path).expanduser().read_text())
        except (OSError, ValueError) as exc:
            raise TokenFileError(f"ENGRAM_TOKENS_FILE {path}: cannot be read as JSON ({exc})") from None
        entries: dict[str, Principal] = {}
        for i, item in enumerate(raw.get("tokens", []) if isinstance(raw, dict) else []):
            where = f"ENGRAM_TOKENS_FILE {path}: tokens[{i}]"
            digest = str(item.get("sha256", "")).lower()
            if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
                raise TokenFileError(f"{where}: sha256 must be 64 hex characters (python -m service.auth hash)")
            banks = item.get("banks", [])
            if banks != "*" and not (isinstance(banks, list) and banks and all(isinstance(b, str) and b for b in banks)):
                raise TokenFileError(f'{where}: banks must be a non-empty list of bank names, or "*"')
            perms = item.get("permissions", [RECALL])
            if not isinstance(perms, list) or not perms or any(p not in PERMISSIONS for p in perms):
                raise TokenFileError(f"{where}: permissions must be a non-empty list of {', '.join(PERMISSIONS)}")
            entries[digest] = Principal(str(item.get("name") or f"token-{i}"), None if banks == "*" else frozenset(banks), frozenset(perms))
        return cls(entries)

    def find(self, token: str) -> Principal | None:
        digest = hash_token(token)
        found = None
        for known, principal in self._by_hash.items():  # every entry compared: no early exit to time
            if secrets.compare_digest(known, digest):
                found = principal
        return found


def _matches(given: str | None, expected: str | None) -> bool:
    if not given or not expected:
        return False
    return secrets.compare_digest(given.encode("utf-8", "replace"), expected.encode("utf-8", "replace"))


async def presented_api_token(
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)],
    header: Annotated[str | None, Depends(header_scheme)],
    query: Annotated[str | None, Depends(query_scheme)],
) -> str | None:
    if bearer is not None:
        return bearer.credentials.strip()
    return header or query


async def require_api_token(request: Request, token: Annotated[str | None, Depends(presented_api_token)]) -> Principal:
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m service.auth", description="Tokens for ENGRAM_TOKENS_FILE.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("hash", help="print the SHA-256 hash of a token read from stdin (or prompted)")
    sub.add_parser("new", help="make a random token; print it and its hash")
    args = parser.parse_args(argv)
    if args.command == "new":
        token = secrets.token_urlsafe(32)
        print(f"token:  {token}\nsha256: {hash_token(token)}")
        return 0
    token = sys.stdin.readline().strip() if not sys.stdin.isatty() else getpass.getpass("token: ")
    print(hash_token(token))
    return 0


if __name__ == "__main__":
    sys.exit(main())
