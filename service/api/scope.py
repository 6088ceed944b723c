"""The bank scope of a request: the one dependency every authenticated route declares.

A request names its bank the way its surface does; a small *extractor* reads that name:
    header_or_query   X-Bank, else `?bank=` (AutoMem's routes, and every route that names no other way)
    admin_named       the same, `?bank=` documented (the admin routes' query parameter)
    admin_body        POST /admin/reembed: the body's `bank`, else X-Bank / `?bank=`
    hindsight_path    Hindsight's /v1/default/banks/{bank_id}/...
    signet_scope      Signet's `scope` (in the body or the query string), else X-Bank / `?bank=`
and every scope ends the same way: `resolve_bank` (service/banks/scope.py) with the token's banks and
the route's permission (recall for reads, remember for writes, admin for admin routes). A bank outside
the token's scope is a 404, as if it did not exist; a missing permission is a 403.

`CallerScope` is the scope of the routes that act on no one bank (the bank list, the event stream):
the token's permission, and its banks for the route to filter on.

Each scope dependency is registered in SCOPES: tests/unit/test_route_scope.py walks `app.routes` and
fails any authenticated route whose dependencies hold none.
"""

# No `from __future__ import annotations`: the scopes' parameters are annotated with the extractor and
# principal of each closure, which FastAPI must see as objects, not as strings to look up globally.
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import Depends, Header, Path, Query, Request

from service.api.auth import require_admin_token, require_api_token
from service.api.deps import SettingsDep
from service.auth.tokens import ADMIN, RECALL, REMEMBER, Principal
from service.banks.scope import BANK_PATTERN, BankScope, resolve_bank, valid_bank
from service.errors import BadRequest, Forbidden

SCOPES: set[Callable[..., Any]] = set()

BankHeader = Annotated[str | None, Header(alias="X-Bank", description="The memory bank to act on (default DEFAULT_BANK); `bank` in the query string also works")]
BankQuery = Annotated[str | None, Query(alias="bank", include_in_schema=False)]
AdminBankQuery = Annotated[str | None, Query(alias="bank", description="The bank to act on (default: DEFAULT_BANK; X-Bank also works)")]
BankId = Annotated[str, Path(description="The memory bank (the same banks as AutoMem's X-Bank)", max_length=200)]
SignetScope = Annotated[str | None, Query(alias="scope", max_length=200, description="Signet's memory scope: the bank to read (as X-Bank)")]


# --- extractors: the bank a request names (None: it names none) --------------------------------------
async def header_or_query(header: BankHeader = None, query: BankQuery = None) -> str | None:
    return header or query


async def admin_named(header: BankHeader = None, query: AdminBankQuery = None) -> str | None:
    return header or query


async def _json_field(request: Request, name: str) -> Any:
    """A top-level field of a JSON body. FastAPI parsed the body before the dependencies run and
    Starlette keeps it (Request.json caches), so this reads no byte twice; a body that is no JSON
    object names nothing (the route's own model answers for it)."""
    try:
        body = await request.json()
    except ValueError:
        return None
    return body.get(name) if isinstance(body, dict) else None


# The routes no token is asked for: liveness and readiness, the docs, Hindsight's version, and
# /metrics (which checks its own scrape token). Every other route declares a scope
# (tests/unit/test_route_scope.py and the isolation matrix read this set).
OPEN_PATHS = frozenset({"/health", "/ready", "/docs", "/redoc", "/openapi.json", "/metrics", "/version"})


def _one(*names: Any, what: str) -> str | None:
    """The one bank named; two different ones are a 400."""
    named = list(dict.fromkeys(n.strip() for n in names if isinstance(n, str) and n.strip()))
    if len(named) > 1:
        raise BadRequest(f"{what} name different banks ({named[0][:80]!r}, {named[1][:80]!r}); send one")
    return named[0] if named else None


async def admin_body(request: Request, header: BankHeader = None, query: AdminBankQuery = None) -> str | None:
    return _one(await _json_field(request, "bank"), header or query, what="the body's bank and X-Bank / ?bank=")


RULE = f"1-64 letters, digits, '_', '.', ':' or '-', starting with a letter or digit ({BANK_PATTERN})"


def _valid(name: Any, where: str) -> Any:
    """A bank name the client gave in `where`, refused naming it when it cannot be a bank."""
    if isinstance(name, str) and name.strip() and not valid_bank(name.strip()):
        raise BadRequest(f"Invalid bank {name[:80]!r} in {where}: {RULE}")
    return name


async def hindsight_path(bank_id: BankId) -> str:
    if not valid_bank(bank_id):
        raise BadRequest(f"Invalid bank id {bank_id[:80]!r}: {RULE}")
    return bank_id


async def signet_scope(request: Request, scope: SignetScope = None, header: BankHeader = None, query: BankQuery = None) -> str | None:
    """spec 004's `scope` is an exact memory-scope string (`world:alpha`): here, the bank."""
    body = await _json_field(request, "scope")
    return _one(_valid(body, "scope"), _valid(scope, "scope"), header or query, what="scope and X-Bank / ?bank=")


# --- scopes --------------------------------------------------------------------------------------------
def bank_scope(permission: str, named: Callable[..., Any], principal: Callable[..., Any] = require_api_token) -> Callable[..., Any]:
    """The dependency: the bank `named` reads, resolved for the token `principal` gives, with `permission`."""

    async def scope(request: Request, settings: SettingsDep, who: Annotated[Principal, Depends(principal)],
                    bank: Annotated[str | None, Depends(named)]) -> BankScope:
        resolved = resolve_bank(who, bank, settings.default_bank, permission)
        request.state.bank = resolved.bank  # the stream events of this request belong to it
        return resolved

    SCOPES.add(scope)
    return scope


def caller_scope(permission: str) -> Callable[..., Any]:
    async def caller(who: Annotated[Principal, Depends(require_api_token)]) -> Principal:
        if not who.may(permission):
            raise Forbidden(f"token '{who.name}' lacks the {permission} permission")
        return who

    SCOPES.add(caller)
    return caller


def is_scope(call: Callable[..., Any] | None) -> bool:
    return call in SCOPES


ReadScope = Annotated[BankScope, Depends(bank_scope(RECALL, header_or_query))]
WriteScope = Annotated[BankScope, Depends(bank_scope(REMEMBER, header_or_query))]
AdminScope = Annotated[BankScope, Depends(bank_scope(ADMIN, admin_named, require_admin_token))]
AdminBodyScope = Annotated[BankScope, Depends(bank_scope(ADMIN, admin_body, require_admin_token))]
PathReadScope = Annotated[BankScope, Depends(bank_scope(RECALL, hindsight_path))]
PathWriteScope = Annotated[BankScope, Depends(bank_scope(REMEMBER, hindsight_path))]
SignetReadScope = Annotated[BankScope, Depends(bank_scope(RECALL, signet_scope))]
SignetWriteScope = Annotated[BankScope, Depends(bank_scope(REMEMBER, signet_scope))]
CallerScope = Annotated[Principal, Depends(caller_scope(RECALL))]
