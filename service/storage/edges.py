"""EdgeStore: every client call on the edges index. Edge ids are `source|TYPE|target` (idempotent).

The query builders are pure functions (STYLE.md practice 4); the store sends them and parses the
answers. Reading edges for many memories is always ONE request, whatever the number of memories:
a `terms` query on source_id / target_id with all ids, and a `filters` aggregation with one
bucket per id whose `top_hits` keeps that id's newest edges — so the per-memory cap is exact and
a hub memory with thousands of edges cannot crowd the others out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from opensearchpy import OpenSearch

from service.storage.bulk import ItemError, deleted_count, run_bulk
from service.storage.client import engine_errors


def edge_id(source_id: str, edge_type: str, target_id: str) -> str:
    return f"{source_id}|{edge_type}|{target_id}"


# Newest first (AutoMem runtime_relations.py: ORDER BY coalesce(r.updated_at, ...) DESC); the
# keyword tail makes the order total so equal timestamps never shuffle between calls.
EDGE_SORT: list[dict] = [
    {"updated_at": {"order": "desc", "missing": "_last"}},
    {"created_at": {"order": "desc", "missing": "_last"}},
    {"source_id": "asc"},
    {"type": "asc"},
    {"target_id": "asc"},
]
# A `terms` query takes at most 65,536 values (index.max_terms_count); stay well below it.
TERMS_CHUNK = 10_000


def touching_clause(ids: Sequence[str]) -> dict:
    """Edges with either end in `ids` (both directions)."""
    return {"bool": {"should": [{"terms": {"source_id": list(ids)}}, {"terms": {"target_id": list(ids)}}], "minimum_should_match": 1}}


def edge_kind(types: Sequence[str] | None, min_strength: float = 0.0) -> list[dict]:
    """Filters for edges of `types` (None: any) at least `min_strength` strong."""
    filters: list[dict] = []
    if types is not None:
        filters.append({"terms": {"type": list(types)}})
    if min_strength > 0:
        filters.append({"range": {"strength": {"gte": min_strength}}})
    return filters


def edge_filter(bank: str, ids: Sequence[str], types: Sequence[str] | None, min_strength: float = 0.0) -> dict:
    return {"bool": {"filter": [{"term": {"bank": bank}}, touching_clause(ids), *edge_kind(types, min_strength)]}}


def per_memory_agg(ids: Sequence[str], per_id: int) -> dict:
    """One bucket per id whose top_hits keeps its `per_id` newest edges, either direction."""
    buckets = {mid: {"bool": {"should": [{"term": {"source_id": mid}}, {"term": {"target_id": mid}}], "minimum_should_match": 1}} for mid in ids}
    return {
        "filters": {"filters": buckets},
        "aggs": {"newest": {"top_hits": {"size": per_id, "sort": EDGE_SORT, "_source": {"excludes": ["bank"]}}}},
    }


def per_memory_edges_query(
    bank: str, ids: Sequence[str], types: Sequence[str] | None, *, per_id: int, min_strength: float = 0.0,
    of_kind: tuple[Sequence[str] | None, float] | None = None,
) -> dict:
    """One request: for every id, its `per_id` newest edges (either direction) of the given types. With
    `of_kind` (types, min_strength), also its `per_id` newest of that kind among them (aggregation
    `of_kind`): one search where two cost the engine ~30% more CPU (10 memories, 125k edges: 2.8-3.0
    against 3.7-4.2 ms)."""
    aggs: dict[str, Any] = {"per_memory": per_memory_agg(ids, per_id)}
    if of_kind is not None:
        aggs["of_kind"] = {"filter": {"bool": {"filter": edge_kind(*of_kind)}}, "aggs": {"per_memory": per_memory_agg(ids, per_id)}}
    return {"size": 0, "query": edge_filter(bank, ids, types, min_strength), "aggs": aggs}


def edges_query(bank: str, ids: Sequence[str], types: Sequence[str] | None, *, size: int) -> dict:
    """Edges touching any of `ids`, newest first, at most `size` (graph walks: GET /memories/{id}/related)."""
    return {"size": size, "query": edge_filter(bank, ids, types), "sort": EDGE_SORT, "_source": {"excludes": ["bank"]}}


def _edge(hit: dict) -> dict:
    return {"id": hit["_id"], **hit["_source"]}


def parse_per_memory(resp: dict, ids: Sequence[str], within: str | None = None) -> dict[str, list[dict]]:
    """{id: its edges} for every id (none: []) of a per-memory read; `within` names its `of_kind`."""
    aggs = resp.get("aggregations", {})
    if within is not None:
        aggs = aggs.get(within, {})
    buckets = aggs.get("per_memory", {}).get("buckets", {})
    out: dict[str, list[dict]] = {}
    for mid in ids:
        hits = buckets.get(mid, {}).get("newest", {}).get("hits", {}).get("hits", [])
        out[mid] = [_edge(h) for h in hits]
    return out


def _chunks(items: Sequence[str], size: int) -> Iterable[list[str]]:
    for i in range(0, len(items), size):
        yield list(items[i : i + size])


class EdgeStore:
    """One store for every bank: each method takes the bank it acts on."""

    def __init__(self, client: OpenSearch, alias: str, *, refresh: str = "wait_for"):
        self.client = client
        self.alias = alias
        self.refresh = refresh

    def count(self, bank: str) -> int:
        with engine_errors("count edges"):
            return int(self.client.count(index=self.alias, body={"query": {"term": {"bank": bank}}})["count"])

    def search(self, body: dict, what: str = "read edges") -> dict:
        """A search whose body the caller built (consolidation's aggregations); it filters on the bank itself."""
        with engine_errors(what):
            return self.client.search(index=self.alias, body=body)

    # --- writes ---------------------------------------------------------------------------------
    def upsert_many(self, bank: str, edges: Sequence[dict[str, Any]], now: str) -> list[ItemError | None]:
        """Create or update many edges in one bulk request; one error message (or None) per edge, in order.

        Each edge is `{source_id, target_id, type, strength, properties}`. Re-posting an edge keeps its
        created_at, refreshes updated_at and strength, and merges its properties (AutoMem's MERGE ... SET).
        """
        actions = []
        for e in edges:
            doc = {
                "bank": bank, "source_id": e["source_id"], "target_id": e["target_id"], "type": e["type"],
                "strength": e["strength"], "updated_at": now, "properties": e.get("properties") or {},
            }
            actions.append({
                "_op_type": "update", "_index": self.alias, "_id": edge_id(e["source_id"], e["type"], e["target_id"]),
                "doc": doc, "upsert": {**doc, "created_at": now}, "retry_on_conflict": 3,
            })
        return run_bulk(self.client, actions, what="store edges", refresh=self.refresh)

    def delete_touching(self, bank: str, memory_ids: Sequence[str]) -> int:
        """Delete every edge with either end in memory_ids (one delete_by_query per 10,000 ids).

        The index is refreshed first: delete_by_query only sees refreshed documents, and an edge
        written just before its memory was deleted must not survive it (POST /associate verifies both
        ends after writing, so every edge written before the memory's deletion is seen here)."""
        with engine_errors("refresh edges"):
            self.client.indices.refresh(index=self.alias)
        deleted = 0
        for chunk in _chunks(list(dict.fromkeys(memory_ids)), TERMS_CHUNK):
            query = {"bool": {"filter": [{"term": {"bank": bank}}, touching_clause(chunk)]}}
            with engine_errors("delete edges", write=True):
                resp = self.client.delete_by_query(index=self.alias, body={"query": query}, refresh=True, conflicts="proceed")
            deleted += int(resp.get("deleted", 0))
        return deleted

    def delete_ids(self, edge_ids: Sequence[str]) -> None:
        actions = [{"_op_type": "delete", "_index": self.alias, "_id": eid} for eid in dict.fromkeys(edge_ids)]
        if actions:
            deleted_count(self.client, actions, what="delete edges", refresh=self.refresh)
    def delete_matching(self, bank: str, query: dict) -> int:
        """Delete the edges of the bank matching `query` (enrichment replacing its own edges)."""
        body = {"query": {"bool": {"filter": [{"term": {"bank": bank}}, query]}}}
        with engine_errors("delete edges"):
            resp = self.client.delete_by_query(index=self.alias, body=body, refresh=True, conflicts="proceed")
        return int(resp.get("deleted", 0))

    # --- reads ----------------------------------------------------------------------------------
    def newest_per_memory(
        self, bank: str, ids: Sequence[str], types: Sequence[str] | None, *, per_id: int, min_strength: float = 0.0
    ) -> dict[str, list[dict]]:
        """For each id, its `per_id` newest edges in either direction — one request for all ids."""
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        with engine_errors("read edges"):
            resp = self.client.search(index=self.alias, body=per_memory_edges_query(bank, ids, types, per_id=per_id, min_strength=min_strength))
        return parse_per_memory(resp, ids)

    def newest_per_memory_search(self, bank: str, ids: Sequence[str], *, per_id: int, of_kind: tuple[Sequence[str] | None, float]) -> tuple[str, dict, str]:
        """Each id's `per_id` newest edges of any type, and of a kind ((types, min_strength)), as one
        search (index, body, what) for an _msearch of any indexes (a recall's page read carries it);
        `parse_newest_per_memory` reads its answer."""
        return self.alias, per_memory_edges_query(bank, list(dict.fromkeys(ids)), None, per_id=per_id, of_kind=of_kind), "read edges"

    @staticmethod
    def parse_newest_per_memory(resp: dict, ids: Sequence[str]) -> tuple[dict[str, list[dict]], dict[str, list[dict]]]:
        """({id: its newest edges}, {id: its newest of the kind}) for every id of `ids`."""
        return parse_per_memory(resp, ids), parse_per_memory(resp, ids, within="of_kind")

    def touching(self, bank: str, ids: Sequence[str], types: Sequence[str] | None, *, size: int) -> list[dict]:
        """Edges touching any of `ids`, newest first, at most `size` — one request."""
        ids = list(dict.fromkeys(ids))
        if not ids:
            return []
        with engine_errors("read edges"):
            resp = self.client.search(index=self.alias, body=edges_query(bank, ids, types, size=size))
        return [_edge(h) for h in resp["hits"]["hits"]]
