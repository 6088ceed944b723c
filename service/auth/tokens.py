"""Who may call: principals (a token's banks and permissions) and the scoped tokens' file.
How a request presents its token is service/api/auth.py.

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


def main(argv: list[str] | None = None, prog: str = "python -m service.auth") -> int:
    parser = argparse.ArgumentParser(prog=prog, description="Tokens for ENGRAM_TOKENS_FILE.")
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
