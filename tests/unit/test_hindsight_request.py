"""Hindsight's recall body -> the one RecallRequest (service/api/hindsight/request.py): a table of
translations, the budget mapping, the refusals."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from service.api.hindsight import models as M
from service.api.hindsight.request import BUDGETS, to_request
from service.banks.profiles import Bank
from service.clock.phrases import query_window
from service.config import Settings
from service.errors import BadRequest
from service.filters import tag_groups as G

NOW = datetime(2024, 5, 30, 12, 0, tzinfo=timezone.utc)
SETTINGS = Settings(automem_api_token="t")


def build(bank: Bank | None = None, **body):
    return to_request(M.HindsightRecallBody(query="what did we decide", **body), SETTINGS, bank=bank, bank_id="b1", now=NOW)


def test_defaults():
    req = build()
    assert (req.bank, req.query, req.limit, req.expand_relations, req.expand_entities) == ("b1", "what did we decide", 30, True, False)
    assert req.fact_types == ("world", "experience", "observation")  # spec 002: all types when omitted
    assert (req.tag_groups, req.semantic_floor, req.keyword_floor, req.final_floor) == ((), None, None, None)
    assert (req.temporal_window, req.query_time, req.keyword_search, req.detail, req.prefer_observations) == (None, None, True, True, False)
    # AutoMem's defaults stay (the same ranking as GET /recall)
    assert (req.min_score, req.adaptive_floor, req.scoring_profile, req.sort) == (0.0, True, "engram", "score")


@pytest.mark.parametrize(("budget", "limit", "relations", "entities"), [("low", 10, False, False), ("mid", 30, True, False), ("high", 100, True, True)])
def test_budget_is_depth_and_expansion(budget, limit, relations, entities):
    req = build(budget=budget)
    assert (req.limit, req.expand_relations, req.expand_entities) == (limit, relations, entities)
    assert BUDGETS[budget].limit == limit


@pytest.mark.parametrize(
    ("body", "groups"),
    [
        ({}, ()),
        ({"tags": []}, ()),
        ({"tags": ["a", "b"]}, (G.Leaf(("a", "b"), "any"),)),
        ({"tags": ["a"], "tags_match": "all_strict"}, (G.Leaf(("a",), "all_strict"),)),
        ({"tags_match": "exact"}, (G.Leaf((), "exact"),)),  # exact without tags: the untagged
        ({"tags": ["a"], "tag_groups": [{"not": {"tags": ["x"], "match": "any", "resolve": "fuzzy"}}]},
         (G.Leaf(("a",), "any"), G.Not(G.Leaf(("x",), "any", "fuzzy")))),
        ({"tag_groups": [{"and": [{"tags": ["a"]}, {"or": [{"tags": ["b"]}, {"tags": ["c"], "match": "exact"}]}]}]},
         (G.And((G.Leaf(("a",)), G.Or((G.Leaf(("b",)), G.Leaf(("c",), "exact"))))),)),
    ],
)
def test_tags_become_tag_groups(body, groups):
    assert build(**body).tag_groups == groups


def test_types_floors_and_observations():
    req = build(types=["world"], min_scores={"semantic": 0.3, "keyword": 1.5, "final": 0.2}, prefer_observations=True)
    assert req.fact_types == ("world",)
    assert (req.semantic_floor, req.keyword_floor, req.final_floor, req.prefer_observations) == (0.3, 1.5, 0.2, True)


def test_a_reranker_floor_is_refused():
    with pytest.raises(BadRequest, match="min_scores.reranker needs a reranker"):
        build(min_scores={"reranker": 0.5})


def test_query_timestamp_anchors_recency_and_relative_dates():
    req = build(query_timestamp="2023-05-30T23:40:00")
    assert req.query_time == datetime(2023, 5, 30, 23, 40, tzinfo=timezone.utc)
    req = to_request(M.HindsightRecallBody(query="what happened last week", query_timestamp="2023-05-30T23:40:00"), SETTINGS, bank=None, bank_id="b", now=NOW)
    assert (req.temporal_window.start, req.temporal_window.end) == (datetime(2023, 5, 22, tzinfo=timezone.utc), datetime(2023, 5, 29, tzinfo=timezone.utc))
    with pytest.raises(BadRequest, match="Invalid query_timestamp format"):
        build(query_timestamp="yesterday-ish")


def test_temporal_window_replaces_the_query_dates():
    req = to_request(M.HindsightRecallBody(query="what happened last week", temporal_window={"start": "2020-01-01T00:00:00Z", "end": "2020-02-01T00:00:00Z"}),
                     SETTINGS, bank=None, bank_id="b", now=NOW)
    assert (req.temporal_window.start, req.temporal_window.end) == (datetime(2020, 1, 1, tzinfo=timezone.utc), datetime(2020, 2, 1, tzinfo=timezone.utc))
    with pytest.raises(BadRequest, match="temporal_window.end is before"):
        build(temporal_window={"start": "2020-02-01T00:00:00Z", "end": "2020-01-01T00:00:00Z"})


def test_the_banks_switches():
    bank = Bank("b1", {"enable_text_search": False, "enable_temporal_retrieval": False, "enable_graph_retrieval": False})
    req = to_request(M.HindsightRecallBody(query="yesterday", budget="high"), SETTINGS, bank=bank, bank_id="b1", now=NOW)
    assert (req.keyword_search, req.temporal_window, req.expand_relations, req.expand_entities) == (False, None, False, False)


def test_lone_surrogates_are_refused():
    # pydantic refuses them in the body already (FastAPI's 422); the request builder checks again
    with pytest.raises(ValueError, match="unable to parse raw data as a unicode string"):
        M.HindsightRecallBody(query="a\ud800")
    body = M.HindsightRecallBody.model_construct(query="a\ud800", tags=None, tags_match="any", tag_groups=None, types=None, min_scores=None,
                                        temporal_window=None, query_timestamp=None, budget="mid", prefer_observations=None)
    with pytest.raises(BadRequest, match="query is not valid Unicode"):
        to_request(body, SETTINGS, bank=None, bank_id="b", now=NOW)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What did Caroline do yesterday?", (datetime(2024, 5, 29, tzinfo=timezone.utc), datetime(2024, 5, 30, tzinfo=timezone.utc))),
        ("deploys in the last 3 days please", (datetime(2024, 5, 27, 12, tzinfo=timezone.utc), NOW)),  # rolling
        ("When did Caroline go to the LGBTQ support group?", None),
        ("", None),
        # issue 22: dates found by the detector every surface shares (these found no window before)
        ("what did the team review on 2026-05-13", (datetime(2026, 5, 13, tzinfo=timezone.utc), datetime(2026, 5, 14, tzinfo=timezone.utc))),
        ("what did the team review on May 13 2026", (datetime(2026, 5, 13, tzinfo=timezone.utc), datetime(2026, 5, 14, tzinfo=timezone.utc))),
        ("what happened in July 2023", (datetime(2023, 7, 1, tzinfo=timezone.utc), datetime(2023, 8, 1, tzinfo=timezone.utc))),
        ("plans before 2025-02-01", (None, datetime(2025, 2, 1, tzinfo=timezone.utc))),
        ("what did we do in June", None),  # no year: no window (the date component still reads it)
    ],
)
def test_window_in_query(query, expected):
    got = query_window(query, NOW, timezone.utc)
    assert (None if got is None else (got.start, got.end)) == expected


def test_tag_group_nesting_is_bounded():
    deep: dict = {"tags": ["a"]}
    for _ in range(M.MAX_TAG_GROUP_DEPTH):
        deep = {"not": deep}
    with pytest.raises(ValueError, match="tag_groups nest 9 levels deep; at most 8"):
        M.HindsightRecallBody(query="q", tag_groups=[deep])
    with pytest.raises(ValueError, match="at most 100"):
        M.HindsightRecallBody(query="q", tag_groups=[{"or": [{"tags": ["a"]}] * 60}, {"or": [{"tags": ["b"]}] * 60}])
