"""The service's engine client over the http.client connection (service/storage/connection.py),
against the real node: what the engine answers, and a node that goes away and comes back."""

from __future__ import annotations

import uuid

import pytest
from opensearchpy import exceptions as os_exc

from service.config import Settings
from service.errors import EngineUnavailable
from service.storage.client import engine_errors, make_client
from service.storage.connection import HttpClientConnection
from tests.integration.engine_proxy import EngineProxy


def test_the_service_client_reads_and_writes_through_the_http_client_connection(engine_url):
    client = make_client(engine_url, Settings(opensearch_url=engine_url))
    index = f"conn-{uuid.uuid4().hex[:8]}"
    try:
        assert isinstance(client.transport.get_connection(), HttpClientConnection)
        client.indices.create(index=index, body={"settings": {"number_of_replicas": 0}})
        doc = {"content": "Zoë’s café — 東京 ✓ \u2028", "n": 1}
        client.index(index=index, id="a", body=doc, refresh=True)
        assert client.get(index=index, id="a")["_source"] == doc
        hits = client.search(index=index, body={"query": {"match": {"content": "café"}}})["hits"]["hits"]
        assert [h["_id"] for h in hits] == ["a"]
        assert client.indices.exists(index=index) is True  # HEAD
        assert client.indices.exists(index=index + "-none") is False
        with pytest.raises(os_exc.NotFoundError):
            client.get(index=index, id="missing")
    finally:
        client.indices.delete(index=index, ignore=[404])
        client.close()


def test_a_node_that_goes_away_is_unavailable_and_then_answers_again(engine_url):
    proxy = EngineProxy(engine_url)
    client = make_client(proxy.url, Settings(opensearch_url=proxy.url))
    try:
        assert client.cluster.health()["status"] in ("green", "yellow")
        proxy.cut()  # pooled connections dropped, new ones refused
        with pytest.raises(EngineUnavailable), engine_errors("health"):
            client.cluster.health()
        proxy.restore()
        assert client.cluster.health()["status"] in ("green", "yellow")
    finally:
        client.close()
        proxy.close()
