"""The recall log index against a real engine: one document per recall, written after the response,
bounded, never the query text unless RECALL_LOG_INCLUDE_QUERY, never failing a recall."""

from __future__ import annotations

import time

from opensearchpy import OpenSearch

from tests.integration.live_server import free_port

SECRET = "zebra quartz mandolin"


def logged(api, os_client) -> list[dict]:
    state = api.app.state
    assert state.recall_log.flush(30)
    os_client.indices.refresh(index=state.settings.recall_log_alias)
    hits = os_client.search(index=state.settings.recall_log_alias, body={"size": 100, "sort": [{"timestamp": "asc"}]})["hits"]["hits"]
    return [h["_source"] for h in hits]


def test_off_by_default_no_index(api, os_client):
    assert api.get("/recall", params={"query": "anything"}).status_code == 200
    assert api.app.state.recall_log is None
    assert not os_client.indices.exists_alias(name=api.app.state.settings.recall_log_alias)


def test_one_document_per_recall_with_timings_counts_and_filters(make_client, os_client):
    api = make_client(recall_log_enabled=True)
    alias = api.app.state.settings.recall_log_alias
    assert list(os_client.indices.get_alias(name=alias)) == [f"{alias}-v1"]  # its own template, applied at bootstrap
    api.post("/memory", json={"content": f"The {SECRET} is in the blue folder", "tags": ["ops"]})
    first = api.get("/recall", params={"query": SECRET, "tags": "ops", "limit": 4}, headers={"X-Request-ID": "log-1"})
    second = api.get("/recall", params={"tags": "nothing-here", "sort": "time_desc"}, headers={"X-Request-ID": "log-2"})
    assert first.status_code == second.status_code == 200
    docs = logged(api, os_client)
    assert [d["request_id"] for d in docs] == ["log-1", "log-2"]
    doc, body = docs[0], first.json()
    assert doc["timings"] == body["timings"] and doc["query_time_ms"] == body["query_time_ms"]
    assert doc["counts"]["results"] == body["count"] == 1 and doc["counts"]["limit"] == 4
    assert doc["filters"]["tags"] == ["ops"] and doc["bank"] == "default"
    assert doc["query"] == {"present": True, "chars": len(SECRET), "count": 1, "embedding_given": False, "vector_matched": True}
    assert docs[1]["counts"]["results"] == 0 and docs[1]["query"]["present"] is False and docs[1]["filters"]["sort"] == "time_desc"
    # The query text is nowhere in the index: not in a document, not in a term.
    raw = str(os_client.search(index=alias, body={"size": 10})["hits"]["hits"])
    for word in SECRET.split():
        assert word not in raw
        assert os_client.count(index=alias, body={"query": {"query_string": {"query": word}}})["count"] == 0
    # The latency panels' fields are searchable as the template maps them.
    aggs = os_client.search(index=alias, body={"size": 0, "aggs": {
        "p": {"percentiles": {"field": "query_time_ms", "percents": [50, 95]}}, "s": {"avg": {"field": "timings.search"}}}})["aggregations"]
    assert aggs["s"]["value"] > 0 and aggs["p"]["values"]["95.0"] > 0
    assert api.get("/metrics").text.count('engram_recall_log_documents_total{outcome="written"} 2.0') == 1


def test_the_query_text_when_allowed(make_client, os_client):
    api = make_client(recall_log_enabled=True, recall_log_include_query=True)
    api.get("/recall", params={"query": SECRET})
    (doc,) = logged(api, os_client)
    assert doc["query"]["text"] == [SECRET]
    alias = api.app.state.settings.recall_log_alias
    assert os_client.count(index=alias, body={"query": {"match": {"query.text": "quartz"}}})["count"] == 1


def test_a_failing_log_never_fails_a_recall(make_client):
    api = make_client(recall_log_enabled=True)
    log = api.app.state.recall_log
    log.store.client = OpenSearch(hosts=[f"http://127.0.0.1:{free_port()}"], timeout=2, max_retries=0)  # its engine is gone
    for _ in range(3):
        assert api.get("/recall", params={"query": "still answers"}).status_code == 200
    assert log.flush(30)
    assert log.counts() == {"written": 0, "dropped": 0, "failed": 3}


def test_bounded_a_full_queue_drops_and_counts(make_client):
    api = make_client(recall_log_enabled=True, recall_log_queue_size=2)
    log = api.app.state.recall_log
    log.stop()  # no writer: the queue fills up
    for _ in range(5):
        assert api.get("/recall", params={"query": "q"}).status_code == 200
    assert log.queue_size == 2 and log.counts() == {"written": 0, "dropped": 3, "failed": 0}


def test_old_documents_are_pruned(make_client, os_client):
    api = make_client(recall_log_enabled=True, recall_log_retention_days=7)
    log = api.app.state.recall_log
    alias = api.app.state.settings.recall_log_alias
    old, new = ({"timestamp": ts, "query_time_ms": 1.0} for ts in ("2020-01-01T00:00:00+00:00", "2099-01-01T00:00:00+00:00"))
    log.write([old, new])
    os_client.indices.refresh(index=alias)
    log.prune()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        os_client.indices.refresh(index=alias)
        if os_client.count(index=alias)["count"] == 1:
            break
        time.sleep(0.2)
    hits = os_client.search(index=alias, body={"size": 5})["hits"]["hits"]
    assert [h["_source"]["timestamp"] for h in hits] == ["2099-01-01T00:00:00+00:00"]
