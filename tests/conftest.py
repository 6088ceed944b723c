"""Test session: one real OpenSearch node for the whole run, one embedding model, apps shared by a module.

The engine is, in order of preference:
  ENGRAM_TEST_OPENSEARCH_URL      an engine you already run (never your data: tests use their own INDEX_PREFIX);
  ENGRAM_TEST_ENGINE=docker       testcontainers' OpenSearch container, pinned to the compose.yaml image;
  otherwise                       the local node from Maven Central artifacts (service.engine.local_node), name "test",
                                  shared with other sessions on the machine (service.engine.node_lease).

Apps: creating one makes its indices and templates (~1 s of cluster-state updates on a busy machine),
so a module's tests share one app per distinct settings (`shared_client`, and `api`, its default) and
each test works in a bank of its own (the `X-Bank` header on the client: banks are a filter in every
query). `make_client` gives a test an app of its own, with an empty store: for tests that need one
(counts over the whole store, fixed memory ids, background workers) or that change an app's state.
Under pytest-xdist every worker runs whole modules (--dist loadscope) and makes its own prefixes.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from service.engine.node_lease import NodeLease

COMPOSE_IMAGE = "opensearchproject/opensearch:2.19.1"
TOKEN = "test-token"
ADMIN = "test-admin-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
# The session's local node (when neither ENGRAM_TEST_OPENSEARCH_URL nor docker is used): 2 GB, as the
# suite creates and drops hundreds of indices and stores 65k+ memories in one test; with 1 GB the
# parent circuit breaker answered 429 now and then under that churn (CI, 2026-12-01).
TEST_NODE = "test"


def pytest_collection_modifyitems(config, items):
    for item in items:
        parts = Path(str(item.fspath)).parts
        if "integration" in parts:
            item.add_marker(pytest.mark.integration)
        elif "unit" in parts:
            item.add_marker(pytest.mark.unit)


def _local_node():
    if os.environ.get("ENGRAM_TEST_OPENSEARCH_URL") or os.environ.get("ENGRAM_TEST_ENGINE") == "docker":
        return None
    from service.engine.local_node import LocalNode

    return LocalNode(TEST_NODE, heap=os.environ.get("ENGRAM_TEST_HEAP", "2g"))


def pytest_sessionstart(session):
    # The main process (not an xdist worker) holds a lease on the local node for the session: the last
    # session on this machine to finish stops the node when one of them found it stopped, after every
    # worker is done with it (a second session, started meanwhile, keeps it up till it is done too).
    if not hasattr(session.config, "workerinput") and (node := _local_node()) is not None:
        session.config.stash[_NODE_LEASE] = NodeLease(node)


def pytest_sessionfinish(session):
    if (lease := session.config.stash.get(_NODE_LEASE, None)) is not None:
        lease.release(keep=bool(os.environ.get("ENGRAM_TEST_KEEP_ENGINE")))


_NODE_LEASE = pytest.StashKey[NodeLease]()


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
    yield _local_node().start()  # several workers: the first builds and starts it, the others wait (a file lock)


@pytest.fixture(scope="session")
def embedder():
    from service.config import Settings, default_embedding_model
    from service.embedding import Embedder

    return Embedder(default_embedding_model(), backend=Settings.model_fields["embedding_backend"].default)  # the default backend


@pytest.fixture(scope="session")
def os_client(engine_url):
    from opensearchpy import OpenSearch

    client = OpenSearch(hosts=[engine_url], timeout=60)
    yield client
    client.close()


class Apps:
    """Apps (fastapi TestClients), each with its own INDEX_PREFIX, closed and dropped together."""

    def __init__(self, engine_url: str, embedder, os_client):
        self.engine_url, self.embedder, self.os_client = engine_url, embedder, os_client
        self.opened: list[tuple[object, str]] = []

    def open(self, **overrides):
        from fastapi.testclient import TestClient

        from service.config import Settings
        from service.main import create_app

        prefix = f"t{uuid.uuid4().hex[:10]}"
        # Background enrichment rewrites memories asynchronously; tests of other features run without it.
        values = dict(opensearch_url=self.engine_url, index_prefix=prefix, automem_api_token=TOKEN, admin_api_token=ADMIN,
                      enrichment_enabled=False)
        values.update(overrides)
        settings = Settings(**values)
        client = TestClient(create_app(settings, embedder=self.embedder), raise_server_exceptions=False)
        client.__enter__()
        client.headers.update(AUTH)
        self.opened.append((client, settings.index_prefix))
        return client

    def close(self) -> None:
        from service.storage.bootstrap import drop_prefix

        # Every app stopped before any store is dropped: two apps may share a prefix (an upgrade test),
        # and a running one would log the missing indices.
        for client, _ in self.opened:
            client.__exit__(None, None, None)
        for prefix in dict.fromkeys(prefix for _, prefix in self.opened):
            drop_prefix(self.os_client, prefix)
        self.opened.clear()


@pytest.fixture
def make_client(engine_url, embedder, os_client) -> Iterator[Callable[..., object]]:
    """Factory: an API client for an app of this test's own, with its own INDEX_PREFIX (an empty store)
    and any setting overridden."""
    apps = Apps(engine_url, embedder, os_client)
    yield apps.open
    apps.close()


@pytest.fixture(scope="module")
def module_apps(engine_url, embedder, os_client) -> Iterator[Callable[..., object]]:
    """The apps a module's tests share: one per distinct settings, made when first asked for."""
    apps = Apps(engine_url, embedder, os_client)
    by_settings: dict[tuple, object] = {}

    def get(**overrides):
        key = tuple(sorted((k, repr(v)) for k, v in overrides.items()))
        if key not in by_settings:
            by_settings[key] = apps.open(**overrides)
        return by_settings[key]

    yield get
    apps.close()


@pytest.fixture
def bank() -> str:
    """This test's own bank in the module's shared apps."""
    return f"b{uuid.uuid4().hex[:12]}"


@pytest.fixture
def shared_client(module_apps, bank) -> Iterator[Callable[..., object]]:
    """Factory: the module's shared app for these settings, acting on this test's own bank (X-Bank on
    every request; a request's own X-Bank or ?bank= still wins). Stores, recalls, edges, tags and
    Signet's routes are bank-scoped; memory ids are unique across banks, so a test that picks its own
    ids picks ones no other test of the module uses."""
    used: list = []

    def factory(**overrides):
        client = module_apps(**overrides)
        client.headers["X-Bank"] = bank
        used.append(client)
        return client

    yield factory
    for client in used:
        client.headers.pop("X-Bank", None)


def app_for(request, **overrides):
    """The module's shared app for these settings in this test's bank; under @pytest.mark.own_app, an
    app of the test's own (what a module's `api` fixture returns)."""
    factory = "make_client" if request.node.get_closest_marker("own_app") else "shared_client"
    return request.getfixturevalue(factory)(**overrides)


@pytest.fixture
def api(request):
    return app_for(request)
