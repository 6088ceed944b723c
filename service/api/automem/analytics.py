"""GET /startup-recall and GET /analyze (spec 003: "Returns critical lessons and system rules";
"Returns analytics (type counts, preferences, temporal insights, entities, confidence distribution)").

Startup recall: what an agent loads at the start of a session, selected as AutoMem's
`startup_recall` does and ranked by the recall pipeline (no second scoring):
  * lessons: current memories (not archived, expired or superseded; never a MetaPattern) tagged
    `critical`, `lesson`, `ai-assistant`, `rule` or `preference` (prefix-aware: `lesson:python`
    counts), the `STARTUP_LESSON_LIMIT` most important first (importance, then recency), ranked by
    the query-less recall score — importance, confidence, recency — with the context bonus for a
    `critical` tag, so critical lessons lead;
  * system rules: the same for the tags `system` and `memory-recall`, `STARTUP_RULE_LIMIT` of them.
The body keeps AutoMem's fields (critical_lessons, system_rules, lesson_count, has_critical,
summary) and adds the recall response's `results` and `count` (lessons, then rules not already
listed).

Analyze: every figure comes from ONE aggregations request on the memories index (`analyze_body`).
Where AutoMem reads preferences from PREFERS_OVER edges (a second store and a join), these are
the most important Preference memories; entities are the enrichment's `entity:<category>:<slug>`
tags counted per category, and the `entities` field overall.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from service.config import Settings
from service.recall.request import RecallRequest
from service.recall.pipeline import RecallService

LESSON_TAGS = ("critical", "lesson", "ai-assistant", "rule", "preference")
RULE_TAGS = ("system", "memory-recall")  # AutoMem startup_recall's system_rules
CRITICAL_TAGS = ("critical",)
STARTUP_LESSON_LIMIT, STARTUP_RULE_LIMIT, STARTUP_MAX_LIMIT = 10, 5, 50  # AutoMem: LIMIT 10 and LIMIT 5
HAS_CRITICAL_IMPORTANCE = 0.9  # AutoMem: has_critical = any lesson with importance >= 0.9

# --- startup recall --------------------------------------------------------------------------------


def startup_params(settings: Settings, bank: str, tags: Sequence[str], limit: int, context_tags: Sequence[str] = ()) -> RecallRequest:
    return RecallRequest.from_settings(
        settings, bank=bank, tags=list(tags), tag_mode="any", tag_match="prefix", limit=limit, context_tags=list(context_tags),
        state_mode="current",
    )


def startup_recall(recall: RecallService, settings: Settings, bank: str, now: datetime, *, limit: int = STARTUP_LESSON_LIMIT) -> dict[str, Any]:
    """The lessons and rules of `bank` (the request's scope)."""
    lessons = recall.recall(startup_params(settings, bank, LESSON_TAGS, limit, CRITICAL_TAGS), now)
    rules = recall.recall(startup_params(settings, bank, RULE_TAGS, min(STARTUP_RULE_LIMIT, limit)), now)
    critical = [_lesson(r) for r in lessons["results"]]
    system = [{"id": r["id"], "content": r["memory"].get("content"), "tags": r["memory"].get("tags") or []} for r in rules["results"]]
    seen = {r["id"] for r in lessons["results"]}
    results = lessons["results"] + [r for r in rules["results"] if r["id"] not in seen]
    return {
        "status": "success",
        "critical_lessons": critical,
        "system_rules": system,
        "lesson_count": len(critical),
        "has_critical": any((c.get("importance") or 0) >= HAS_CRITICAL_IMPORTANCE for c in critical),
        "summary": f"Recalled {len(critical)} lesson(s) and {len(system)} system rule(s)",
        "results": results,
        "count": len(results),
        "selection": {"lesson_tags": list(LESSON_TAGS), "rule_tags": list(RULE_TAGS), "boosted_tags": list(CRITICAL_TAGS),
                      "limit": limit, "state_mode": "current"},
        "query_time_ms": round((lessons.get("query_time_ms") or 0) + (rules.get("query_time_ms") or 0), 3),
    }


def _lesson(r: dict) -> dict[str, Any]:
    m = r["memory"]
    return {
        "id": r["id"], "content": m.get("content"), "tags": m.get("tags") or [], "importance": m.get("importance", 0.5),
        "type": m.get("type") or "Context", "metadata": m.get("metadata") or {}, "final_score": r.get("final_score"),
    }


# --- analyze --------------------------------------------------------------------------------------
ANALYZE_DAYS = 30  # activity per day over the last 30 days
TYPE_BUCKETS, ENTITY_TAG_BUCKETS, TOP_ENTITIES, TOP_PER_CATEGORY, TOP_HITS = 50, 500, 10, 5, 10
# AutoMem analyze: confidence < 0.3 low, < 0.7 medium, else high.
CONFIDENCE_RANGES = [{"key": "low", "to": 0.3}, {"key": "medium", "from": 0.3, "to": 0.7}, {"key": "high", "from": 0.7}]
PATTERN_MIN_CONFIDENCE = 0.6  # AutoMem: Pattern nodes with confidence > 0.6
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
# UTC hour (0-23) and ISO weekday (1 = Monday) of the timestamp, from doc values.
HOUR_SCRIPT = "doc['timestamp'].value.getHour()"
WEEKDAY_SCRIPT = "doc['timestamp'].value.getDayOfWeekEnum().getValue()"
_HIT_FIELDS = ["content", "tags", "importance", "confidence", "type", "timestamp", "metadata"]


def _avg_importance() -> dict:
    return {"avg_importance": {"avg": {"field": "importance"}}}


def analyze_body(bank: str, excluded_types: Sequence[str], now: datetime, days: int = ANALYZE_DAYS) -> dict:
    today, tomorrow = now.strftime("%Y-%m-%d"), (now + timedelta(days=1)).strftime("%Y-%m-%d")
    first = (now - timedelta(days=days - 1)).strftime("%Y-%m-%d")
    query: dict = {"bool": {"filter": [{"term": {"bank": bank}}]}}
    if excluded_types:
        query["bool"]["must_not"] = [{"terms": {"type": list(excluded_types)}}]
    return {
        "size": 0, "track_total_hits": True, "query": query,
        "aggs": {
            "types": {"terms": {"field": "type", "size": TYPE_BUCKETS}, "aggs": {"avg_confidence": {"avg": {"field": "confidence"}}}},
            "confidence": {"range": {"field": "confidence", "keyed": True, "ranges": CONFIDENCE_RANGES}},
            "timed": {
                "filter": {"exists": {"field": "timestamp"}},
                "aggs": {
                    "hour": {"terms": {"script": {"lang": "painless", "source": HOUR_SCRIPT}, "size": 24}, "aggs": _avg_importance()},
                    "weekday": {"terms": {"script": {"lang": "painless", "source": WEEKDAY_SCRIPT}, "size": 7}, "aggs": _avg_importance()},
                    "recent": {
                        "filter": {"range": {"timestamp": {"gte": first, "lt": tomorrow, "format": "yyyy-MM-dd"}}},
                        "aggs": {"day": {"date_histogram": {
                            "field": "timestamp", "calendar_interval": "day", "format": "yyyy-MM-dd", "min_doc_count": 0,
                            "extended_bounds": {"min": first, "max": today},
                        }}},
                    },
                },
            },
            "entity_tags": {"terms": {"field": "tags_norm", "include": "entity:[^:]+:.+", "size": ENTITY_TAG_BUCKETS}},
            "entities": {"terms": {"field": "entities", "size": TOP_ENTITIES}},
            "preferences": {"filter": {"term": {"type": "Preference"}}, "aggs": {"top": {"top_hits": {
                "size": TOP_HITS, "sort": [{"importance": {"order": "desc", "missing": "_last"}}, {"timestamp": {"order": "desc", "missing": "_last"}}],
                "_source": {"includes": _HIT_FIELDS},
            }}}},
            "patterns": {"filter": {"bool": {"filter": [{"term": {"type": "Pattern"}}, {"range": {"confidence": {"gt": PATTERN_MIN_CONFIDENCE}}}]}},
                         "aggs": {"top": {"top_hits": {"size": TOP_HITS, "sort": [{"confidence": {"order": "desc"}}, {"id": "asc"}], "_source": {"includes": _HIT_FIELDS}}}}},
            "archived": {"filter": {"term": {"archived": True}}},
        },
    }


def _r(value: float | None) -> float:
    return round(value, 3) if isinstance(value, (int, float)) else 0


def parse_analyze(resp: dict) -> dict[str, Any]:
    """AutoMem's `analytics` block from the aggregation response."""
    aggs = resp.get("aggregations", {})
    types = {b["key"]: {"count": b["doc_count"], "average_confidence": _r(b["avg_confidence"]["value"])} for b in aggs["types"]["buckets"]}
    timed = aggs["timed"]
    temporal: dict[str, Any] = {}
    for b in sorted(timed["hour"]["buckets"], key=lambda b: int(b["key"])):
        temporal[f"hour_{int(b['key']):02d}"] = {"count": b["doc_count"], "avg_importance": _r(b["avg_importance"]["value"])}
    temporal["by_weekday"] = {
        WEEKDAYS[int(b["key"]) - 1]: {"count": b["doc_count"], "avg_importance": _r(b["avg_importance"]["value"])}
        for b in sorted(timed["weekday"]["buckets"], key=lambda b: int(b["key"]))
    }
    temporal["by_day"] = [{"date": b["key_as_string"], "count": b["doc_count"]} for b in timed["recent"]["day"]["buckets"]]
    by_category: dict[str, list[list]] = {}
    for b in aggs["entity_tags"]["buckets"]:
        _, category, slug = b["key"].split(":", 2)
        if len(by_category.setdefault(category, [])) < TOP_PER_CATEGORY:
            by_category[category].append([slug, b["doc_count"]])
    entity_frequency: dict[str, Any] = dict(sorted(by_category.items()))
    entity_frequency["top"] = [[b["key"], b["doc_count"]] for b in aggs["entities"]["buckets"]]
    prefs = [
        {"id": h["_id"], "content": h["_source"].get("content"), "importance": h["_source"].get("importance"),
         "confidence": h["_source"].get("confidence"), "tags": h["_source"].get("tags") or []}
        for h in aggs["preferences"]["top"]["hits"]["hits"]
    ]
    patterns = [
        {"id": h["_id"], "type": h["_source"].get("type"), "description": h["_source"].get("content"),
         "confidence": _r(h["_source"].get("confidence")),
         "observations": (h["_source"].get("metadata") or {}).get("observations", 0) if isinstance(h["_source"].get("metadata"), dict) else 0}
        for h in aggs["patterns"]["top"]["hits"]["hits"]
    ]
    confidence = {k: v["doc_count"] for k, v in aggs["confidence"]["buckets"].items()}
    return {
        "total_memories": resp.get("hits", {}).get("total", {}).get("value", 0),
        "archived": aggs["archived"]["doc_count"],
        "memory_types": types, "patterns": patterns, "preferences": prefs, "temporal_insights": temporal,
        "entity_frequency": entity_frequency, "confidence_distribution": confidence,
    }
