"""The engine client's HTTP for plain-HTTP nodes: an opensearch-py `Connection` over the standard
library's http.client, with a pool of keep-alive connections.

opensearch-py's Transport keeps what matters above the connection (retries, round-robin over the
nodes, a failed node set aside, serialisation, the error classes); below it, urllib3's pool and
response wrapper cost ~0.13 ms of CPU a request that does nothing here (no retries at that level,
no redirects, no TLS): ~0.25 ms a recall, which makes two requests (bench.recall_stages, in
process: 4.45 -> 4.13 ms). HTTPS nodes, and callable auth (request signing), keep opensearch-py's
urllib3 connection (`connection_class`).

Response headers are read into a dict by lower-cased name rather than through the email package's
parser, which http.client uses for them: ~0.09 ms of CPU a response in the service, ~0.3 ms a
recall (bench.recall_stages --access, in process: 5.85 -> 5.56 ms).
"""

from __future__ import annotations

import base64
import http.client
import queue
import select
import socket
import time
import types
from collections.abc import Collection, Mapping, Sequence
from typing import Any
from urllib.parse import urlencode, urlsplit

from opensearchpy import Connection, Urllib3HttpConnection
from opensearchpy.exceptions import ConnectionError, ConnectionTimeout

# Idle connections kept per node beyond this are closed (the client's pool_maxsize when given).
DEFAULT_POOL_SIZE = 10
# http.client's limits on a header line and on the number of headers.
MAX_LINE = 65536
MAX_HEADERS = 100


class ResponseHeaders(dict[str, str]):
    """A response's headers by lower-cased name, as http.client's message answers them: `get` the
    first value of a name, `get_all` every value."""

    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        super().__init__()
        self.pairs = pairs
        for name, value in pairs:
            self.setdefault(name, value)

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        return super().get(name.lower(), default)

    def get_all(self, name: str, failobj: Any = None) -> Any:
        name = name.lower()
        return [v for k, v in self.pairs if k == name] or failobj


def read_headers(fp: Any) -> ResponseHeaders:
    """The header lines up to the blank one, as http.client.parse_headers reads them (same limits),
    split at the first colon; a line without one (obsolete line folding, which nodes do not send)
    is skipped."""
    pairs: list[tuple[str, str]] = []
    while True:
        line = fp.readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise http.client.LineTooLong("header line")
        if line in (b"\r\n", b"\n", b""):
            return ResponseHeaders(pairs)
        if len(pairs) >= MAX_HEADERS:
            raise http.client.HTTPException(f"got more than {MAX_HEADERS} headers")
        name, colon, value = line.decode("iso-8859-1").partition(":")
        if colon:
            pairs.append((name.strip().lower(), value.strip()))


class _Response(http.client.HTTPResponse):
    # The running Python's own HTTPResponse.begin (status line, chunked, length, keep-alive), with
    # `read_headers` where it calls the module's parse_headers: the same function under other globals.
    begin = types.FunctionType(http.client.HTTPResponse.begin.__code__, {**vars(http.client), "parse_headers": read_headers}, "begin")


class _HTTPConnection(http.client.HTTPConnection):
    response_class = _Response


class HttpClientConnection(Connection):
    """One node over plain HTTP. Thread-safe: each request takes an idle keep-alive connection (or
    opens one) and gives it back when the response is read."""

    def __init__(self, host: str = "localhost", port: int | None = None, http_auth: Any = None,
                 pool_maxsize: int | None = None, **kwargs: Any) -> None:
        super().__init__(host=host, port=port, **kwargs)
        if self.http_compress or self.use_ssl:
            raise ValueError("HttpClientConnection speaks plain, uncompressed HTTP; use Urllib3HttpConnection")
        if http_auth is not None:
            user_pass = ":".join(http_auth) if isinstance(http_auth, (tuple, list)) else str(http_auth)
            self.headers["authorization"] = "Basic " + base64.b64encode(user_pass.encode()).decode()
        # Idle connections kept (as urllib3's pool, not a bound: a request finding none opens one).
        self.pool_size = pool_maxsize or DEFAULT_POOL_SIZE
        self._idle: queue.LifoQueue[_HTTPConnection] = queue.LifoQueue(self.pool_size)

    def perform_request(self, method: str, url: str, params: Mapping[str, Any] | None = None, body: bytes | None = None,
                        timeout: float | None = None, ignore: Collection[int] = (), headers: Mapping[str, str] | None = None) -> Any:
        url = self.url_prefix + url
        if params:
            url = f"{url}?{urlencode(params)}"
        sent = self.headers if not headers else {**self.headers, **{k.lower(): v for k, v in headers.items()}}
        conn = self._checkout(timeout or self.timeout)
        started = time.perf_counter()  # for the failure log line (opensearch-py's "request:N s")
        try:
            conn.request(method, url, body, sent)
            response = conn.getresponse()
            data = response.read()
        except Exception as exc:  # noqa: BLE001 - every failure of the exchange is the transport's to retry
            conn.close()
            self.log_request_fail(method, self.host + url, url, body, time.perf_counter() - started, exception=exc)
            if isinstance(exc, (socket.timeout, TimeoutError)):
                raise ConnectionTimeout("TIMEOUT", str(exc), exc) from exc
            raise ConnectionError("N/A", str(exc), exc) from exc
        self._checkin(conn, response)
        raw = data.decode("utf-8", "surrogatepass")
        self._raise_warnings(response.headers.get_all("warning") or ())
        status = response.status
        if not (200 <= status < 300) and status not in ignore:
            self.log_request_fail(method, self.host + url, url, body, time.perf_counter() - started, status, raw)
            self._raise_error(status, raw, response.headers.get("content-type"))
        return status, response.headers, raw

    def _checkout(self, timeout: float) -> _HTTPConnection:
        """An idle connection the node has not closed meanwhile (its socket reads nothing: an idle
        socket that is readable was closed by the other end), else a new one."""
        while True:
            try:
                conn = self._idle.get_nowait()
            except queue.Empty:
                return _HTTPConnection(self.hostname, self.port, timeout=timeout)
            sock = conn.sock
            if sock is not None and not _readable(sock):
                if sock.gettimeout() != timeout:
                    sock.settimeout(timeout)
                return conn
            conn.close()

    def _checkin(self, conn: _HTTPConnection, response: http.client.HTTPResponse) -> None:
        if response.will_close:
            conn.close()
            return
        try:
            self._idle.put_nowait(conn)
        except queue.Full:
            conn.close()

    def close(self) -> None:
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return


def _readable(sock: socket.socket) -> bool:
    """Whether the socket has something to read now (poll, not select: select fails on descriptors
    past 1024, which a busy service reaches)."""
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    return bool(select.select([sock], [], [], 0)[0])


def connection_class(hosts: Sequence[str], http_auth: Any) -> type[Connection]:
    """This module's connection when every node is plain HTTP and auth is a user and password;
    otherwise opensearch-py's urllib3 connection (TLS, request signing)."""
    plain = all(urlsplit(h if "://" in h else f"http://{h}").scheme == "http" for h in hosts)
    signed = callable(http_auth)
    return HttpClientConnection if plain and not signed else Urllib3HttpConnection
