"""Signet's recall surface, the pure parts: temporal resolution, response shaping, DSL builders, the
request translation and the agent of a session (service/api/signet/)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from service.api.signet import models as M
from service.api.signet import queries as SQ
from service.api.signet import shaping
from service.api.signet.dedupe import agent_of
from service.api.signet.temporal import DEFAULT_FACETS, Temporal, facet_of, js_iso, resolve
from service.clock.periods import zone
from service.errors import BadRequest

NOW = datetime(2026, 5, 20, 12, tzinfo=timezone.utc)
UTC = zone("UTC")


def z(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


# --- temporal -------------------------------------------------------------------------------------------
def resolved(query: str, time: dict | None) -> Temporal | None:
    """As the route does: the body validates `time` (its instants, facets and mode), resolve does the rest."""
    body = M.SignetRecallBody.model_validate({"query": query, "time": time})
    return resolve(query, body.time, NOW, UTC)


@pytest.mark.parametrize(
    ("query", "time", "meta"),
    [
        ("editor", None, None),
        ("2026/05/13 editor", None, {"mode": "filter", "source": "query", "originalQuery": "2026/05/13 editor", "contentQuery": "editor",
                                     "start": "2026-05-13T00:00:00.000Z", "end": "2026-05-14T00:00:00.000Z", "facets": list(DEFAULT_FACETS)}),
        ("May 13 2026", None, {"mode": "timeline", "source": "query", "originalQuery": "May 13 2026", "contentQuery": "",
                               "start": "2026-05-13T00:00:00.000Z", "end": "2026-05-14T00:00:00.000Z", "facets": list(DEFAULT_FACETS)}),
        # a time object wins over the query's dates, which stay in the content query
        ("2026/05/13 editor", {"start": "2026-05-01T00:00:00Z", "end": "2026-05-02T00:00:00Z", "facets": ["captured"], "mode": "auto"},
         {"mode": "filter", "source": "request", "originalQuery": "2026/05/13 editor", "contentQuery": "2026/05/13 editor",
          "start": "2026-05-01T00:00:00.000Z", "end": "2026-05-02T00:00:00.000Z", "facets": ["captured"]}),
        ("editor", {"start": "2026-05-01T00:00:00Z", "mode": "timeline"},
         {"mode": "timeline", "source": "request", "originalQuery": "editor", "contentQuery": "editor",
          "start": "2026-05-01T00:00:00.000Z", "end": None, "facets": list(DEFAULT_FACETS)}),
        ("editor", {"end": "2026-05-02T10:30:00.123456+02:00", "facets": ["valid", "valid"], "mode": "filter"},
         {"mode": "filter", "source": "request", "originalQuery": "editor", "contentQuery": "editor",
          "start": None, "end": "2026-05-02T08:30:00.123Z", "facets": ["valid"]}),
        # a time object without bounds is no window
        ("editor", {"facets": ["captured"], "mode": "auto"}, None),
    ],
)
def test_resolve(query, time, meta):
    got = resolved(query, time)
    assert (got.to_meta() if got else None) == meta


@pytest.mark.parametrize(
    ("time", "message"),
    [
        ({"start": "yesterday-ish"}, "time.start"),
        ({"end": "2026-13-01"}, "time.end"),
        ({"start": "2026-05-02T00:00:00Z", "end": "2026-05-01T00:00:00Z"}, "is after end"),
        ({"start": "2026-05-01T00:00:00Z", "facets": ["weather"]}, "time.facets.0"),
        ({"start": "2026-05-01T00:00:00Z", "mode": "sideways"}, "time.mode"),
        ({"start": 1778630400}, "time.start"),  # a unix time is not ISO 8601
    ],
)
def test_resolve_refuses_bad_time_objects(time, message):
    with pytest.raises(ValueError, match=message):
        resolved("editor", time)


T = Temporal("filter", "query", "q", "q", z("2026-05-13T00:00:00Z"), z("2026-05-14T00:00:00Z"), DEFAULT_FACETS)


@pytest.mark.parametrize(
    ("memory", "facets", "expected"),
    [
        ({"timestamp": "2026-05-13T15:00:00+00:00"}, DEFAULT_FACETS, ("captured", "2026-05-13T15:00:00.000Z", "2026-05-13T15:00:00.000Z")),
        ({"timestamp": "2026-05-14T00:00:00+00:00"}, DEFAULT_FACETS, None),  # the end is exclusive
        ({"timestamp": "2026-05-01T00:00:00+00:00", "t_valid": "2026-05-10T00:00:00+00:00"}, DEFAULT_FACETS,
         ("valid", "2026-05-10T00:00:00.000Z", None)),
        ({"timestamp": "2026-05-01T00:00:00+00:00", "t_valid": "2026-05-10T00:00:00+00:00", "t_invalid": "2026-05-13T12:00:00+00:00"}, DEFAULT_FACETS,
         ("valid", "2026-05-10T00:00:00.000Z", "2026-05-13T12:00:00.000Z")),
        ({"timestamp": "2026-05-01T00:00:00+00:00", "t_valid": "2026-05-10T00:00:00+00:00", "t_invalid": "2026-05-13T00:00:00+00:00"}, DEFAULT_FACETS, None),
        ({"timestamp": "2026-05-13T15:00:00+00:00"}, ("valid",), None),
        # the dates it speaks of ("yesterday", written the day after): the day met
        ({"timestamp": "2026-05-14T09:00:00+00:00", "content": "We shipped it yesterday"}, DEFAULT_FACETS,
         ("occurred", "2026-05-13T00:00:00.000Z", "2026-05-14T00:00:00.000Z")),
        ({"timestamp": "2026-05-14T09:00:00+00:00", "content": "We shipped it yesterday"}, ("captured", "valid"), None),
        ({"timestamp": "2026-05-14T09:00:00+00:00", "content": "We shipped it today"}, DEFAULT_FACETS, None),
        # written in the window counts as occurred there too, when captured is not asked for
        ({"timestamp": "2026-05-13T15:00:00+00:00", "content": "notes"}, ("occurred",), ("occurred", "2026-05-13T00:00:00.000Z", "2026-05-14T00:00:00.000Z")),
    ],
)
def test_facet_of(memory, facets, expected):
    t = Temporal(T.mode, T.source, T.original_query, T.content_query, T.start, T.end, facets)
    assert facet_of(memory, t) == expected


def test_js_iso_is_javascripts_to_iso_string():
    assert js_iso(z("2026-02-21T10:00:00Z")) == "2026-02-21T10:00:00.000Z"
    assert js_iso(z("2026-02-21T11:00:00.987654+01:00")) == "2026-02-21T10:00:00.987Z"


# --- shaping ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("components", "match_type", "source"),
    [
        ({"vector": 0.8, "keyword": 0.5}, "vector", "hybrid"),
        ({"vector": 0.8, "keyword": 0.0, "exact": 1.0}, "keyword", "hybrid"),
        ({"vector": 0.8, "keyword": 0.0}, "vector", "vector"),
        ({"vector": 0.0, "keyword": 0.4}, "keyword", "keyword"),
        ({"vector": -0.1}, "vector", "keyword"),
        ({}, "trending", "keyword"),
        ({"vector": 0.9, "keyword": 0.9}, "relation", "graph"),
        ({"vector": 0.9}, "entity_expansion", "graph"),
    ],
)
def test_evidence_source(components, match_type, source):
    assert shaping.evidence_source(components, match_type) == source


PIPELINE_RESULT = {
    "id": "m1", "final_score": 0.923456, "match_type": "vector", "score_components": {"vector": 0.9, "keyword": 0.3},
    "memory": {"content": "User prefers vim keybindings", "tags": ["preference", "editor"], "importance": 0.9, "type": "Preference",
               "timestamp": "2026-02-21T10:00:00+00:00", "who": "claude-code", "pinned": False},
}


@pytest.mark.parametrize(("raw", "shown"), [(0.0, 0.0), (-0.2, 0.0), (None, 0.0), (0.5, 0.5), (0.923456, 0.9235), (0.95, 0.95),
                                           (1.0, 0.9816), (1.0243, 0.9887), (3.0, 1.0)])
def test_scores_stay_in_signets_range(raw, shown):
    """spec 004 documents score in 0..1; ours can pass 1 (1.0243 seen): compressed above 0.95."""
    assert shaping.signet_score(raw) == shown


def test_the_score_map_keeps_the_order():
    raws = [i / 200 for i in range(0, 400)]  # 0 .. 2
    shown = [shaping.signet_score(r) for r in raws]
    assert all(0.0 <= s <= 1.0 for s in shown)
    assert all(a <= b for a, b in zip(shown, shown[1:]))
    unrounded = [shaping.signet_score(r) for r in (0.96, 0.97, 1.0, 1.05, 1.2)]
    assert unrounded == sorted(set(unrounded))  # strictly increasing where four decimals can tell


def test_row_has_every_field_of_spec_004():
    assert shaping.row(PIPELINE_RESULT) == {
        "id": "m1", "content": "User prefers vim keybindings", "content_length": 28, "truncated": False, "score": 0.9235,
        "source": "hybrid", "type": "preference", "tags": "preference,editor", "pinned": False, "importance": 0.9,
        "who": "claude-code", "project": None, "created_at": "2026-02-21T10:00:00.000Z", "subject_type": "memory",
        "subject_id": "m1", "supplementary": False, "already_recalled": False,
    }
    t = Temporal("filter", "query", "q", "q", z("2026-02-21T00:00:00Z"), z("2026-02-22T00:00:00Z"), DEFAULT_FACETS)
    timed = shaping.row(PIPELINE_RESULT, temporal=t, repeated=True)
    assert (timed["temporal_facet"], timed["temporal_start_at"], timed["temporal_end_at"], timed["already_recalled"]) == (
        "captured", "2026-02-21T10:00:00.000Z", "2026-02-21T10:00:00.000Z", True)


def test_meta_timings_and_dedupe():
    stages = shaping.stage_timings({"search": 2.0, "embed": 1.23456, "extra": 0.5}, {"ledger_read": 0.25})
    assert stages == [{"name": "embed", "durationMs": 1.235}, {"name": "search", "durationMs": 2.0},
                      {"name": "extra", "durationMs": 0.5}, {"name": "ledger_read", "durationMs": 0.25}]
    assert shaping.dedupe_meta(None) == {"enabled": False, "suppressed": 0, "repeatedReturned": 0}
    assert shaping.dedupe_meta(3, 4, 1) == {"enabled": True, "contextEpoch": 3, "suppressed": 4, "repeatedReturned": 1}
    m = shaping.meta([], total_ms=1.23456, stages=[], dedupe=shaping.dedupe_meta(None), temporal=None)
    assert m == {"totalReturned": 0, "hasSupplementary": False, "noHits": True, "timings": {"totalMs": 1.235, "stages": []},
                 "dedupe": {"enabled": False, "suppressed": 0, "repeatedReturned": 0}}


def test_aggregate_without_a_language_model():
    assert shaping.aggregate("q", None, []) == {
        "savedMemoryId": None, "saved": False, "deduped": False, "budget": "small", "queries": ["q"], "sourceMemoryIds": [],
        "stoppedReason": "no_evidence",
    }
    got = shaping.aggregate("q", "large", [{"id": "a"}, {"id": "b"}])
    assert (got["stoppedReason"], got["partial"], got["sourceMemoryIds"], got["budget"]) == ("router_unavailable", True, ["a", "b"], "large")
    assert "language model" in got["message"]


def test_legacy_and_similar_rows():
    src = PIPELINE_RESULT["memory"]
    assert shaping.legacy_row("m1", src, 3.14159) == {
        "id": "m1", "content": "User prefers vim keybindings", "created_at": "2026-02-21T10:00:00.000Z", "who": "claude-code",
        "importance": 0.9, "tags": "preference,editor", "type": "preference", "pinned": False, "score": 3.1416,
    }
    assert "score" not in shaping.legacy_row("m1", src, None)
    assert shaping.similar_row("m1", {**src, "confidence": 0.9}, 0.87) == {
        "id": "m1", "content": "User prefers vim keybindings", "type": "preference", "tags": ["preference", "editor"], "score": 0.87,
        "confidence": 0.9, "created_at": "2026-02-21T10:00:00.000Z",
    }


# --- DSL -------------------------------------------------------------------------------------------------
FLT = {"bool": {"filter": [{"term": {"bank": "b"}}]}}


def test_legacy_search_bodies():
    assert SQ.keyword_search(FLT, "vim editor", 20) == {
        "size": 20, "_source": {"excludes": ["embedding", "tags_norm", "metadata_terms", "metadata_terms_plain", "content_stems", "context_stems"]},
        "query": {"bool": {"must": [{"bool": {"should": [
            {"match": {"content": {"query": "vim editor"}}},
            {"match": {"tags_text": {"query": "vim editor", "boost": 0.5}}},
            {"match_phrase": {"content.exact": {"query": "vim editor", "slop": 1, "boost": 2.0}}},
        ], "minimum_should_match": 1}}], "filter": [FLT]}},
    }
    body = SQ.filter_listing(FLT, 50, NOW)
    assert body["size"] == 50 and body["query"]["script_score"]["query"] == {"bool": {"filter": [FLT]}}
    assert body["query"]["script_score"]["script"] == {"source": SQ.FILTER_SCORE, "params": {"now": 1779278400000}}
    assert body["sort"][0] == {"_score": "desc"}
    assert SQ.distinct_who("b") == {"size": 0, "query": {"term": {"bank": "b"}},
                                    "aggs": {"who": {"terms": {"field": "who", "size": 10_000, "order": {"_key": "asc"}}}}}


def test_similar_is_one_knn_query_without_the_anchor():
    assert SQ.similar(FLT, [0.1, 0.2], "m1", 10) == {
        "size": 10, "_source": {"excludes": ["embedding", "tags_norm", "metadata_terms", "metadata_terms_plain", "content_stems", "context_stems"]},
        "query": {"knn": {"embedding": {"vector": [0.1, 0.2], "k": 10, "filter": {
            "bool": {"filter": [FLT], "must_not": [{"ids": {"values": ["m1"]}}]}}}}},
    }


# --- request translation -----------------------------------------------------------------------------------
@pytest.mark.parametrize(("given", "expected"), [(None, 10), (1, 1), (10, 10), (100, 100), (101, 100), (0, 1), (-5, 1)])
def test_limit_defaults_to_10_and_is_bounded(given, expected):
    assert M.bounded_limit(given, M.DEFAULT_LIMIT, M.MAX_LIMIT) == expected


@pytest.mark.parametrize(
    ("given", "expected"),
    [(None, []), ("", []), ("preference", ["preference", "Preference"]), ("Decision", ["Decision"]), ("fact", ["fact"])],
)
def test_type_filter(given, expected):
    assert M.type_filter(given) == expected


def test_filters_translate_signets_fields():
    from service.config import Settings

    body = M.SignetRecallBody.model_validate({"query": "q", "since": "2026-01-01T00:00:00Z", "until": ""})
    got = M.filters(Settings(), type_="preference", tags="editor, ui,editor", who=" claude-code ", project="", pinned=False,
                    importance_min=0.5, since=body.since, until=body.until)
    assert got == {"types": ["preference", "Preference"], "tags": ["editor", "ui"], "tag_mode": "all", "caller_tags_only": True, "who": "claude-code",
                   "project": None, "pinned": None, "importance_min": 0.5, "since": z("2026-01-01T00:00:00Z"), "until": None}
    with pytest.raises(ValueError, match="since"):
        M.SignetRecallBody.model_validate({"query": "q", "since": "soon"})
    with pytest.raises(BadRequest, match="who"):
        M.filters(Settings(), type_=None, tags=None, who="a\ud800", project=None, pinned=None, importance_min=None, since=None, until=None)


def test_body_accepts_snake_case_aliases():
    body = M.SignetRecallBody.model_validate({"query": "q", "include_recalled": True, "session_key": "s", "agent_id": "a",
                                        "aggregate_budget": "MEDIUM", "save_aggregate": False, "importanceMin": 0.3})
    assert (body.includeRecalled, body.sessionKey, body.agentId, body.aggregateBudget, body.saveAggregate, body.importance_min) == (
        True, "s", "a", "medium", False, 0.3)
    camel = M.SignetRecallBody.model_validate({"query": "q", "includeRecalled": True, "sessionKey": "s", "aggregateBudget": "small"})
    assert (camel.includeRecalled, camel.sessionKey, camel.aggregateBudget) == (True, "s", "small")


@pytest.mark.parametrize(
    ("agent", "session", "expected"),
    [("alice", "s", "alice"), (" bob ", "agent:x:1", "bob"), (None, "agent:x:rest", "x"), ("", "agent:y", "y"),
     (None, "agent::z", "default"), (None, "session-uuid", "default"), (None, "Agent:x:1", "default")],
)
def test_agent_of_a_session(agent, session, expected):
    assert agent_of(agent, session) == expected
