"""The system edges of one committed enrichment batch (SIMILAR_TO, PRECEDED_BY): which to write
(pure), and writing them between memories still stored (service/graph/system_edges.py: none
outlives a memory deleted while the worker planned or wrote it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from service.enrichment import plan
from service.graph.system_edges import link_stored
from service.storage.edges import EdgeStore
from service.storage.memories import MemoryStore


@dataclass(frozen=True)
class EdgePlan:
    stale: dict | None  # the earlier runs' edges these replace (plan.stale_edges_query)
    written: list[dict]  # edges to upsert


def plan_edges(subjects: Sequence[plan.Subject], committed: Mapping[str, plan.Subject], similar: Mapping[str, list[dict]],
               links: Sequence[tuple[str, str]], repoint: Sequence[str]) -> EdgePlan:
    """The edges of the memories whose enrichment was committed (pure): their SIMILAR_TO edges, the
    PRECEDED_BY links between committed memories and their stored neighbours, and what they replace."""
    batch = {s.id for s in subjects}
    rerun = [s.id for s in committed.values() if s.enrichment.get("enriched_at")]
    valid = set(committed) | {m for pair in links for m in pair if m not in batch}
    keep_links = [(a, b) for a, b in links if a in valid and b in valid]
    repointed = [r for r in repoint if any(a == r for a, _ in keep_links)]
    written = [e for mid in committed for e in similar.get(mid, ())] + plan.preceded_edges(keep_links)
    return EdgePlan(plan.stale_edges_query(rerun, rerun + repointed), written)


def write_edges(memories: MemoryStore, edges: EdgeStore, bank: str, todo: EdgePlan, now: str) -> int:
    """Replace the stale edges and write the new ones; returns how many were taken back after the
    write (an end deleted meanwhile). A failed edge raises."""
    if todo.stale is not None:
        edges.delete_matching(bank, todo.stale)
    outcome = link_stored(memories, edges, bank, todo.written, now)
    if outcome.errors:
        raise RuntimeError(f"{len(outcome.errors)} enrichment edges failed: {outcome.errors[0]}")
    return outcome.taken_back
