"""Event data and log fields: spec 003's fields, AutoMem's previews, never a query in the logs."""

from __future__ import annotations

from service.stream import payloads as P

DOC = {"content": "x" * 150, "type": "Decision", "importance": 0.8, "tags": ["a", "b", "c", "d", "e", "f"]}


def test_preview_and_size():
    assert P.preview("short") == "short"
    assert P.preview("y" * 101) == "y" * 100 + "..."
    assert P.preview(None) == ""
    assert P.size_bytes("héllo") == 6


def test_store_event_and_log():
    assert P.store_event(DOC, "m1", 0.01234) == {
        "id": "m1", "content_preview": "x" * 100 + "...", "type": "Decision", "importance": 0.8,
        "tags": ["a", "b", "c", "d", "e"], "size_bytes": 150, "elapsed_ms": 12.34, "count": 1,
    }
    assert P.store_log(DOC, "m1", 0.5, "generated") == {
        "memory_id": "m1", "type": "Decision", "importance": 0.8, "tags_count": 6, "content_length": 150,
        "latency_ms": 500.0, "embedding_status": "generated", "storage_status": "stored",
    }


def test_batch_event_and_log():
    stored = [("a", {"content": "first"}), ("b", {"content": "second"})]
    assert P.batch_event(stored, 0.002) == {"count": 2, "ids": ["a", "b"], "content_preview": "first", "elapsed_ms": 2.0}
    assert P.batch_log(3, 2, 0.0)["storage_status"] == "partial"
    assert P.batch_log(2, 2, 0.0) == {"count": 2, "requested": 2, "failed_count": 0, "latency_ms": 0.0, "storage_status": "stored"}
    assert P.batch_log(2, 0, 0.0)["storage_status"] == "failed"


def test_update_delete_associate_events():
    assert P.update_event("m", DOC, ["tags", "importance"]) == {
        "id": "m", "content_preview": "x" * 100 + "...", "type": "Decision", "importance": 0.8, "tags": ["a", "b", "c", "d", "e"],
        "fields": ["importance", "tags"],
    }
    assert P.delete_event("m") == {"id": "m", "count": 1}
    assert P.delete_by_tag_event(["t1", "t2"], 4) == {"count": 4, "tags": ["t1", "t2"]}
    assert P.associate_event({"memory1_id": "a", "memory2_id": "b", "relation_type": "RELATES_TO", "strength": 0.5, "reason": "x"}) == {
        "memory1_id": "a", "memory2_id": "b", "relation_type": "RELATES_TO", "strength": 0.5, "count": 1,
    }
    body = {"created_count": 2, "failed_count": 1, "succeeded": [{"relation_type": "LEADS_TO"}, {"relation_type": "CONTRADICTS"}]}
    assert P.associate_batch_event(body) == {"count": 2, "failed_count": 1, "relation_types": ["CONTRADICTS", "LEADS_TO"]}


def test_recall_event_has_the_query_the_log_never_does():
    body = {"count": 3, "query_time_ms": 12.5, "state_mode": "current", "vector_search": {"matched": True}}
    assert P.recall_event("where is the launch code", 5, body, ["ops"]) == {
        "query": "where is the launch code", "limit": 5, "result_count": 3, "elapsed_ms": 12.5, "tags": ["ops"],
    }
    fields = P.recall_log("where is the launch code", 5, body, ["ops"])
    assert fields == {
        "result_count": 3, "limit": 5, "latency_ms": 12.5, "has_query": True, "query_length": 24, "tags_count": 1,
        "state_mode": "current", "vector_matched": True, "expanded_count": 0,
    }
    assert "launch" not in repr(fields)
