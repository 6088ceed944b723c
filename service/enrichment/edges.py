"""The system edges of one committed enrichment batch (SIMILAR_TO, PRECEDED_BY): which to write, and
writing them so that none outlives a memory deleted meanwhile.

The worker read the batch, its kNN neighbours and its sequence neighbours some time ago; any of them
may have been deleted since, and a delete sweeps the edges it can see only once. So the edges go in
as POST /associate's do (graph.links.take_back_orphans): the ends are checked before writing (an end
already gone gets no edge), and again after writing (realtime mgets, which see a delete the moment
it is acknowledged), and an edge whose end is gone by then is taken back. Under any interleaving
with a delete (memory deleted, then the edges index refreshed and swept) one side removes the edge:
if the check after the write still saw the memory, its delete came later, so the delete's refresh
makes the edge visible to its sweep; otherwise the check saw the delete and takes the edge back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from service.enrichment import plan
from service.storage.edges import EdgeStore, edge_id
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


def ends(edges: Sequence[dict]) -> list[str]:
    return list(dict.fromkeys(x for e in edges for x in (e["source_id"], e["target_id"])))


def between(edges: Sequence[dict], alive: set[str]) -> list[dict]:
    """The edges both of whose ends are in `alive`."""
    return [e for e in edges if e["source_id"] in alive and e["target_id"] in alive]


def write_edges(memories: MemoryStore, edges: EdgeStore, bank: str, todo: EdgePlan, now: str) -> int:
    """Replace the stale edges and write the new ones between memories still stored (see the module
    docstring); returns how many edges were taken back after the write. A failed edge raises."""
    if todo.stale is not None:
        edges.delete_matching(bank, todo.stale)
    written = between(todo.written, memories.existing(bank, ends(todo.written)))
    if not written:
        return 0
    errors = edges.upsert_many(bank, written, now)
    alive = memories.existing(bank, ends(written))  # before raising: the edges that did go in are checked too
    orphans = [edge_id(e["source_id"], e["type"], e["target_id"]) for e in written if not between([e], alive)]
    edges.delete_ids(orphans)
    failed = [e for e in errors if e]
    if failed:
        raise RuntimeError(f"{len(failed)} enrichment edges failed: {failed[0]}")
    return len(orphans)
