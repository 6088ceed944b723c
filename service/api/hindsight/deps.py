"""Dependencies of Hindsight's routes: the bank named in the path, checked against the token; the
bank registry; the token counter (made once per app)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request

from service.api.auth import require_api_token
from service.auth.tokens import RECALL, REMEMBER, Principal
from service.storage.banks import BankRegistry
from service.banks.scope import BANK_PATTERN, BankScope, resolve_bank, valid_bank
from service.errors import BadRequest
from service.api.hindsight.tokens import TokenCounter

BankId = Annotated[str, Path(description="The memory bank (the same banks as AutoMem's X-Bank)", max_length=200)]


def _scope(permission: str):
    async def scope(request: Request, bank_id: BankId, principal: Annotated[Principal, Depends(require_api_token)]) -> BankScope:
        if not valid_bank(bank_id):
            raise BadRequest(f"Invalid bank id {bank_id[:80]!r}: 1-64 letters, digits, '_', '.', ':' or '-', starting with a letter or digit ({BANK_PATTERN})")
        scope = resolve_bank(principal, bank_id, request.app.state.settings.default_bank, permission)
        request.state.bank = scope.bank  # the stream events of this request belong to it
        return scope

    return scope


ReadBank = Annotated[BankScope, Depends(_scope(RECALL))]
WriteBank = Annotated[BankScope, Depends(_scope(REMEMBER))]
CallerDep = Annotated[Principal, Depends(require_api_token)]


async def _registry(request: Request) -> BankRegistry:
    state = request.app.state
    registry = getattr(state, "banks", None)
    if registry is None:
        registry = state.banks = BankRegistry(state.client, state.settings)
    return registry


def _tokens(request: Request) -> TokenCounter:
    state = request.app.state
    counter = getattr(state, "hindsight_tokens", None)
    if counter is None:
        counter = state.hindsight_tokens = TokenCounter(state.embedder)
    return counter


RegistryDep = Annotated[BankRegistry, Depends(_registry)]
TokensDep = Annotated[TokenCounter, Depends(_tokens)]
