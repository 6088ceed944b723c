"""/health's memory and vector counts (service/storage/health.py): the request body and sync_status."""

from __future__ import annotations

import pytest

from service.storage.health import memory_counts, memory_counts_body, sync_status


@pytest.mark.parametrize(("memories", "vectors", "expected"), [
    (0, 0, "synced"),
    (5, 5, "synced"),
    (5, 4, "drift_detected"),
    (5, 0, "drift_detected"),
    (None, 3, "unknown"),
    (3, None, "unknown"),
    (None, None, "unknown"),
])
def test_sync_status(memories, vectors, expected):
    assert sync_status(memories, vectors) == expected


def test_one_search_counts_both():
    query = {"bool": {"filter": [{"term": {"bank": "default"}}]}}
    body = memory_counts_body(query)
    assert body == {"size": 0, "query": query, "track_total_hits": True, "aggs": {"vectors": {"filter": {"exists": {"field": "embedding"}}}}}
    response = {"hits": {"total": {"value": 12, "relation": "eq"}, "hits": []}, "aggregations": {"vectors": {"doc_count": 11}}}
    assert memory_counts(response) == (12, 11)
