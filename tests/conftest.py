"""Test session: one real OpenSearch node for the whole run, one embedding model, fresh indices per test.

The engine is, in order of preference:
  ENGRAM_TEST_OPENSEARCH_URL      an engine you already run (never your data: tests use their own INDEX_PREFIX);
  ENGRAM_TEST_ENGINE=docker       testcontainers' OpenSearch container, pinned to the compose.yaml image;
  otherwise                       the local node from Maven Central artifacts (service.engine.local_node), name "test".
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

COMPOSE_IMAGE = "opensearchproject/opensearch:2.19.1"
TOKEN = "test-token"
ADMIN = "test-admin-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        parts = Path(str(item.fspath)).parts
        if "integration" in parts:
            item.add_marker(pytest.mark.integration)
        elif "unit" in parts:
            item.add_marker(pytest.mark.unit)


@pytest.fixture(scope="session")
def engine_url() -> Iterator[str]:
    if os.environ.get("ENGRAM_TEST_OPENSEARCH_URL"):
        yield os.environ["ENGRAM_TEST_OPENSEARCH_URL"]
        return
    if os.environ.get("ENGRAM_TEST_ENGINE") == "docker":
        from testcontainers.opensearch import OpenSearchContainer

        with OpenSearchContainer(COMPOSE_IMAGE, security_enabled=False) as container:
            cfg = container.get_config()
            yield f"http://{cfg['host']}:{cfg['port']}"
        return
    from service.engine.local_node import LocalNode

    # 2 GB: the suite creates and drops ~2,000 indices and stores 65k+ memories in one test; with 1 GB
    # the parent circuit breaker answered 429 now and then under that churn (CI, 2026-12-01).
    node = LocalNode("test", heap=os.environ.get("ENGRAM_TEST_HEAP", "2g"))
    was_running = node.running()
    url = node.start()
    yield url
    if not was_running and not os.environ.get("ENGRAM_TEST_KEEP_ENGINE"):
        node.stop()


@pytest.fixture(scope="session")
def embedder():
    from service.config import default_embedding_model
    from service.embedding import Embedder

    return Embedder(default_embedding_model())


@pytest.fixture(scope="session")
def os_client(engine_url):
    from opensearchpy import OpenSearch

    client = OpenSearch(hosts=[engine_url], timeout=60)
    yield client
    client.close()


@pytest.fixture
def make_client(engine_url, embedder, os_client) -> Iterator[Callable[..., object]]:
    """Factory: an API client (fastapi TestClient) for an app with its own INDEX_PREFIX and any setting overridden."""
    from fastapi.testclient import TestClient

    from service.config import Settings
    from service.main import create_app
    from service.storage.bootstrap import drop_prefix

    opened: list[tuple[TestClient, str]] = []

    def factory(**overrides) -> TestClient:
        prefix = f"t{uuid.uuid4().hex[:10]}"
        # Background enrichment rewrites memories asynchronously; tests of other features run without it.
        values = dict(opensearch_url=engine_url, index_prefix=prefix, automem_api_token=TOKEN, admin_api_token=ADMIN,
                      enrichment_enabled=False)
        values.update(overrides)
        settings = Settings(**values)
        client = TestClient(create_app(settings, embedder=embedder), raise_server_exceptions=False)
        client.__enter__()
        client.headers.update(AUTH)
        opened.append((client, settings.index_prefix))
        return client

    yield factory
    for client, prefix in opened:
        client.__exit__(None, None, None)
        drop_prefix(os_client, prefix)


@pytest.fixture
def api(make_client):
    return make_client()
