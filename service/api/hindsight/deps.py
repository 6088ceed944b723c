"""Dependencies of Hindsight's routes: the bank named in the path, checked against the token (the one
bank scope, service/api/scope.py); the bank registry; the async operations; the token counter (made once per app, on first use: it loads the model's tokenizer)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from service.api.deps import RegistryDep
from service.api.hindsight.operations import RetainOperations
from service.api.hindsight.tokens import TokenCounter
from service.api.scope import CallerScope, PathReadScope, PathWriteScope

ReadBank = PathReadScope
WriteBank = PathWriteScope
CallerDep = CallerScope


def _tokens(request: Request) -> TokenCounter:
    state = request.app.state
    counter = getattr(state, "hindsight_tokens", None)
    if counter is None:
        counter = state.hindsight_tokens = TokenCounter(state.embedder)
    return counter


TokensDep = Annotated[TokenCounter, Depends(_tokens)]


def _operations(request: Request) -> RetainOperations:
    return request.app.state.hindsight_operations


OperationsDep = Annotated[RetainOperations, Depends(_operations)]

__all__ = ["CallerDep", "OperationsDep", "ReadBank", "RegistryDep", "TokensDep", "WriteBank"]
