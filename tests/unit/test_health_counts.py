"""/health's memory and vector counts (service/storage/health.py) and the drift repair's (service/admin/vector_repair.py)."""

from __future__ import annotations

import pytest

from service.admin.vector_repair import RepairRun, drift_body
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


@pytest.mark.parametrize(("excluded", "must_not"), [
    ((), [{"exists": {"field": "embedding"}}]),
    (("MetaPattern",), [{"exists": {"field": "embedding"}}, {"terms": {"type": ["MetaPattern"]}}]),
])
def test_the_drift_repair_counts_memories_without_a_vector_per_bank(excluded, must_not):
    assert drift_body(excluded) == {"size": 0, "track_total_hits": False, "query": {"bool": {"must_not": must_not}},
                                    "aggs": {"banks": {"terms": {"field": "bank", "size": 1000}}}}


@pytest.mark.parametrize(("found", "processed", "unfinished"), [
    ({}, 0, False),
    ({"a": 5}, 5, False),
    ({"a": 5, "b": 1001}, 1005, True),  # b has more than a page: the next check follows soon
    ({"b": 1001}, 0, False),  # no progress (every re-embedding failed): wait for the interval
])
def test_a_repair_continues_soon_only_while_unfinished_and_progressing(found, processed, unfinished):
    assert RepairRun(found=found, processed=processed).unfinished is unfinished
