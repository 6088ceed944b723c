"""HTTP for the store: the calls its plans yield, run by a sync or an async driver.

A plan is a generator that yields a `Call` (or a list of calls that may run concurrently) and is sent
back the decoded answer (None for an allowed 404), so every operation is written once and both
`batch` and `abatch` run the same code.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

from langgraph.store.engram.errors import (
    EngramAuthError, EngramConnectionError, EngramRequestError, EngramServiceError, EngramStoreError, EngramTimeoutError,
)

T = TypeVar("T")
Plan = Generator["Call | list[Call]", Any, T]
# Seconds of read timeout a written memory adds (embedding on a loaded 2-core machine is ~10-50 ms).
PER_ITEM_SECONDS = 0.2
# Concurrent calls of one async step (TTL refreshes): enough to overlap round trips, few enough not to
# queue up in the service's worker threads.
ASYNC_FANOUT = 8


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    params: list[tuple[str, Any]] = field(default_factory=list)
    body: Any = None
    allow_404: bool = False
    items: int = 0  # memories the call writes: each is embedded before the answer, so it earns time


class Transport:
    """One sync and one async httpx client (each made on first use) with the store's headers."""

    def __init__(self, url: str, headers: dict[str, str], timeout: float | httpx.Timeout):
        self.url = url.rstrip("/")
        self.headers = headers
        self.timeout = timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout, connect=min(float(timeout), 10.0))
        self._sync: httpx.Client | None = None
        self._async: httpx.AsyncClient | None = None
        self._async_loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()  # LangGraph runs sync nodes of one step in threads

    # --- clients ----------------------------------------------------------------------------------
    def _client(self) -> httpx.Client:
        with self._lock:
            if self._sync is None:
                self._sync = httpx.Client(base_url=self.url, headers=self.headers, timeout=self.timeout)
            return self._sync

    def _aclient(self) -> httpx.AsyncClient:
        # An AsyncClient belongs to the loop it first ran on: a store used from another loop (a new
        # asyncio.run, a test's loop) gets a client of its own rather than a closed-loop error.
        loop = asyncio.get_running_loop()
        if self._async is None or self._async_loop is not loop:
            self._async = httpx.AsyncClient(base_url=self.url, headers=self.headers, timeout=self.timeout)
            self._async_loop = loop
        return self._async

    def close(self) -> None:
        with self._lock:
            if self._sync is not None:
                self._sync.close()
                self._sync = None

    async def aclose(self) -> None:
        if self._async is not None and self._async_loop is asyncio.get_running_loop():
            await self._async.aclose()
        self._async = None
        self._async_loop = None

    # --- drivers ----------------------------------------------------------------------------------
    def run(self, plan: Plan[T]) -> T:
        try:
            step = next(plan)
            while True:
                answer = [self._send(c) for c in step] if isinstance(step, list) else self._send(step)
                step = plan.send(answer)
        except StopIteration as stop:
            return stop.value

    async def arun(self, plan: Plan[T]) -> T:
        gate = asyncio.Semaphore(ASYNC_FANOUT)

        async def gated(call: Call) -> Any:
            async with gate:
                return await self._asend(call)

        try:
            step = next(plan)
            while True:
                if isinstance(step, list):
                    answer: Any = list(await asyncio.gather(*(gated(c) for c in step)))
                else:
                    answer = await self._asend(step)
                step = plan.send(answer)
        except StopIteration as stop:
            return stop.value

    def _timeout(self, call: Call) -> httpx.Timeout:
        if not call.items:
            return self.timeout
        read = (self.timeout.read or 0) + PER_ITEM_SECONDS * call.items
        return httpx.Timeout(self.timeout.connect, read=read, write=self.timeout.write, pool=self.timeout.pool)

    def _send(self, call: Call) -> Any:
        try:
            response = self._client().request(call.method, call.path, params=call.params or None, json=call.body,
                                              timeout=self._timeout(call))
        except httpx.HTTPError as exc:
            raise self._transport_error(call, exc) from exc
        return self._decode(call, response)

    async def _asend(self, call: Call) -> Any:
        try:
            response = await self._aclient().request(call.method, call.path, params=call.params or None, json=call.body,
                                                     timeout=self._timeout(call))
        except httpx.HTTPError as exc:
            raise self._transport_error(call, exc) from exc
        return self._decode(call, response)

    # --- answers ----------------------------------------------------------------------------------
    def _transport_error(self, call: Call, exc: httpx.HTTPError) -> EngramStoreError:
        where = f"{call.method} {self.url}{call.path}"
        if isinstance(exc, httpx.TimeoutException):
            return EngramTimeoutError(f"Engram at {self.url} did not answer {where} in time ({type(exc).__name__}; timeout {self.timeout.read}s)", url=self.url)
        return EngramConnectionError(f"cannot reach Engram at {self.url} ({where}: {type(exc).__name__}: {exc or 'no detail'}); is the service running?", url=self.url)

    def _decode(self, call: Call, response: httpx.Response) -> Any:
        status = response.status_code
        if status == 404 and call.allow_404:
            return None
        try:
            body = response.json() if response.content else {}
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = None
        if status < 300 or status == 207:  # 207: a batch with failed items; the plan reads `failed`
            if not isinstance(body, dict):
                raise EngramServiceError(f"{call.method} {self.url}{call.path} answered {status} with a body that is not JSON: is {self.url} an Engram service?", url=self.url, status=status)
            return body
        message = body.get("message") if isinstance(body, dict) else None
        detail = message or (response.text[:300] if response.text else response.reason_phrase)
        where = f"{call.method} {self.url}{call.path} -> {status}"
        if status == 401:
            raise EngramAuthError(f"Engram at {self.url} refused the token ({where}: {detail}); check ENGRAM_TOKEN / AUTOMEM_API_TOKEN or ~/.config/engram/token", url=self.url, status=status)
        if status == 403:
            raise EngramAuthError(f"Engram at {self.url} denied the request ({where}: {detail})", url=self.url, status=status)
        if status in (400, 409, 413, 422, 431):
            raise EngramRequestError(f"Engram at {self.url} refused the input ({where}: {detail})", url=self.url, status=status)
        if status == 404:
            raise EngramRequestError(f"Engram at {self.url}: not found ({where}: {detail})", url=self.url, status=status)
        raise EngramServiceError(f"Engram at {self.url} failed ({where}: {detail})", url=self.url, status=status)
