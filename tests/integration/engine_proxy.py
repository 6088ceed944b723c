"""A TCP proxy between a service under test and the real engine, whose `cut()` makes the engine go
away (connections refused and dropped) and `restore()` brings it back: an outage without stopping
the session's node."""

from __future__ import annotations

import re
import socket
import threading
import time
from urllib.parse import urlsplit


class EngineProxy:
    def __init__(self, engine_url: str):
        target = urlsplit(engine_url)
        self.target = (target.hostname, target.port)
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._up = threading.Event()
        self._up.set()
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._slow: tuple[re.Pattern[bytes], float] | None = None
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if not self._up.is_set():
                client.close()  # the engine is away: the connection is dropped at once
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=10)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open.update((client, upstream))
            for a, b, outbound in ((client, upstream, True), (upstream, client, False)):
                threading.Thread(target=self._pipe, args=(a, b, outbound), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, outbound: bool) -> None:
        try:
            while data := src.recv(65536):
                slow = self._slow
                if outbound and slow is not None and slow[0].match(data):
                    time.sleep(slow[1])
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.close()
                except OSError:
                    pass

    def slow_down(self, request: bytes, seconds: float) -> None:
        """Hold each request whose start matches the regex `request` for `seconds` before the engine
        sees it: a busy node, for that kind of request."""
        self._slow = (re.compile(request), seconds)

    def cut(self) -> None:
        self._up.clear()
        with self._lock:
            for s in self._open:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self._open.clear()

    def restore(self) -> None:
        self._up.set()

    def close(self) -> None:
        self._closed = True
        self.cut()
        self._listener.close()
