"""The suite runs against a real Engram service, one of:

  ENGRAM_URL set        that service (token: ENGRAM_TOKEN, AUTOMEM_API_TOKEN or ~/.config/engram/token;
                        it must see every bank: each test writes into a bank of its own and empties it);
  otherwise             an in-process service (this repository's service.main.create_app on a real
                        uvicorn server) with its own INDEX_PREFIX, on the engine of ENGRAM_TEST_OPENSEARCH_URL
                        (or testcontainers' OpenSearch with ENGRAM_TEST_ENGINE=docker) or the local node "test"
                        (started if needed, stopped afterwards if this started it),
                        as the repository's own suite does. This is how `make test` runs it.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
SRC = HERE.parent / "src"
TOKEN = "lg-test-token"

# Without an install (the repository's `make test`), the package is imported from its source tree;
# langgraph is a namespace package, so this adds langgraph.store.engram beside the installed langgraph.
try:
    import langgraph.store.engram  # noqa: F401
except ImportError:
    sys.path.insert(0, str(SRC))

from langgraph.store.engram import EngramStore, token_from_env


@pytest.fixture(scope="session")
def service() -> Iterator[tuple[str, str]]:
    """(base URL, token) of the service under test."""
    if os.environ.get("ENGRAM_URL"):
        token = token_from_env()
        if not token:
            pytest.fail("ENGRAM_URL is set but no token was found (ENGRAM_TOKEN, AUTOMEM_API_TOKEN, ~/.config/engram/token)")
        yield os.environ["ENGRAM_URL"].rstrip("/"), token
        return
    yield from _in_process()


def _in_process() -> Iterator[tuple[str, str]]:
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    try:
        from service.config import Settings
        from service.main import create_app
        from service.storage.bootstrap import drop_prefix
        from tests.integration.live_server import serve
    except ImportError as exc:
        pytest.fail(f"no ENGRAM_URL and the Engram service cannot be imported from {REPO} ({exc}): "
                    "set ENGRAM_URL (and a token) to test against a running service")
    from opensearchpy import OpenSearch

    lease = container = None
    engine = os.environ.get("ENGRAM_TEST_OPENSEARCH_URL")
    if not engine and os.environ.get("ENGRAM_TEST_ENGINE") == "docker":  # as tests/conftest.py
        from testcontainers.opensearch import OpenSearchContainer

        container = OpenSearchContainer("opensearchproject/opensearch:2.19.1", security_enabled=False).start()
        cfg = container.get_config()
        engine = f"http://{cfg['host']}:{cfg['port']}"
    if not engine:
        from service.engine.local_node import LocalNode
        from service.engine.node_lease import NodeLease

        # The node of tests/conftest.py: the last of its users (this run, a `make test` session, its
        # xdist workers) stops it when one of them found it stopped.
        lease = NodeLease(LocalNode("test", heap=os.environ.get("ENGRAM_TEST_HEAP", "2g")))
        engine = lease.node.start()
    prefix = f"lg{uuid.uuid4().hex[:10]}"
    # The service's defaults (enrichment and its background writes included: the store must live with
    # them), except that writes are searchable at once.
    settings = Settings(opensearch_url=engine, index_prefix=prefix, automem_api_token=TOKEN, write_refresh="true")
    client = OpenSearch(hosts=[engine], timeout=60)
    try:
        with serve(create_app(settings), timeout_graceful_shutdown=2) as url:
            yield url, TOKEN
    finally:
        drop_prefix(client, prefix)
        client.close()
        if lease is not None:
            lease.release(keep=bool(os.environ.get("ENGRAM_TEST_KEEP_ENGINE")))
        if container is not None:
            container.stop()


@pytest.fixture
def bank(service) -> Iterator[str]:
    """A bank of this test's own, emptied afterwards."""
    url, token = service
    name = f"lgt-{uuid.uuid4().hex[:12]}"
    yield name
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}", "X-Bank": name}, timeout=60) as http:
        http.delete("/memory/by-tag", params=[("tags", "langgraph-store"), ("tags", "langgraph-store-history")]).raise_for_status()


@pytest.fixture
def store(service, bank) -> Iterator[EngramStore]:
    url, token = service
    with EngramStore(url, token, bank=bank) as s:
        yield s


@pytest.fixture
def raw(service, bank) -> Iterator[httpx.Client]:
    """The service's HTTP API in the test's bank, to check what the store wrote."""
    url, token = service
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}", "X-Bank": bank}, timeout=60) as http:
        yield http
