"""A TCP proxy between a service under test and the real engine, whose `cut()` makes the engine go
away (connections refused and dropped) and `restore()` brings it back: an outage without stopping
the session's node."""

from __future__ import annotations

import socket
import threading
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
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.close()
                except OSError:
                    pass

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
