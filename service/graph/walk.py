"""GET /memories/{id}/related: a breadth-first walk over the edges index, both directions.

One edges request per depth level (all frontier ids at once), then one search for the reached
memories sorted as AutoMem does (importance desc, timestamp desc; runtime_relations.py
get_related_memories). The walk itself (`walk_level`) is pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from service.storage.edges import EdgeStore
from service.storage.memories import MemoryStore
from service.filters.clauses import IMPORTANCE_SORT, ids_query

# Edges read per depth level: bounds the work a hub memory can cause (3 levels x 1,000 edges).
RELATED_SCAN_CAP = 1000
# spec 003: "max_depth (1..3), limit (<=200)"; AutoMem's default limit is RECALL_RELATION_LIMIT.
MIN_DEPTH, MAX_DEPTH = 1, 3
MAX_LIMIT = 200


@dataclass
class Reached:
    id: str
    depth: int
    path: list[str]
    relation: dict[str, Any]


@dataclass
class Walk:
    start: str
    reached: dict[str, Reached] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.paths: dict[str, list[str]] = {self.start: [self.start]}


def walk_level(walk: Walk, frontier: Sequence[str], edges: Sequence[dict], depth: int) -> list[str]:
    """Add the memories one edge away from `frontier` (edges newest first: the newest edge names the
    path); return the next frontier. Memories already reached keep their shorter path."""
    in_frontier = set(frontier)
    nxt: list[str] = []
    for e in edges:
        if e["source_id"] in in_frontier:
            via, other, direction = e["source_id"], e["target_id"], "outgoing"
        elif e["target_id"] in in_frontier:
            via, other, direction = e["target_id"], e["source_id"], "incoming"
        else:
            continue
        if other in walk.paths:
            continue
        walk.paths[other] = walk.paths[via] + [other]
        walk.reached[other] = Reached(
            id=other, depth=depth, path=walk.paths[other],
            relation={"type": e["type"], "strength": e.get("strength"), "source_id": e["source_id"], "target_id": e["target_id"], "direction": direction},
        )
        nxt.append(other)
    return nxt


def related_memories(
    memories: MemoryStore, edges: EdgeStore, bank: str, memory_id: str, types: Sequence[str], max_depth: int, limit: int
) -> list[tuple[Reached, dict]]:
    walk = Walk(memory_id)
    frontier = [memory_id]
    for depth in range(1, max_depth + 1):
        frontier = walk_level(walk, frontier, edges.touching(bank, frontier, types, size=RELATED_SCAN_CAP), depth)
        if not frontier:
            break
    if not walk.reached:
        return []
    page, _ = memories.page(ids_query(bank, list(walk.reached)), IMPORTANCE_SORT, size=limit, offset=0)
    return [(walk.reached[mid], source) for mid, source in page]
