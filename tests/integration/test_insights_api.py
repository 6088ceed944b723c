"""GET /startup-recall and GET /analyze against the real engine."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from tests.integration.support import assert_error, clear_of_midnight, engine_requests, mem
from tests.conftest import app_for


@pytest.fixture
def api(request):
    return app_for(request, write_refresh="true", consolidation_tick_seconds=0)


@pytest.mark.own_app('GET /startup-recall reads the default bank')
def test_startup_recall_selection_and_shape(api):
    critical = mem(api, "Never force-push to main.", tags=["critical"], importance=0.7, type="Insight")
    lesson_hi = mem(api, "Run migrations inside a transaction.", tags=["lesson:db"], importance=0.95, type="Insight")
    lesson_lo = mem(api, "Prefer small pull requests.", tags=["preference"], importance=0.4, type="Preference")
    rule = mem(api, "Always answer in English.", tags=["system"], importance=0.6)
    both = mem(api, "Store memories after each task.", tags=["memory-recall", "rule"], importance=0.5)
    mem(api, "Unrelated chatter.", tags=["misc"], importance=1.0)
    archived = mem(api, "An archived lesson.", tags=["lesson"], importance=1.0, archived=True)
    old = mem(api, "Deploy with script v1.", tags=["lesson"], importance=0.9)
    new = mem(api, "Deploy with script v2.", tags=["deploy"], importance=0.3, supersedes=old)
    assert new
    body = api.get("/startup-recall").json()
    assert body["status"] == "success"
    lessons = [c["id"] for c in body["critical_lessons"]]
    # critical first (context bonus 0.45), then by the query-less recall score: 0.1 importance + 0.05
    # confidence + 0.1 recency (lesson_lo, typed: confidence 0.9, 0.185; both, classified: 0.3, 0.165).
    # Archived and superseded lessons are left out.
    assert lessons == [critical, lesson_hi, lesson_lo, both]
    assert archived not in lessons and old not in lessons
    assert [r["id"] for r in body["system_rules"]] == [rule, both]
    assert body["critical_lessons"][1] == {
        "id": lesson_hi, "content": "Run migrations inside a transaction.", "tags": ["lesson:db"], "importance": 0.95,
        "type": "Insight", "metadata": {}, "final_score": body["results"][1]["final_score"],
    }
    assert (body["lesson_count"], body["has_critical"]) == (4, True)
    assert body["summary"] == "Recalled 4 lesson(s) and 2 system rule(s)"
    # The recall response shape: lessons, then rules not already listed.
    assert [r["id"] for r in body["results"]] == [critical, lesson_hi, lesson_lo, both, rule] and body["count"] == 5
    first = body["results"][0]
    assert {"id", "memory", "final_score", "match_type", "score_components", "relations"} <= set(first)
    assert first["score_components"]["context"] > 0 and body["results"][1]["score_components"]["context"] == 0
    assert body["selection"]["lesson_tags"] == ["critical", "lesson", "ai-assistant", "rule", "preference"]
    assert [c["id"] for c in api.get("/startup-recall", params={"limit": 2}).json()["critical_lessons"]] == [critical, lesson_hi]


def test_startup_recall_empty_and_hostile(api):
    body = api.get("/startup-recall").json()
    assert (body["critical_lessons"], body["system_rules"], body["count"], body["has_critical"]) == ([], [], 0, False)
    assert_error(api.get("/startup-recall", params={"limit": 0}), 400, "limit")
    assert_error(api.get("/startup-recall", params={"limit": "ten"}), 400, "limit")
    assert api.get("/startup-recall", params={"limit": 10**30}).json()["selection"]["limit"] == 50
    assert_error(api.get("/startup-recall", headers={"Authorization": "Bearer wrong"}), 401)


def at(day: str, hour: int) -> str:
    return f"{day}T{hour:02d}:15:00+00:00"


def test_analyze_in_one_request(api):
    clear_of_midnight(timezone.utc)  # "today" is read once, before the writes and /analyze
    now = datetime.now(timezone.utc)
    today = now.replace(hour=0, minute=30, second=0, microsecond=0)  # today, at an hour no assertion is about
    if today > now:
        today = now
    mem(api, "Chose Postgres.", type="Decision", confidence=0.9, importance=0.8, timestamp=at("2026-01-05", 9),
        tags=["entity:tools:postgres", "entity:people:ann-lee"])  # a Monday
    mem(api, "Chose Redis for caching.", type="Decision", confidence=0.8, importance=0.6, timestamp=at("2026-01-05", 9),
        tags=["entity:tools:redis", "entity:tools:postgres"])
    mem(api, "Prefers tabs over spaces.", type="Preference", confidence=0.5, importance=0.9, timestamp=at("2026-01-11", 14))  # a Sunday
    mem(api, "Deploys usually go out on Fridays.", type="Pattern", confidence=0.75, importance=0.4, timestamp=at("2026-01-11", 14),
        metadata={"observations": 3})
    mem(api, "A weak pattern.", type="Pattern", confidence=0.5, importance=0.5, timestamp=today.isoformat())
    mem(api, "Archived context.", type="Context", confidence=0.2, importance=0.3, archived=True, timestamp=today.isoformat())
    mem(api, "Meta-pattern: internal.", type="MetaPattern", confidence=0.8)  # RECALL_EXCLUDED_TYPES
    resp, calls = _analyze(api)
    assert [c for c in calls if "_search" in c] == [f"POST /{api.app.state.settings.memories_alias}/_search"] and len(calls) == 1
    a = resp["analytics"]
    assert (a["total_memories"], a["archived"]) == (6, 1)
    assert a["memory_types"] == {
        "Decision": {"count": 2, "average_confidence": 0.85}, "Pattern": {"count": 2, "average_confidence": 0.625},
        "Preference": {"count": 1, "average_confidence": 0.5}, "Context": {"count": 1, "average_confidence": 0.2},
    }
    assert a["confidence_distribution"] == {"low": 1, "medium": 2, "high": 3}
    t = a["temporal_insights"]
    assert t["hour_09"] == {"count": 2, "avg_importance": 0.7} and t["hour_14"] == {"count": 2, "avg_importance": 0.65}
    # By weekday: the two dated days' memories, and today's two on whatever weekday today is (a Monday
    # or a Sunday included: the test runs on every day of the week).
    importances = {"monday": [0.8, 0.6], "sunday": [0.9, 0.4]}
    importances.setdefault(today.strftime("%A").lower(), []).extend([0.5, 0.3])
    assert t["by_weekday"] == {day: {"count": len(v), "avg_importance": round(sum(v) / len(v), 3)} for day, v in importances.items()}
    assert len(t["by_day"]) == 30 and t["by_day"][-1] == {"date": today.strftime("%Y-%m-%d"), "count": 2}
    assert sum(d["count"] for d in t["by_day"][:-1]) == 0
    assert a["entity_frequency"] == {"people": [["ann-lee", 1]], "tools": [["postgres", 2], ["redis", 1]],
                                     "top": [["postgres", 2], ["ann-lee", 1], ["redis", 1]]}
    assert [p["content"] for p in a["preferences"]] == ["Prefers tabs over spaces."]
    assert a["patterns"] == [{"id": a["patterns"][0]["id"], "type": "Pattern", "description": "Deploys usually go out on Fridays.", "confidence": 0.75, "observations": 3}]
    assert resp["status"] == "success" and resp["generated_at"].startswith(today.strftime("%Y-%m-%d")) and resp["query_time_ms"] > 0


def _analyze(api):
    with engine_requests(api) as calls:
        resp = api.get("/analyze")
    assert resp.status_code == 200, resp.text
    return resp.json(), calls


def test_analyze_empty(api):
    a = api.get("/analyze").json()["analytics"]
    assert (a["total_memories"], a["memory_types"], a["patterns"], a["preferences"]) == (0, {}, [], [])
    assert a["confidence_distribution"] == {"low": 0, "medium": 0, "high": 0}
    assert a["entity_frequency"] == {"top": []} and len(a["temporal_insights"]["by_day"]) == 30
    assert_error(api.get("/analyze", headers={"Authorization": "Bearer wrong"}), 401)
