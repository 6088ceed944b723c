"""An app with its own INDEX_PREFIX served by a real uvicorn server (tests/integration/live_server.py),
for what the in-process TestClient cannot do: an endless SSE stream read while other requests run,
sockets that stop reading, the logs of a real run."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from service.storage.bootstrap import drop_prefix
from tests.integration.live_server import serve


@contextmanager
def live_app(engine_url: str, embedder, os_client, **overrides) -> Iterator[tuple[object, str]]:
    """(app, base URL); the app's indices are deleted afterwards. log_config=None: uvicorn leaves
    logging alone, so pytest's caplog sees the service's records."""
    from service.config import Settings
    from service.main import create_app
    from tests.conftest import ADMIN, TOKEN

    prefix = f"t{uuid.uuid4().hex[:10]}"
    values = dict(opensearch_url=engine_url, index_prefix=prefix, automem_api_token=TOKEN, admin_api_token=ADMIN, write_refresh="true",
                  enrichment_enabled=False)  # as make_client: the worker would interleave its own events
    values.update(overrides)
    app = create_app(Settings(**values), embedder=embedder)
    try:
        with serve(app, log_config=None, timeout_graceful_shutdown=2) as url:
            yield app, url
    finally:
        drop_prefix(os_client, prefix)
