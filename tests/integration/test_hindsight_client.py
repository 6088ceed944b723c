"""hindsight-client 1.1.0 (from PyPI, unchanged) against a real uvicorn server: create_bank, retain,
retain_batch, recall with every option it sends, list_memories, delete_bank."""

from __future__ import annotations

import pytest

from tests.conftest import TOKEN
from tests.integration.live import live_app

hindsight_client = pytest.importorskip("hindsight_client")


@pytest.fixture
def client(engine_url, embedder, os_client):
    with live_app(engine_url, embedder, os_client, recall_adaptive_floor=False, enrichment_enabled=False) as (_, url):
        hs = hindsight_client.Hindsight(base_url=url, api_key=TOKEN, timeout=60)
        try:
            yield hs
        finally:
            hs.close()


def test_the_client_works_unchanged(client):
    assert hindsight_client.__name__ == "hindsight_client"
    from importlib.metadata import version

    assert version("hindsight-client") == "1.1.0"
    profile = client.create_bank("alice", name="Alice", mission="Help Alice remember her work", disposition_skepticism=4)
    assert (profile.bank_id, profile.name, profile.mission, profile.disposition.skepticism, profile.disposition.empathy) == (
        "alice", "Alice", "Help Alice remember her work", 4, 3)
    one = client.retain("alice", "Alice works at Google on the AI team", context="work", timestamp="2024-01-15T10:30:00Z",
                        tags=["user_a"], metadata={"source": "slack"}, entities=[{"text": "Alice", "type": "PERSON"}])
    assert (one.success, one.bank_id, one.items_count, one.var_async) == (True, "alice", 1, False)
    batch = client.retain_batch("alice", [
        {"content": "Bob went hiking in the Alps last weekend", "tags": ["user_b"], "timestamp": "2024-01-20T09:00:00Z"},
        {"content": "I reviewed Alice's model evaluation plan", "tags": ["user_a"], "document_id": "review-1"},
        {"content": "The AI team meets every Tuesday", "timestamp": "2024-01-16T10:00:00Z"},
    ], document_tags=["team"])
    assert (batch.success, batch.items_count) == (True, 3)

    got = client.recall("alice", "What does Alice work on?", tags=["user_a"], tags_match="any_strict", budget="high",
                        max_tokens=1000, trace=True, query_timestamp="2024-01-21T00:00:00", types=["world", "experience"],
                        min_scores={"semantic": 0.0, "final": 0.0}, include_entities=True, include_chunks=True)
    texts = [r.text for r in got.results]
    assert set(texts) == {"Alice works at Google on the AI team", "I reviewed Alice's model evaluation plan"}
    by_text = {r.text: r for r in got.results}
    fact = by_text["Alice works at Google on the AI team"]
    assert (fact.type, fact.context, fact.tags, fact.metadata, fact.entities) == ("world", "work", ["user_a"], {"source": "slack"}, ["Alice"])
    assert fact.mentioned_at.startswith("2024-01-15T10:30:00") and fact.scores.final > 0 and fact.scores.reranker is None
    assert by_text["I reviewed Alice's model evaluation plan"].type == "experience"
    assert by_text["I reviewed Alice's model evaluation plan"].chunk_id == "review-1:0"
    assert got.trace["budget"]["level"] == "high" and got.trace["query_timestamp"] == "2024-01-21T00:00:00+00:00"
    assert "Alice" in got.entities and "review-1:0" in got.chunks

    grouped = client.recall("alice", "team", tag_groups=[{"tags": ["team"], "match": "all_strict"}, {"not": {"tags": ["user_b"]}}], budget="low")
    assert {r.text for r in grouped.results} == {"I reviewed Alice's model evaluation plan", "The AI team meets every Tuesday"}
    assert [r.text for r in client.recall("alice", "hiking", types=["experience"], tags=["user_b"], tags_match="all_strict").results] == []
    cut = client.recall("alice", "Alice", max_tokens=12, budget="mid")
    assert len(cut.results) == 1  # each text is 9-12 tokens: one fits
    window = client.recall("alice", "team", temporal_window={"start": "2024-01-20T00:00:00Z", "end": "2024-01-21T00:00:00Z"})
    assert "Bob went hiking in the Alps last weekend" in [r.text for r in window.results]

    listed = client.list_memories("alice", limit=2)
    assert (listed.total, listed.limit, listed.offset, len(listed.items)) == (4, 2, 0, 2)
    experience = client.list_memories("alice", type="experience")
    assert [i.text for i in experience.items] == ["I reviewed Alice's model evaluation plan"]
    assert client.list_memories("alice", search_query="hiking").items[0].tags == ["user_b", "team"]

    deleted = client.delete_bank("alice")
    assert deleted.success and deleted.deleted_count == 4 + 1  # four memories and the profile
    assert client.list_memories("alice").total == 0


def test_client_errors_are_api_exceptions(client):
    from hindsight_client_api.exceptions import ApiException

    with pytest.raises(ApiException) as err:
        client.recall("alice", "x", min_scores={"reranker": 0.5})
    assert err.value.status == 400 and "needs a reranker" in err.value.body
    bad = hindsight_client.Hindsight(base_url=client._base_url, api_key="not-the-token")
    with pytest.raises(ApiException) as err:
        bad.recall("alice", "x")
    assert err.value.status == 401
    bad.close()


def test_get_version(client):
    """hindsight-client's get_version (GET /version, open): the API version implemented and the flags."""
    got = client.get_version()
    assert got.api_version == "1.1.0"
    flags = got.features
    assert (flags.worker, flags.mcp, flags.bank_llm_health, flags.store_document_text) == (False, False, False, True)


def test_async_retain_and_its_operation_through_the_client(client):
    """retain_async=True answers with an operation id; the client's operations API reads its status and the list."""
    import time

    from hindsight_client.hindsight_client import _run_async

    done = client.retain_batch("ops", [{"content": "Dana owns the release train"}, {"content": "Releases ship on Thursdays"}], retain_async=True)
    assert (done.success, done.var_async, done.items_count) == (True, True, 2) and done.operation_id
    deadline = time.monotonic() + 60
    while (status := _run_async(client.operations.get_operation_status("ops", done.operation_id))).status not in ("completed", "failed"):
        assert time.monotonic() < deadline, status
        time.sleep(0.1)
    assert (status.operation_id, status.status, status.result_metadata["memories_count"]) == (done.operation_id, "completed", 2)
    listed = _run_async(client.operations.list_operations("ops", status="completed", limit=10))
    assert (listed.bank_id, listed.total, [o.id for o in listed.operations]) == ("ops", 1, [done.operation_id])
    assert listed.operations[0].task_type == "retain" and listed.operations[0].items_count == 2
