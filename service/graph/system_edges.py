"""System edges (enrichment's SIMILAR_TO / PRECEDED_BY, consolidation's DISCOVERED / SUMMARIZES),
written so that none outlives a memory deleted while it was planned or written.

The writer planned its edges from reads some time ago; any end may have been deleted since, and a
delete sweeps the edges it can see only once. So the edges go in as POST /associate's do
(links.take_back_orphans): the ends are checked before writing (an end already gone gets no edge)
and again after (realtime mgets, which see a delete the moment it is acknowledged), and an edge
whose end is gone by then is taken back. Under any interleaving with a delete (memory deleted,
then the edges index refreshed and swept: EdgeStore.delete_touching) one side removes the edge: if
the check after the write still saw the memory, its delete came later, so the delete's refresh
makes the edge visible to its sweep; otherwise the check saw the delete and takes the edge back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from service.storage.bulk import ItemError
from service.storage.edges import EdgeStore, edge_id
from service.storage.memories import MemoryStore


@dataclass
class Written:
    errors: list[ItemError]  # failed upserts (the edges that did go in were checked all the same)
    written: int  # edges upserted and kept
    skipped: int  # an end was gone before the write
    taken_back: int  # an end was gone right after it


def ends(edges: Sequence[dict]) -> list[str]:
    return list(dict.fromkeys(x for e in edges for x in (e["source_id"], e["target_id"])))


def between(edges: Sequence[dict], alive: set[str]) -> list[dict]:
    """The edges both of whose ends are in `alive`."""
    return [e for e in edges if e["source_id"] in alive and e["target_id"] in alive]


def link_stored(memories: MemoryStore, edges: EdgeStore, bank: str, planned: Sequence[dict], now: str) -> Written:
    """Upsert `planned` edges ({source_id, target_id, type, strength, properties}) between memories
    of `bank` still stored (see the module docstring)."""
    todo = between(planned, memories.existing(bank, ends(planned))) if planned else []
    if not todo:
        return Written([], 0, len(planned), 0)
    outcomes = edges.upsert_many(bank, todo, now)
    alive = memories.existing(bank, ends(todo))
    orphans = [edge_id(e["source_id"], e["type"], e["target_id"]) for e in todo if not between([e], alive)]
    edges.delete_ids(orphans)
    errors = [e for e in outcomes if e is not None]
    return Written(errors, len(todo) - len(errors) - len(orphans), len(planned) - len(todo), len(orphans))
