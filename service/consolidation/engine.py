"""Consolidation's reads and writes, through the memory and edge stores.

Everything is paged and bulk: a full scan in id order (search_after), relationship counts for a
page of memories in one aggregation, kNN neighbours for a page in one `_msearch`, updates in one
bulk request per page. Updates go through `MemoryStore.bulk`, which carries each memory's vector
back in (vectors live outside `_source`, so a partial update without it would drop the vector).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from service.consolidation import queries as Q
from service.consolidation.clusters import META_ID_PREFIX, Summary
from service.graph.system_edges import link_stored
from service.memory.models import MemoryCreate
from service.storage.edges import EdgeStore
from service.storage.memories import MemoryStore
from service.clock.instants import iso
from service.writes.writer import MemoryWriter

log = logging.getLogger("engram.consolidation")

SCAN_PAGE = 500
KNN_PER_MSEARCH = 50
# Nearest neighbours asked of the engine per memory: enough to connect near-duplicate groups and
# to find creative partners in the band below them, few enough to keep a pass cheap.
NEIGHBOURS = 10
EDGE_READ_CAP = 10_000  # index.max_result_window


class ConsolidationIO:
    """Consolidation's reads and writes; each names the bank it acts on (`scan` takes a query that does)."""

    def __init__(self, memories: MemoryStore, edges: EdgeStore, writer: MemoryWriter, excluded_types: Sequence[str]):
        self.memories = memories
        self.edges = edges
        self.writer = writer
        self.excluded_types = tuple(excluded_types)

    # --- reads ------------------------------------------------------------------------------
    def scan(self, query: dict, page: int = SCAN_PAGE) -> Iterator[list[tuple[str, dict]]]:
        after = None
        while True:
            hits = self.memories.search(Q.scan_body(query, page, after))["hits"]["hits"]
            if hits:
                yield [(h["_id"], h["_source"]) for h in hits]
            if len(hits) < page:
                return
            after = hits[-1]["sort"]

    def relationship_counts(self, bank: str, ids: Sequence[str]) -> dict[str, int]:
        if not ids:
            return {}
        resp = self.edges.search(Q.relationship_counts_body(bank, ids), "count relationships")
        return Q.parse_relationship_counts(resp, ids)

    def vectors(self, bank: str, ids: Sequence[str]) -> dict[str, list[float]]:
        return {mid: v for mid, (v, _, _) in self.memories.vectors(bank, ids).items() if v is not None}

    def neighbours(self, bank: str, ids: Sequence[str], flt: dict, k: int = NEIGHBOURS) -> dict[str, list[tuple[str, float]]]:
        """For each id, its k nearest memories under `flt` (which filters on the bank) as (id, cosine), nearest first."""
        vectors = self.vectors(bank, ids)
        out: dict[str, list[tuple[str, float]]] = {mid: [] for mid in ids}
        todo = [mid for mid in ids if mid in vectors]
        for start in range(0, len(todo), KNN_PER_MSEARCH):
            chunk = todo[start : start + KNN_PER_MSEARCH]
            responses = self.memories.msearch([Q.neighbours_body(vectors[mid], k + 1, flt) for mid in chunk])
            for mid, resp in zip(chunk, responses):
                # Lucene's cosinesimil score is (1 + cos) / 2 (ENGINE.md).
                out[mid] = [(h["_id"], 2.0 * float(h["_score"]) - 1.0) for h in resp["hits"]["hits"] if h["_id"] != mid][:k]
        return out

    def edges_among(self, bank: str, ids: Sequence[str]) -> set[frozenset[str]]:
        """Unordered pairs of `ids` already joined by an edge of any type."""
        if not ids:
            return set()
        hits = self.edges.search(Q.edges_among_body(bank, ids, EDGE_READ_CAP))["hits"]["hits"]
        return {frozenset((h["_source"]["source_id"], h["_source"]["target_id"])) for h in hits}

    def edges_touching(self, bank: str, ids: Sequence[str]) -> list[tuple[str, str]]:
        """(source, target) of every edge with an end in `ids` (at most EDGE_READ_CAP)."""
        return [(e["source_id"], e["target_id"]) for e in self.edges.touching(bank, ids, None, size=EDGE_READ_CAP)] if ids else []

    def meta_ids(self, bank: str) -> list[str]:
        """Every MetaPattern the cluster pass wrote (ids with its prefix), in id order."""
        query = {"bool": {"filter": [{"term": {"bank": bank}}, {"term": {"type": "MetaPattern"}}, {"prefix": {"id": META_ID_PREFIX}}]}}
        return self.memories.ids_matching(query)

    def contents(self, bank: str, ids: Sequence[str]) -> dict[str, dict]:
        out: dict[str, dict] = {}
        ids = list(ids)
        for start in range(0, len(ids), SCAN_PAGE):
            out.update(self.memories.get_many(bank, ids[start : start + SCAN_PAGE]))
        return out

    # --- writes -----------------------------------------------------------------------------
    def update_memories(self, bank: str, changes: Mapping[str, dict[str, Any]]) -> list[str]:
        """Partial updates, one bulk request; returns the ids that failed (logged)."""
        if not changes:
            return []
        actions = [{"_op_type": "update", "_index": self.memories.alias, "_id": mid, "doc": doc} for mid, doc in changes.items()]
        errors = self.memories.bulk(bank, actions, "consolidation update", refresh="false")
        failed = [a["_id"] for a, err in zip(actions, errors) if err]
        broken = [err for err in errors if err and not err.missing]  # a memory deleted since the run read it is no failure
        if broken:
            log.warning("consolidation: %d of %d updates failed (first: %s)", len(broken), len(actions), broken[0])
        return failed

    def refresh(self) -> None:
        self.memories.refresh_now()

    def link(self, bank: str, edges: Sequence[dict[str, Any]], now: datetime) -> int:
        """Upsert system edges between stored memories; returns how many were written."""
        if not edges:
            return 0
        # Only between memories still stored: one may have been deleted since the run planned the edge.
        outcome = link_stored(self.memories, self.edges, bank, edges, iso(now))
        if outcome.errors:
            log.warning("consolidation: %d of %d edges failed (first: %s)", len(outcome.errors), len(edges), outcome.errors[0])
        return outcome.written

    def summary_docs(self, bank: str, summaries: Sequence[Summary], now: datetime) -> dict[str, dict]:
        """The MetaPattern memories of `summaries` (idempotent ids), built by the writer's document builder."""
        docs: dict[str, dict] = {}
        for s in summaries:
            req = MemoryCreate(
                id=s.meta_id, content=s.content, type="MetaPattern", confidence=0.8, importance=s.importance,
                relevance_score=0.9, tags=list(s.shared_tags), embedding=list(s.centroid),
                metadata={"consolidation": {
                    "kind": "cluster_summary", "cluster_size": len(s.member_ids), "member_ids": list(s.member_ids),
                    "central_id": s.central_id, "dominant_type": s.dominant_type,
                    "time_span_days": s.time_span_days, "keywords": list(s.keywords),
                }},
            )
            p = self.writer.prepare(bank, req, now)
            # A summary is no turn of a thread (its shared tags may name a session): it neither gives
            # nor takes thread context.
            p.doc.update(thread_key=None, thread_at=None)
            docs[p.memory_id] = p.doc
        return docs

    def put_docs(self, docs: Sequence[tuple[str, dict]]) -> int:
        """Store built memories in one bulk request; returns how many were written."""
        errors = self.memories.bulk_put(docs, refresh="false")
        failed = [e for e in errors if e]
        if failed:
            log.warning("consolidation: %d of %d summaries failed (first: %s)", len(failed), len(docs), failed[0])
        return len(docs) - len(failed)

    def delete_memories(self, bank: str, ids: Sequence[str]) -> int:
        """Delete memories with their edges, thread places and the supersession state they caused (as DELETE does)."""
        if not ids:
            return 0
        return self.writer.delete_many(bank, list(ids))[0]
