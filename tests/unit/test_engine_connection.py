"""service/storage/connection.py: which connection a client gets, and how the http.client connection
behaves at the socket level (a local HTTP server stands in for the node's transport; what the engine
answers is tested against the real node in tests/integration/test_engine_connection_live.py)."""

from __future__ import annotations

import http.client
import io
import json
import socket
import threading
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opensearchpy import Urllib3HttpConnection
from opensearchpy.exceptions import ConnectionError, ConnectionTimeout, NotFoundError, OpenSearchWarning

from service.storage.connection import MAX_HEADERS, HttpClientConnection, ResponseHeaders, connection_class, read_headers


@pytest.mark.parametrize(
    ("hosts", "auth", "expected"),
    [
        (["http://127.0.0.1:9200"], None, HttpClientConnection),
        (["localhost:9200"], None, HttpClientConnection),
        (["http://a:9200", "http://b:9200"], ("user", "secret"), HttpClientConnection),
        (["https://a:9200"], None, Urllib3HttpConnection),
        (["http://a:9200", "https://b:9200"], None, Urllib3HttpConnection),
        (["http://a:9200"], lambda method, url, body: {}, Urllib3HttpConnection),
    ],
)
def test_plain_http_nodes_get_the_http_client_connection(hosts, auth, expected):
    assert connection_class(hosts, auth) is expected


def test_basic_auth_is_sent_as_a_header():
    assert HttpClientConnection(http_auth=("user", "secret")).headers["authorization"] == "Basic dXNlcjpzZWNyZXQ="
    assert HttpClientConnection(http_auth="user:secret").headers["authorization"] == "Basic dXNlcjpzZWNyZXQ="
    assert "authorization" not in HttpClientConnection().headers


@pytest.mark.parametrize("options", [{"use_ssl": True}, {"http_compress": True}])
def test_tls_and_compression_are_refused(options):
    with pytest.raises(ValueError):
        HttpClientConnection(**options)


class _Node:
    """A keep-alive HTTP/1.1 server: echoes each request (method, path, body as text), answers 404 on
    /missing, and with `drop_after_reply` closes every connection after its answer without saying so
    (as a node does with idle connections it times out)."""

    def __init__(self, drop_after_reply: bool = False):
        node = self
        self.connections = 0

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                super().setup()
                node.connections += 1

            def _answer(self):
                body = self.rfile.read(int(self.headers.get("content-length") or 0)).decode("utf-8")
                status = 404 if self.path == "/missing" else 200
                out = json.dumps({"method": self.command, "path": self.path, "body": body,
                                  "authorization": self.headers.get("authorization")}).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)
                if drop_after_reply:
                    self.wfile.flush()
                    self.close_connection = True

            do_GET = do_POST = do_PUT = _answer

            def log_message(self, *args):
                pass

        class Server(ThreadingHTTPServer):
            def shutdown_request(self, request):
                super().shutdown_request(request)
                node.closed.release()

        self.closed = threading.Semaphore(0)  # released as the server closes a connection
        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def node():
    n = _Node()
    yield n
    n.close()


def test_requests_reuse_one_keep_alive_connection(node):
    conn = HttpClientConnection("127.0.0.1", node.port, http_auth=("u", "p"))
    for _ in range(3):
        status, headers, raw = conn.perform_request("POST", "/idx/_search", params={"q": "x y"}, body='{"t": "été ✓"}'.encode())
        assert status == 200 and headers.get("Content-Type") == "application/json"
        assert isinstance(headers, ResponseHeaders)  # read by read_headers, not the email package
        echoed = json.loads(raw)
        assert echoed == {"method": "POST", "path": "/idx/_search?q=x+y", "body": '{"t": "été ✓"}', "authorization": "Basic dTpw"}
    assert node.connections == 1
    conn.close()


def test_an_error_status_raises_the_transport_error_unless_ignored(node):
    conn = HttpClientConnection("127.0.0.1", node.port)
    with pytest.raises(NotFoundError):
        conn.perform_request("GET", "/missing")
    assert conn.perform_request("GET", "/missing", ignore=(404,))[0] == 404
    assert conn.perform_request("GET", "/found")[0] == 200  # the connection survived the 404s
    assert node.connections == 1


def test_a_connection_the_node_closed_while_idle_is_replaced():
    node = _Node(drop_after_reply=True)
    try:
        conn = HttpClientConnection("127.0.0.1", node.port)
        for _ in range(3):
            assert conn.perform_request("GET", "/x")[0] == 200
            # The next request goes out once the node has closed this connection: a request racing
            # the close fails as with urllib3, and the transport retries it (not this unit's part).
            assert node.closed.acquire(timeout=10)
        assert node.connections == 3
    finally:
        node.close()


def test_a_node_that_does_not_answer_times_out():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    try:
        conn = HttpClientConnection("127.0.0.1", listener.getsockname()[1], timeout=0.2)
        with pytest.raises(ConnectionTimeout):
            conn.perform_request("GET", "/")
    finally:
        listener.close()


def test_a_node_that_is_not_there_is_a_connection_error():
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    with pytest.raises(ConnectionError):
        HttpClientConnection("127.0.0.1", port, timeout=2).perform_request("GET", "/")


# --- response headers, read without the email package (read_headers) -------------------------------


def test_the_running_pythons_response_reads_its_headers_through_parse_headers():
    # _Response runs HTTPResponse.begin with read_headers in parse_headers' place: a Python whose
    # begin stopped calling it would silently parse with the email package again.
    assert "parse_headers" in http.client.HTTPResponse.begin.__code__.co_names


@pytest.mark.parametrize(
    "raw",
    [
        b"Content-Type: application/json; charset=UTF-8\r\ncontent-length: 570\r\n\r\n",
        b"Warning: 299 OpenSearch-2.19.1 \"first\"\r\nX-A: 1\r\nwarning: 299 x \"second\"\r\n\r\n",
        b"X-Empty:\r\nX-Spaces:   padded value  \r\nX-Colons: a:b:c\r\n\n",
        b"X-Latin: caf\xe9\r\n\r\n",
        b"\r\n",
    ],
)
def test_headers_read_as_http_client_reads_them(raw):
    ours, theirs = read_headers(io.BytesIO(raw)), http.client.parse_headers(io.BytesIO(raw))
    assert [(k.lower(), v.strip()) for k, v in theirs.items()] == list(ours.pairs)
    for name in ("content-type", "Content-Length", "WARNING", "x-empty", "x-spaces", "x-colons", "x-latin", "absent"):
        assert ours.get(name) == (None if theirs.get(name) is None else theirs.get(name).strip())
        every = theirs.get_all(name)
        assert ours.get_all(name) == (None if every is None else [v.strip() for v in every])


def test_too_many_or_too_long_header_lines_are_refused():
    with pytest.raises(http.client.HTTPException):
        read_headers(io.BytesIO(b"".join(b"x-%d: 1\r\n" % i for i in range(MAX_HEADERS + 1)) + b"\r\n"))
    with pytest.raises(http.client.LineTooLong):
        read_headers(io.BytesIO(b"x: " + b"a" * 70000 + b"\r\n\r\n"))


class _RawNode:
    """A node that answers every request with the same raw bytes (status line, headers, body)."""

    def __init__(self, answer: bytes):
        self.connections = 0
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(4)
        self.port = self.listener.getsockname()[1]
        self.answer = answer
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._exchange, args=(sock,), daemon=True).start()

    def _exchange(self, sock):
        with sock:
            data = b""
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    return
                data += chunk
                while b"\r\n\r\n" in data:  # requests without a body (GET)
                    _, data = data.split(b"\r\n\r\n", 1)
                    sock.sendall(self.answer)

    def close(self):
        self.listener.close()


@pytest.mark.parametrize(
    ("answer", "kept"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n{\"ok\": true}", True),
        (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
         b"5\r\n{\"ok\"\r\n6\r\n: true\r\n1\r\n}\r\n0\r\n\r\n", True),
        (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 12\r\n\r\n{\"ok\": true}", False),
    ],
    ids=["content-length", "chunked", "connection-close"],
)
def test_bodies_and_keep_alive_follow_the_headers(answer, kept):
    node = _RawNode(answer)
    try:
        conn = HttpClientConnection("127.0.0.1", node.port, timeout=5)
        for _ in range(2):
            status, headers, raw = conn.perform_request("GET", "/")
            assert (status, json.loads(raw)) == (200, {"ok": True})
        assert node.connections == (1 if kept else 2)
    finally:
        node.close()


def test_every_warning_header_is_raised():
    answer = (b"HTTP/1.1 200 OK\r\nWarning: 299 OpenSearch-2.19.1 \"first\"\r\nContent-Length: 2\r\n"
              b"warning: 299 OpenSearch-2.19.1 \"second\"\r\n\r\n{}")
    node = _RawNode(answer)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            HttpClientConnection("127.0.0.1", node.port, timeout=5).perform_request("GET", "/")
        assert [str(w.message) for w in caught if w.category is OpenSearchWarning] == ["first", "second"]
    finally:
        node.close()


def test_a_malformed_answer_is_a_connection_error():
    node = _RawNode(b"HTTP/1.1 200 OK\r\n" + b"".join(b"x-%d: 1\r\n" % i for i in range(MAX_HEADERS + 1)) + b"\r\n")
    try:
        with pytest.raises(ConnectionError):
            HttpClientConnection("127.0.0.1", node.port, timeout=5).perform_request("GET", "/")
    finally:
        node.close()
