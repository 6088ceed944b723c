"""A real uvicorn server in a thread, for what the in-process TestClient cannot do: an endless
SSE stream read while other requests run, sockets that stop reading, access logs."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn


@contextmanager
def serve(app, *, timeout: float = 60.0) -> Iterator[str]:
    """Run `app` on 127.0.0.1 (a free port) until the block ends; yields its base URL.
    log_config=None: uvicorn's loggers propagate to the root logger (pytest's caplog sees them)."""
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_config=None, lifespan="on", timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="live-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the live server did not start")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(15)


@contextmanager
def live_app(engine_url: str, embedder, os_client, **overrides) -> Iterator[tuple[object, str]]:
    """(app, base URL) of a served app with its own INDEX_PREFIX; its indices are deleted afterwards."""
    import uuid

    from service.config import Settings
    from service.main import create_app
    from tests.conftest import ADMIN, TOKEN

    prefix = f"t{uuid.uuid4().hex[:10]}"
    values = dict(opensearch_url=engine_url, index_prefix=prefix, automem_api_token=TOKEN, admin_api_token=ADMIN, write_refresh="true")
    values.update(overrides)
    app = create_app(Settings(**values), embedder=embedder)
    try:
        with serve(app) as url:
            yield app, url
    finally:
        os_client.indices.delete(index=f"{prefix}-*", ignore=[404])
        for name in ("memories", "edges", "consolidation"):
            os_client.indices.delete_index_template(name=f"{prefix}-{name}", ignore=[404])
