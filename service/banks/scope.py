"""Memory banks: every memory and edge carries a `bank` keyword that every query filters on.

AutoMem's routes act on the default bank (DEFAULT_BANK, `default`) unless the request names one,
with an `X-Bank` header or a `bank` query parameter; AutoMem clients, which send neither, are
unchanged. A token scoped to other banks is answered as if the bank did not exist (404): a token
never learns about, let alone sees, a bank outside its scope.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from service.auth.tokens import Principal
from service.errors import BadRequest, Forbidden, NotFound

BANK_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,63}$"
_BANK_RE = re.compile(BANK_PATTERN)


def valid_bank(name: str) -> bool:
    return bool(_BANK_RE.match(name))


@dataclass(frozen=True)
class BankScope:
    """The bank a request acts on, and who asked."""

    bank: str
    principal: Principal


def resolve_bank(principal: Principal, requested: str | None, default: str, permission: str) -> BankScope:
    """The bank named, else the token's only bank (a token scoped to one bank needs no X-Bank), else `default`."""
    if principal.banks is not None and len(principal.banks) == 1:
        default = next(iter(principal.banks))
    bank = (requested or "").strip() or default
    if not valid_bank(bank):
        raise BadRequest(f"Invalid bank {bank[:80]!r}: 1-64 letters, digits, '_', '.', ':' or '-', starting with a letter or digit")
    if not principal.sees(bank):
        raise NotFound(f"Bank {bank} not found")
    if not principal.may(permission):
        raise Forbidden(f"token '{principal.name}' lacks the {permission} permission")
    return BankScope(bank, principal)
