"""Hindsight's recall request -> the one internal RecallRequest (service/recall/request.py).

The pipeline is AutoMem's; this module only translates:
- `budget` is candidate depth and graph expansion (BUDGETS; the token cut `max_tokens` comes after);
- `tags` + `tags_match` become one tag-group leaf, AND-ed with `tag_groups`;
- `types` (all three when omitted, spec 002) is the fact-type filter;
- `min_scores.semantic` / `.keyword` floor their own arm, `.final` is the post-filter; a `reranker`
  floor is refused (no reranker runs here);
- `temporal_window` (else the first date the query names, service/clock/phrases.py `query_window`,
  read against `query_timestamp` in RECALL_DATE_TIMEZONE) feeds the temporal arm; `query_timestamp`
  is also the instant recency is scored against;
- the bank's profile switches off arms (enable_text_search, enable_temporal_retrieval,
  enable_graph_retrieval).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from service.api.hindsight import models as M
from service.banks.profiles import Bank
from service.errors import BadRequest
from service.filters import tag_groups as G
from service.filters.vocabulary import FACT_TYPES
from service.recall.request import RecallRequest
from service.clock.expressions import TimeWindow
from service.clock.instants import instant_param
from service.clock.phrases import query_window
from service.memory.limits import check_text


@dataclass(frozen=True)
class Budget:
    """What a Hindsight budget means here. `limit`: ranked results before the token cut (the vector
    arm fetches max(limit, min(4 x limit, 200)) candidates, twice that in a tag scope; the keyword arm
    at least 50); `relations` / `entities`: graph expansion after the ranked page."""

    limit: int
    relations: bool
    entities: bool


BUDGETS = {
    "low": Budget(limit=10, relations=False, entities=False),
    "mid": Budget(limit=30, relations=True, entities=False),
    "high": Budget(limit=100, relations=True, entities=True),
}


def leaf_of(g) -> G.Group:
    if isinstance(g, M.TagGroupLeaf):
        return G.Leaf(tuple(g.tags), g.match, g.resolve)
    if isinstance(g, M.TagGroupAnd):
        return G.And(tuple(leaf_of(c) for c in g.and_))
    if isinstance(g, M.TagGroupOr):
        return G.Or(tuple(leaf_of(c) for c in g.or_))
    return G.Not(leaf_of(g.not_))


def groups_of(body: M.HindsightRecallBody) -> tuple[G.Group, ...]:
    groups: list[G.Group] = []
    if body.tags or body.tags_match == "exact":
        groups.append(G.Leaf(tuple(body.tags or ()), body.tags_match))
    groups += [leaf_of(g) for g in body.tag_groups or ()]
    return tuple(groups)


def _check_strings(body: M.HindsightRecallBody) -> None:
    check_text(body.query, "query")
    for tag in body.tags or ():
        check_text(tag, "tags[]")
    for leaf in (lf for g in groups_of(body) for lf in G.leaves(g)):
        for tag in leaf.tags:
            check_text(tag, "tag_groups[].tags[]")


def query_time(body: M.HindsightRecallBody) -> datetime | None:
    """Hindsight parses query_timestamp in the route and answers a bad one with a 400 (not its 422)."""
    return instant_param("query_timestamp", body.query_timestamp, hint=" format. Expected ISO format (e.g., '2023-05-30T23:40:00')")


def to_request(body: M.HindsightRecallBody, settings, *, bank: Bank | None, bank_id: str, now: datetime) -> RecallRequest:
    _check_strings(body)
    floors = body.min_scores or M.MinScores()
    if floors.reranker is not None:
        raise BadRequest("min_scores.reranker needs a reranker, and none is configured: recall here ranks by its own final score; use min_scores.final")
    anchor = query_time(body)
    temporal = bank is None or bank.setting("enable_temporal_retrieval", True)
    window = None
    if body.temporal_window is not None:
        if body.temporal_window.end < body.temporal_window.start:
            raise BadRequest("temporal_window.end is before temporal_window.start")
        window = TimeWindow(body.temporal_window.start, body.temporal_window.end, None)
    elif body.query.strip():
        window = query_window(body.query, anchor or now, settings.date_zone)
    graph = bank is None or bank.setting("enable_graph_retrieval", True)
    budget = BUDGETS[body.budget]
    return RecallRequest.from_settings(
        settings, bank=bank_id, query=body.query.strip() or None, limit=budget.limit,
        expand_relations=budget.relations and graph, expand_entities=budget.entities and graph,
        tag_groups=groups_of(body), fact_types=tuple(body.types or FACT_TYPES),
        semantic_floor=floors.semantic, keyword_floor=floors.keyword, final_floor=floors.final,
        temporal_window=window if temporal else None, query_time=anchor,
        keyword_search=bank is None or bank.setting("enable_text_search", True),
        prefer_observations=bool(body.prefer_observations), detail=True,
    )
