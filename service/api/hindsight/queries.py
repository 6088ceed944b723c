"""Pure DSL builders of Hindsight's listing routes (GET .../memories/list): input -> query and sort."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from service.filters import tag_groups as G
from service.filters.clauses import fact_type_clause

# time_field -> the stored field it reads (Hindsight's created_at / mentioned_at / occurred_* are all
# the memory's timestamp here; updated_at is its own).
TIME_FIELDS = {"created_at": "timestamp", "mentioned_at": "timestamp", "occurred_start": "timestamp", "occurred_end": "timestamp", "updated_at": "updated_at"}
# Hindsight's order: most recent first (mentioned_at, then created_at); the id makes pages stable.
NEWEST_FIRST = [{"timestamp": {"order": "desc", "missing": "_last"}}, {"id": "asc"}]


def search_clause(q: str) -> dict:
    """`q` over the text and the context: each word, case-insensitive, the last one as a prefix."""
    return {"bool": {"should": [
        {"match_phrase_prefix": {"content.exact": {"query": q}}},
        {"match_phrase_prefix": {"context": {"query": q}}},
    ], "minimum_should_match": 1}}


def list_query(
    bank: str, *, fact_type: str | None = None, q: str | None = None, document_id: str | None = None,
    tags: Sequence[str] = (), tags_match: str = "any", time_field: str | None = None,
    start: datetime | None = None, end: datetime | None = None, state: str | None = None,
    entity_id: str | None = None,
) -> tuple[dict, list[dict]]:
    """(query, sort) of one listing. A time window filters and orders by its field, [start, end)."""
    filters: list[dict] = [{"term": {"bank": bank}}]
    must_not: list[dict] = []
    if fact_type:
        clause = fact_type_clause([fact_type])
        if clause is not None:
            filters.append(clause)
    if q and q.strip():
        filters.append(search_clause(q.strip()))
    if document_id:
        filters.append({"term": {"document_id": document_id}})
    if tags or tags_match == "exact":
        clause = G.leaf_clause(G.Leaf(tuple(tags), tags_match))
        if clause is not None:
            filters.append(clause)
    if entity_id:
        filters.append({"term": {"entities": entity_id.removeprefix("entity:").lower()}})
    field = TIME_FIELDS[time_field or "created_at"]
    if start or end:
        rng: dict = {}
        if start:
            rng["gte"] = start.isoformat()
        if end:
            rng["lt"] = end.isoformat()
        filters.append({"range": {field: rng}})
    if state is not None:
        # archived, superseded, or past its t_invalid (a curation PATCH sets it): the engine's clock
        invalid = [{"term": {"archived": True}}, {"exists": {"field": "superseded_by"}}, {"range": {"t_invalid": {"lte": "now"}}}]
        if state == "invalidated":
            filters.append({"bool": {"should": invalid, "minimum_should_match": 1}})
        else:
            must_not += invalid
    query: dict = {"bool": {"filter": filters}}
    if must_not:
        query["bool"]["must_not"] = must_not
    sort = NEWEST_FIRST if field == "timestamp" else [{field: {"order": "desc", "missing": "_last"}}, {"id": "asc"}]
    return query, sort
