"""GET /analyze: the one aggregation request (table of inputs -> DSL) and its parser."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from service.api.automem import analytics as I

NOW = datetime(2026, 3, 1, 15, 30, tzinfo=timezone.utc)

FIELDS = ["content", "tags", "importance", "confidence", "type", "timestamp", "metadata"]


def expected_body(query: dict, first: str, today: str, tomorrow: str) -> dict:
    imp = {"avg_importance": {"avg": {"field": "importance"}}}
    return {
        "size": 0, "track_total_hits": True, "query": query,
        "aggs": {
            "types": {"terms": {"field": "type", "size": 50}, "aggs": {"avg_confidence": {"avg": {"field": "confidence"}}}},
            "confidence": {"range": {"field": "confidence", "keyed": True, "ranges": [
                {"key": "low", "to": 0.3}, {"key": "medium", "from": 0.3, "to": 0.7}, {"key": "high", "from": 0.7}]}},
            "timed": {"filter": {"exists": {"field": "timestamp"}}, "aggs": {
                "hour": {"terms": {"script": {"lang": "painless", "source": "doc['timestamp'].value.getHour()"}, "size": 24}, "aggs": imp},
                "weekday": {"terms": {"script": {"lang": "painless", "source": "doc['timestamp'].value.getDayOfWeekEnum().getValue()"}, "size": 7}, "aggs": imp},
                "recent": {
                    "filter": {"range": {"timestamp": {"gte": first, "lt": tomorrow, "format": "yyyy-MM-dd"}}},
                    "aggs": {"day": {"date_histogram": {"field": "timestamp", "calendar_interval": "day", "format": "yyyy-MM-dd",
                                                        "min_doc_count": 0, "extended_bounds": {"min": first, "max": today}}}},
                },
            }},
            "entity_tags": {"terms": {"field": "tags_norm", "include": "entity:[^:]+:.+", "size": 500}},
            "entities": {"terms": {"field": "entities", "size": 10}},
            "preferences": {"filter": {"term": {"type": "Preference"}}, "aggs": {"top": {"top_hits": {
                "size": 10, "sort": [{"importance": {"order": "desc", "missing": "_last"}}, {"timestamp": {"order": "desc", "missing": "_last"}}],
                "_source": {"includes": FIELDS}}}}},
            "patterns": {"filter": {"bool": {"filter": [{"term": {"type": "Pattern"}}, {"range": {"confidence": {"gt": 0.6}}}]}},
                         "aggs": {"top": {"top_hits": {"size": 10, "sort": [{"confidence": {"order": "desc"}}, {"id": "asc"}], "_source": {"includes": FIELDS}}}}},
            "archived": {"filter": {"term": {"archived": True}}},
        },
    }


@pytest.mark.parametrize(
    ("bank", "excluded", "now", "days", "query", "first", "today", "tomorrow"),
    [
        ("default", ["MetaPattern"], NOW, 30,
         {"bool": {"filter": [{"term": {"bank": "default"}}], "must_not": [{"terms": {"type": ["MetaPattern"]}}]}},
         "2026-01-31", "2026-03-01", "2026-03-02"),
        ("b2", [], datetime(2026, 12, 31, 23, 59, tzinfo=timezone.utc), 7,
         {"bool": {"filter": [{"term": {"bank": "b2"}}]}}, "2026-12-25", "2026-12-31", "2027-01-01"),
    ],
)
def test_analyze_body(bank, excluded, now, days, query, first, today, tomorrow):
    assert I.analyze_body(bank, excluded, now, days) == expected_body(query, first, today, tomorrow)


def test_parse_analyze():
    def hit(i, **src):
        return {"_id": i, "_source": src}

    resp = {
        "hits": {"total": {"value": 7}},
        "aggregations": {
            "types": {"buckets": [{"key": "Decision", "doc_count": 4, "avg_confidence": {"value": 0.83333}}, {"key": "Context", "doc_count": 3, "avg_confidence": {"value": None}}]},
            "confidence": {"buckets": {"low": {"doc_count": 1}, "medium": {"doc_count": 2}, "high": {"doc_count": 4}}},
            "timed": {
                "hour": {"buckets": [{"key": 14, "doc_count": 2, "avg_importance": {"value": 0.75}}, {"key": 9, "doc_count": 5, "avg_importance": {"value": 0.5}}]},
                "weekday": {"buckets": [{"key": 7, "doc_count": 1, "avg_importance": {"value": 0.1}}, {"key": 1, "doc_count": 6, "avg_importance": {"value": 0.6}}]},
                "recent": {"day": {"buckets": [{"key_as_string": "2026-02-28", "doc_count": 0}, {"key_as_string": "2026-03-01", "doc_count": 7}]}},
            },
            "entity_tags": {"buckets": [{"key": "entity:tools:postgres", "doc_count": 3}, {"key": "entity:people:ann-lee", "doc_count": 2}, {"key": "entity:tools:redis", "doc_count": 1}]},
            "entities": {"buckets": [{"key": "postgres", "doc_count": 3}]},
            "preferences": {"top": {"hits": {"hits": [hit("p1", content="Prefers tabs", importance=0.9, confidence=0.8, tags=["style"])]}}},
            "patterns": {"top": {"hits": {"hits": [hit("q1", type="Pattern", content="Deploys on Fridays", confidence=0.71234, metadata={"observations": 4})]}}},
            "archived": {"doc_count": 1},
        },
    }
    assert I.parse_analyze(resp) == {
        "total_memories": 7, "archived": 1,
        "memory_types": {"Decision": {"count": 4, "average_confidence": 0.833}, "Context": {"count": 3, "average_confidence": 0}},
        "patterns": [{"id": "q1", "type": "Pattern", "description": "Deploys on Fridays", "confidence": 0.712, "observations": 4}],
        "preferences": [{"id": "p1", "content": "Prefers tabs", "importance": 0.9, "confidence": 0.8, "tags": ["style"]}],
        "temporal_insights": {
            "hour_09": {"count": 5, "avg_importance": 0.5}, "hour_14": {"count": 2, "avg_importance": 0.75},
            "by_weekday": {"monday": {"count": 6, "avg_importance": 0.6}, "sunday": {"count": 1, "avg_importance": 0.1}},
            "by_day": [{"date": "2026-02-28", "count": 0}, {"date": "2026-03-01", "count": 7}],
        },
        "entity_frequency": {"people": [["ann-lee", 2]], "tools": [["postgres", 3], ["redis", 1]], "top": [["postgres", 3]]},
        "confidence_distribution": {"low": 1, "medium": 2, "high": 4},
    }
