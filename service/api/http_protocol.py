"""The HTTP protocol uvicorn serves the app with: its own, so that even a request the HTTP parser
refuses (a URL over about 64 KiB, a control character in a header) is answered with the error shape.

uvicorn answers those itself, before any ASGI code runs, with a text/plain "Invalid HTTP request
received."; this subclass only replaces that answer's body (the connection is still closed, as
the parser cannot go on after a malformed request).
"""

from __future__ import annotations

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from service.api.responses import dumps
from service.errors import error_body

MALFORMED = (
    "Invalid HTTP request: the request line or a header could not be parsed "
    "(URLs longer than about 64 KiB and control characters in header values are refused)"
)


class JSONErrorHttpToolsProtocol(HttpToolsProtocol):
    def send_400_response(self, msg: str) -> None:
        body = dumps(error_body(400, MALFORMED))
        content = [STATUS_LINE[400]]
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


# Keyword arguments for uvicorn.run / uvicorn.Config wherever the app is served.
SERVER_OPTIONS = {"http": JSONErrorHttpToolsProtocol}
