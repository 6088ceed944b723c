"""EngramStore: LangGraph's BaseStore on an Engram service, over its HTTP API only."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import httpx
from langgraph.store.base import BaseStore, GetOp, IndexConfig, ListNamespacesOp, Op, PutOp, Result, SearchOp, TTLConfig

from langgraph.store.engram import _plans as P
from langgraph.store.engram._http import Call, Plan, Transport
from langgraph.store.engram.errors import EngramStoreError

DEFAULT_URL = "http://127.0.0.1:8001"
TOKEN_FILE = Path("~/.config/engram/token")  # where `make run` stores the service's token
DEFAULT_TIMEOUT = 30.0


def token_from_env() -> str | None:
    """ENGRAM_TOKEN, else AUTOMEM_API_TOKEN, else the file ENGRAM_TOKEN_FILE names, else ~/.config/engram/token."""
    for name in ("ENGRAM_TOKEN", "AUTOMEM_API_TOKEN"):
        if os.environ.get(name, "").strip():
            return os.environ[name].strip()
    path = Path(os.environ.get("ENGRAM_TOKEN_FILE") or TOKEN_FILE).expanduser()
    try:
        return path.read_text().strip() or None
    except OSError:
        return None


class EngramStore(BaseStore):
    """Long-term memory for LangGraph agents in an Engram service (hybrid recall on OpenSearch).

    Sync (`get`, `put`, `search`, ...) and async (`aget`, `aput`, ...) alike. Namespaces become tags of
    one bank (`bank`, else the token's default bank); `put` of an existing key supersedes the old value,
    which stays as history (`history()`); `search(query=...)` is the service's ranked recall with its
    scores; `ttl` (minutes) sets the memory's validity end, moved on by reads unless `refresh_ttl=False`.

    Args:
        url: the service, e.g. http://127.0.0.1:8001 (default: ENGRAM_URL, else that).
        token: the API token (default: ENGRAM_TOKEN, AUTOMEM_API_TOKEN, then ~/.config/engram/token).
        bank: the memory bank (sent as X-Bank); None: the token's own bank or the service's DEFAULT_BANK.
        fields: value paths whose text is embedded and searched (LangGraph's path syntax; default: every field).
        index: LangGraph's IndexConfig; only its `fields` apply (the service embeds with its own model).
        ttl: LangGraph's TTLConfig: `default_ttl` (minutes) and `refresh_on_read`.
        timeout: seconds per HTTP request (connect at most 10 s): a service that hangs raises, never blocks.
    """

    supports_ttl = True

    def __init__(self, url: str | None = None, token: str | None = None, bank: str | None = None, *,
                 fields: list[str] | None = None, index: IndexConfig | None = None, ttl: TTLConfig | None = None,
                 timeout: float | httpx.Timeout = DEFAULT_TIMEOUT, headers: dict[str, str] | None = None) -> None:
        url = (url or os.environ.get("ENGRAM_URL") or DEFAULT_URL).strip()
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"url must start with http:// or https://, got {url!r}")
        token = token if token is not None else token_from_env()
        if bank is not None and not bank.strip():
            raise ValueError("bank must be a non-empty name or None")
        self.url = url.rstrip("/")
        self.bank = bank
        self.fields = list(fields) if fields is not None else (list(index["fields"]) if index and index.get("fields") else None)
        self.ttl_config = ttl
        all_headers = {"Accept": "application/json", **(headers or {})}
        if token:
            all_headers["Authorization"] = f"Bearer {token}"
        if bank:
            all_headers["X-Bank"] = bank
        self._http = Transport(self.url, all_headers, timeout)

    @classmethod
    def from_env(cls, **kwargs: Any) -> EngramStore:
        """ENGRAM_URL, the token (see `token_from_env`) and ENGRAM_BANK; keyword arguments win."""
        kwargs.setdefault("bank", os.environ.get("ENGRAM_BANK") or None)
        return cls(**kwargs)

    def __repr__(self) -> str:
        return f"EngramStore(url={self.url!r}, bank={self.bank!r})"

    # --- BaseStore ------------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return self._http.run(self._batch(list(ops)))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await self._http.arun(self._batch(list(ops)))

    def _batch(self, ops: list[Op]) -> Plan[list[Result]]:
        """Reads first, in order, then the writes (the last write of a key wins), as InMemoryStore:
        a batch's reads see the store as it was before the batch."""
        for op in ops:
            P.check_op(op)
        results: list[Result] = [None] * len(ops)
        gets = [i for i, op in enumerate(ops) if isinstance(op, GetOp)]
        if gets:
            for i, item in zip(gets, (yield from P.get_items([ops[i] for i in gets]))):  # type: ignore[misc]
                results[i] = item
        for i, op in enumerate(ops):
            if isinstance(op, SearchOp):
                results[i] = yield from P.search_items(op)
            elif isinstance(op, ListNamespacesOp):
                results[i] = yield from P.list_namespaces(op)
        writes: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            if isinstance(op, PutOp):
                writes.pop((tuple(op.namespace), op.key), None)  # re-insert: the order of last writes
                writes[(tuple(op.namespace), op.key)] = op
        if writes:
            yield from P.put_items(list(writes.values()), bank=self.bank, fields=self.fields)
        return results

    # --- beyond BaseStore -------------------------------------------------------------------------
    def history(self, namespace: tuple[str, ...], key: str) -> list:
        """The values `put` replaced, oldest first (each an Item with the times it had)."""
        return self._http.run(P.history(tuple(namespace), key))

    async def ahistory(self, namespace: tuple[str, ...], key: str) -> list:
        return await self._http.arun(P.history(tuple(namespace), key))

    def sweep_ttl(self, prefix: tuple[str, ...] = ()) -> int:
        """Delete the items under `prefix` whose TTL ran out (reads already skip them); returns how many."""
        return self._http.run(P.sweep(tuple(prefix)))

    async def asweep_ttl(self, prefix: tuple[str, ...] = ()) -> int:
        return await self._http.arun(P.sweep(tuple(prefix)))

    def ping(self) -> dict:
        """GET /health, then an authenticated read: raises a clear error for a wrong URL or token."""
        return self._http.run(_ping())

    async def aping(self) -> dict:
        return await self._http.arun(_ping())

    def close(self) -> None:
        self._http.close()

    async def aclose(self) -> None:
        await self._http.aclose()

    def __enter__(self) -> EngramStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> EngramStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _ping() -> Plan[dict]:
    health = yield Call("GET", "/health")
    if not isinstance(health, dict) or "status" not in health:
        raise EngramStoreError("GET /health did not answer like Engram")
    yield Call("GET", "/memory/by-tag", [("tags", "langgraph-store"), ("limit", 1)])
    return health
