"""The recall log document: filters, timings and counts of one recall; never the query text unless allowed."""

from __future__ import annotations

from datetime import datetime, timezone

from service.recall.log import recall_document
from service.recall.request import RecallRequest
from service.clock.expressions import TimeWindow

AT = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
BODY = {
    "status": "success", "query": "where is the launch code", "count": 3, "dedup_removed": 1,
    "vector_search": {"enabled": True, "matched": True},
    "timings": {"embed": 4.5, "search": 7.25, "score": 0.5, "state": 0.1, "rank": 0.01, "expand": 2.0, "hydrate": 0.2},
    "query_time_ms": 14.9,
    "state_filter": {"current_only": True, "suppressed_count": 2, "replacement_count": 1},
    "score_filter": {"min_score": 0.2, "adaptive_floor": True, "filtered_count": 4},
    "expansion": {"enabled": True, "seed_count": 3, "expanded_count": 2},
    "entity_expansion": {"enabled": True, "expanded_count": 1, "entities_found": ["Alice"]},
}


def request(**values) -> RecallRequest:
    base = dict(bank="team-a", query="where is the launch code", limit=7, tags=["ops", "project:alpha"], exclude_tags=["draft"],
                window=TimeWindow(datetime(2026, 1, 1, tzinfo=timezone.utc), None), expand_relations=True, context_types=["Decision"])
    base.update(values)
    return RecallRequest(**base)


def test_the_document_of_a_recall():
    doc = recall_document(request(), BODY, at=AT, request_id="req-9")
    assert doc == {
        "timestamp": "2026-03-01T12:00:00+00:00", "bank": "team-a", "request_id": "req-9", "query_time_ms": 14.9,
        "timings": {"embed": 4.5, "search": 7.25, "score": 0.5, "state": 0.1, "rank": 0.01, "expand": 2.0, "hydrate": 0.2},
        "query": {"present": True, "chars": 24, "count": 1, "embedding_given": False, "vector_matched": True},
        "counts": {"results": 3, "limit": 7, "dedup_removed": 1, "score_filtered": 4, "state_suppressed": 2, "state_replaced": 1,
                   "relation_expanded": 2, "entity_expanded": 1},
        "filters": {
            "tags": ["ops", "project:alpha"], "exclude_tags": ["draft"], "tag_mode": "any", "tag_match": "prefix",
            "time_start": "2026-01-01T00:00:00+00:00", "time_end": None, "as_of": None, "sort": "score", "state_mode": "current",
            "recency_bias": "off", "scoring_profile": "engram", "min_score": 0.0, "expand_relations": True, "expand_entities": False,
            "context_types": ["Decision"], "context_tags": [], "language": None,
        },
    }


def test_the_query_text_only_when_allowed():
    secret = "where is the launch code"
    assert secret not in repr(recall_document(request(), BODY, at=AT, request_id=None))
    allowed = recall_document(request(queries=["first question", "second"]), BODY, at=AT, request_id=None, include_query=True)
    assert allowed["query"] == {"present": True, "chars": 20, "count": 2, "embedding_given": False, "vector_matched": True,
                                "text": ["first question", "second"]}


def test_a_recall_without_query_or_with_odd_bodies():
    doc = recall_document(request(query=None, embedding=[0.1, 0.2]), {"count": 0, "timings": {"embed": 0, "search": "x"}}, at=AT, request_id=None)
    assert doc["query"] == {"present": False, "chars": 0, "count": 0, "embedding_given": True, "vector_matched": False}
    assert doc["timings"] == {"embed": 0.0}
    assert doc["query_time_ms"] is None and doc["counts"]["results"] == 0 and doc["counts"]["state_suppressed"] == 0
    star = recall_document(request(query="*"), {}, at=AT, request_id=None, include_query=True)
    assert star["query"]["present"] is False and "text" not in star["query"]
