"""`python -m service` with the recall pipeline stubbed: RecallService.recall answers its first call
for real (over the corpus of INDEX_PREFIX) and returns that same body to every later call, so a
GET /recall then costs only the web layer (uvicorn, starlette, FastAPI, the middlewares, the
dependencies, the route, the response). For bench.web_stack.

    PYTHONPATH=<tree> python <this file> [python -m service's arguments]
    PYTHONPATH=<tree> python <this file> --asgi QUERY_STRING     # no server: see asgi_rounds

Run by path, with the tree under test first on PYTHONPATH: it imports nothing of bench/, so one
copy measures any commit's service.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

from service.recall.pipeline import RecallService

_real = RecallService.recall
_kept: dict[str, dict] = {}


def _constant(self, req, now):
    if "body" not in _kept:
        # Access tracking is dropped: the corpus stays as it is.
        self.record_access = lambda *a: None
        _kept["body"] = _real(self, req, now)
    return _kept["body"]


RecallService.recall = _constant


async def asgi_rounds(query_string: str, token: str) -> None:
    """The app without a server: its lifespan, then for each line N read on stdin, N GET /recall calls
    straight into the ASGI app (middlewares, routing, dependencies, the thread hop, the response; no
    HTTP parsing, no socket), and one JSON line out: CPU ms per call of the process (all threads) and
    of this thread (the event loop's), wall ms per call. Less noisy than a server round for A/B of
    the app's own code."""
    from service.__main__ import settle_gc
    from service.config import get_settings
    from service.main import create_app
    from service.observability.oplog import configure_logging

    configure_logging("info", "text")  # the default: the access line and recall_complete are written
    app = create_app(get_settings())
    headers = [(b"host", b"127.0.0.1"), (b"authorization", f"Bearer {token}".encode()), (b"accept", b"*/*"),
               (b"accept-encoding", b"gzip, deflate"), (b"connection", b"keep-alive"), (b"user-agent", b"python-httpx/0.29.0")]
    scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.4"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": "/recall", "raw_path": b"/recall", "query_string": query_string.encode(), "root_path": "", "headers": headers,
             "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000), "state": {}}

    async def call() -> int:
        sent = []
        delivered = False

        async def receive():
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": b"", "more_body": False}
            return {"type": "http.disconnect"}

        async def send(message):
            sent.append(message)

        await app(dict(scope, headers=list(headers), state={}), receive, send)
        return sent[0]["status"]

    loop = asyncio.get_running_loop()
    async with app.router.lifespan_context(app):
        settle_gc()
        if await call() != 200:
            raise SystemExit("GET /recall did not answer 200")
        print(json.dumps({"ready": True}), flush=True)
        while line := (await loop.run_in_executor(None, sys.stdin.readline)).strip():
            n = int(line)
            cpu, thread, wall = time.process_time(), time.thread_time(), time.perf_counter()
            for _ in range(n):
                await call()
            print(json.dumps({"cpu_ms": (time.process_time() - cpu) * 1000 / n, "event_loop_ms": (time.thread_time() - thread) * 1000 / n,
                              "wall_ms": (time.perf_counter() - wall) * 1000 / n}), flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--asgi"]:
        import os

        import uvloop  # what uvicorn runs the service on

        uvloop.run(asgi_rounds(sys.argv[2], os.environ["AUTOMEM_API_TOKEN"]))
    else:
        from service.__main__ import main

        sys.exit(main(sys.argv[1:]))
