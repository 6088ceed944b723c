"""Helpers of the Hindsight API tests: retain into a bank, recall from it, read ids and texts."""

from __future__ import annotations

BANKS = "/v1/default/banks"


def retain(api, bank: str, *items: dict, headers: dict | None = None, **extra) -> dict:
    resp = api.post(f"{BANKS}/{bank}/memories", json={"items": list(items), **extra}, headers=headers)
    assert resp.status_code == 200, resp.text
    return resp.json()


def remember(api, bank: str, content: str, **fields) -> str:
    """Retain one item; its memory id."""
    (mid,) = retain(api, bank, {"content": content, **fields})["memory_ids"]
    return mid


def hrecall(api, bank: str, query: str, headers: dict | None = None, **body) -> dict:
    resp = api.post(f"{BANKS}/{bank}/memories/recall", json={"query": query, **body}, headers=headers)
    assert resp.status_code == 200, resp.text
    return resp.json()


def result_ids(body: dict) -> list[str]:
    return [r["id"] for r in body["results"]]


def texts(body: dict) -> list[str]:
    return [r["text"] for r in body["results"]]


def app_client(engine_url: str, embedder, os_client, **overrides):
    """A TestClient for an app of its own INDEX_PREFIX, for a whole module (the `make_client` fixture
    is per test); a context manager that deletes the app's indices at the end."""
    import uuid
    from contextlib import contextmanager

    from fastapi.testclient import TestClient

    from service.config import Settings
    from service.main import create_app
    from service.storage.bootstrap import drop_prefix
    from tests.conftest import ADMIN, AUTH, TOKEN

    @contextmanager
    def run():
        prefix = f"t{uuid.uuid4().hex[:10]}"
        values = dict(opensearch_url=engine_url, index_prefix=prefix, automem_api_token=TOKEN, admin_api_token=ADMIN, enrichment_enabled=False)
        values.update(overrides)
        client = TestClient(create_app(Settings(**values), embedder=embedder), raise_server_exceptions=False)
        try:
            with client:  # the app stops before its store is dropped: a running one would log the missing indices
                client.headers.update(AUTH)
                yield client
        finally:
            drop_prefix(os_client, prefix)

    return run()
