"""GET /startup-recall and GET /analyze (spec 003). Selection and aggregations: service/api/automem/analytics.py."""

from __future__ import annotations

import logging
import time

from fastapi import APIRouter, Query

from service.api.automem import analytics as insights
from service.api.deps import ApiAuth, RecallDep, SettingsDep, StoreDep
from service.api.scope import ReadScope
from service.clock.instants import iso, utcnow
from service.api.error_docs import ERROR_RESPONSES

router = APIRouter(dependencies=[ApiAuth], responses=ERROR_RESPONSES, tags=["insights"])
log = logging.getLogger("engram.api")


@router.get("/startup-recall")
def startup_recall(
    scope: ReadScope, service: RecallDep, settings: SettingsDep,
    limit: int = Query(insights.STARTUP_LESSON_LIMIT, ge=1, description=f"Lessons to return (at most {insights.STARTUP_MAX_LIMIT})"),
) -> dict:
    """The critical lessons and system rules of the request's bank, for an agent to load at session start."""
    body = insights.startup_recall(service, settings, scope.bank, utcnow(), limit=min(limit, insights.STARTUP_MAX_LIMIT))
    log.info("startup_recall", extra={"lesson_count": body["lesson_count"], "rule_count": len(body["system_rules"]), "latency_ms": body["query_time_ms"]})
    return body


@router.get("/analyze")
def analyze(scope: ReadScope, store: StoreDep, settings: SettingsDep) -> dict:
    """Type counts, preferences, temporal insights, entities and confidence distribution: one aggregation request."""
    started = time.perf_counter()
    now = utcnow()
    resp = store.search(insights.analyze_body(scope.bank, settings.excluded_types, now))
    analytics = insights.parse_analyze(resp)
    elapsed = round((time.perf_counter() - started) * 1000, 2)
    log.info("analyze_complete", extra={"total_memories": analytics["total_memories"], "types": len(analytics["memory_types"]), "latency_ms": elapsed})
    return {"status": "success", "analytics": analytics, "generated_at": iso(now), "query_time_ms": elapsed}
