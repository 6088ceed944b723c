"""LangGraph long-term memory (`BaseStore`) on Engram: `from langgraph.store.engram import EngramStore`."""

from langgraph.store.engram.errors import (
    EngramAuthError,
    EngramConnectionError,
    EngramLimitError,
    EngramRequestError,
    EngramServiceError,
    EngramStoreError,
    EngramTimeoutError,
)
from langgraph.store.engram.store import EngramStore, token_from_env

__all__ = [
    "EngramStore",
    "EngramStoreError",
    "EngramConnectionError",
    "EngramTimeoutError",
    "EngramAuthError",
    "EngramRequestError",
    "EngramServiceError",
    "EngramLimitError",
    "token_from_env",
]
