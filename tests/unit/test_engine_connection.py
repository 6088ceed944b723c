"""service/storage/connection.py: which connection a client gets, and how the http.client connection
behaves at the socket level (a local HTTP server stands in for the node's transport; what the engine
answers is tested against the real node in tests/integration/test_engine_connection_live.py)."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opensearchpy import Urllib3HttpConnection
from opensearchpy.exceptions import ConnectionError, ConnectionTimeout, NotFoundError

from service.storage.connection import HttpClientConnection, connection_class


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
