"""A service that is down, hangs, is not Engram, or refuses the token: clear errors naming the URL, never a hang."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from langgraph.store.engram import (
    EngramAuthError, EngramConnectionError, EngramServiceError, EngramStore, EngramStoreError, EngramTimeoutError,
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def _server(reply: bytes | None) -> Iterator[str]:
    """A TCP server on loopback that answers every request with `reply`, or never answers (None)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)
    stop = threading.Event()
    held: list[socket.socket] = []

    def loop() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            held.append(conn)
            if reply is not None:
                conn.settimeout(5)
                try:
                    conn.recv(65536)
                    conn.sendall(reply)
                finally:
                    conn.close()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=5)
        for conn in held:
            conn.close()
        listener.close()


def test_service_down_is_a_connection_error_naming_the_url():
    url = f"http://127.0.0.1:{_free_port()}"
    store = EngramStore(url, "token", timeout=5)
    with pytest.raises(EngramConnectionError, match=url.replace(".", r"\.")) as info:
        store.get(("a",), "k")
    assert "is the service running" in str(info.value) and info.value.url == url
    with pytest.raises(EngramConnectionError, match="cannot reach Engram"):
        asyncio.run(store.aput(("a",), "k", {"v": 1}))


def test_a_hanging_service_times_out():
    with _server(None) as url:
        store = EngramStore(url, "token", timeout=1)
        started = time.monotonic()
        with pytest.raises(EngramTimeoutError, match="did not answer"):
            store.search(("a",), query="anything")
        # The bound is the timeout plus slack for a loaded machine: what matters is that it returns at all.
        assert time.monotonic() - started < 30
        with pytest.raises(EngramTimeoutError):
            asyncio.run(store.aget(("a",), "k"))


def test_something_that_is_not_engram():
    page = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 13\r\nConnection: close\r\n\r\n<html></html>"
    with _server(page) as url:
        with pytest.raises(EngramServiceError, match="not JSON"):
            EngramStore(url, "token", timeout=5).get(("a",), "k")


def test_bad_token(service):
    url, _ = service
    store = EngramStore(url, "not-the-token")
    with pytest.raises(EngramAuthError, match="refused the token") as info:
        store.get(("a",), "k")
    assert url in str(info.value) and info.value.status == 401
    with pytest.raises(EngramAuthError):
        store.ping()
    with pytest.raises(EngramAuthError):
        asyncio.run(store.asearch(("a",), query="x"))
    with pytest.raises(EngramAuthError):
        EngramStore(url, "").put(("a",), "k", {"v": 1})  # no token at all


def test_from_env_reads_url_and_token_file(service, bank, monkeypatch, tmp_path):
    url, token = service
    home = tmp_path / "home"
    (home / ".config" / "engram").mkdir(parents=True)
    (home / ".config" / "engram" / "token").write_text(token + "\n")
    for name in ("ENGRAM_TOKEN", "AUTOMEM_API_TOKEN", "ENGRAM_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ENGRAM_URL", url)
    monkeypatch.setenv("ENGRAM_BANK", bank)
    with EngramStore.from_env() as store:
        assert store.ping()["status"]
        store.put(("env",), "k", {"v": 1})
        assert store.get(("env",), "k").value == {"v": 1}
    monkeypatch.setenv("AUTOMEM_API_TOKEN", "wrong")  # the variable wins over the file
    with pytest.raises(EngramAuthError):
        EngramStore.from_env().get(("env",), "k")


def test_constructor_refuses_bad_settings():
    with pytest.raises(ValueError, match="http"):
        EngramStore("localhost:8001", "t")
    with pytest.raises(ValueError, match="bank"):
        EngramStore("http://127.0.0.1:1", "t", bank=" ")
    assert issubclass(EngramTimeoutError, EngramConnectionError) and issubclass(EngramConnectionError, EngramStoreError)
