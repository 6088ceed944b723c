"""The HTTP protocol uvicorn serves the app with: its own, so that even a request the HTTP parser
refuses is answered with the error shape, and so that a request's head has a size limit.

- uvicorn answers what its parser refuses (a URL over about 64 KiB, a control character in a header)
  itself, before any ASGI code runs, with a text/plain "Invalid HTTP request received."; here only
  that answer's body changes, to the error shape of the route the request was for (Signet's and
  Hindsight's routes have their own: `errors.unrouted_body`); the connection is still closed, as the
  parser cannot go on.
- uvicorn and httptools put no bound on the header fields: a client could make the service buffer
  megabytes of headers before any ASGI code runs. A request line plus headers larger than
  MAX_REQUEST_HEAD_BYTES gets a 431 with the error shape and the connection is closed.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from service.api.responses import dumps
from service.api.errors import unrouted_body

MALFORMED = (
    "Invalid HTTP request: the request line or a header could not be parsed "
    "(URLs longer than about 64 KiB and control characters in header values are refused)"
)
# The request line and the header fields together. A recall with a 3072-dimension embedding in its
# query string needs ~40 KiB; browsers and proxies cap a head at 8-64 KiB.
MAX_REQUEST_HEAD_BYTES = 128 * 1024
HEAD_TOO_LARGE = f"The request line and headers are larger than {MAX_REQUEST_HEAD_BYTES} bytes"


class _HeadTooLarge(Exception):
    """Raised from a parser callback: httptools stops parsing and uvicorn calls send_400_response."""


class JSONErrorHttpToolsProtocol(HttpToolsProtocol):
    # Bytes of the current request's head received so far (chunks: bounds what is buffered) and
    # parsed so far (the URL and header fields: catches a head that arrives within one chunk);
    # both reset when a request begins.
    _head_bytes = 0
    _parsed_head = 0
    _too_large = False
    _in_head = True
    _refused = False

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        in_head = self._in_head
        super().data_received(data)
        # Counted after the parser has seen the chunk: a chunk that completes the head may carry
        # body bytes, which do not count. What is buffered past the limit is one chunk at most.
        if in_head and self._in_head and not self._refused:
            self._head_bytes += len(data)
            if self._head_bytes > MAX_REQUEST_HEAD_BYTES:
                self._send_error(431, HEAD_TOO_LARGE)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head, self._head_bytes, self._parsed_head, self._too_large = True, 0, 0, False

    def _count(self, n: int) -> None:
        self._parsed_head += n
        if self._parsed_head > MAX_REQUEST_HEAD_BYTES:
            self._too_large = True
            raise _HeadTooLarge

    def on_url(self, url: bytes) -> None:
        self._count(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count(len(name) + len(value) + 4)  # ": " and CRLF
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head = False
        super().on_headers_complete()

    def _method(self) -> str:
        try:
            return self.parser.get_method().decode("ascii", "replace")
        except Exception:  # noqa: BLE001 - the request line itself was refused
            return ""

    def send_400_response(self, msg: str) -> None:
        self._send_error(431, HEAD_TOO_LARGE) if self._too_large else self._send_error(400, MALFORMED)

    def _send_error(self, status: int, message: str) -> None:
        self._refused = True
        body = dumps(unrouted_body(_routed_app(self.app), self._method(), _path(getattr(self, "url", b"")), status, message))
        content = [STATUS_LINE[status]]
        for name, value in self.server_state.default_headers:
            content.extend([name, b": ", value, b"\r\n"])
        content.extend([
            b"content-type: application/json\r\n",
            b"content-length: " + str(len(body)).encode("ascii") + b"\r\n",
            b"connection: close\r\n",
            b"\r\n",
            body,
        ])
        self.transport.write(b"".join(content))
        self.transport.close()


def _path(url: bytes) -> str:
    """The path of a request line's URL (as much as was received), as the ASGI scope would hold it."""
    return unquote(url.partition(b"?")[0].decode("latin-1"))


def _routed_app(app: Any) -> Any:
    """The app with the routes, inside the wrappers uvicorn adds (proxy headers, message logging)."""
    while app is not None and not hasattr(app, "routes"):
        app = getattr(app, "app", None)
    return app


# Keyword arguments for uvicorn.run / uvicorn.Config wherever the app is served.
SERVER_OPTIONS = {"http": JSONErrorHttpToolsProtocol}
