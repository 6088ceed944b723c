"""POST /associate: validate, check the memories exist, write the edges, record supersessions.

Whatever the batch size this is at most five engine requests: one mget for existence, one bulk on
the edges index, for the INVALIDATED_BY / EVOLVED_INTO edges (the supersession state recall
filters on) a read of the superseded memories' vectors and one bulk on the memories index, and one
more mget that checks no end was deleted meanwhile (`_undo_orphans`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from service.graph.registry import Association, AssociationError, validate_association
from service.graph.supersession import supersession_entry
from service.storage.edges import EdgeStore
from service.storage.memories import MemoryStore
from service.memory.models import valid_id
from service.clock.instants import iso


@dataclass
class ItemOutcome:
    index: int
    item: Any
    association: Association | None = None
    error: str | None = None
    status: int = 201  # 400 invalid, 404 missing memory, 503 write failed

    def failure(self) -> dict[str, Any]:
        out: dict[str, Any] = {"index": self.index}
        if isinstance(self.item, dict):
            for key in ("memory1_id", "memory2_id", "type"):
                if isinstance(self.item.get(key), str):
                    out[key] = self.item[key]
        out["reason"] = self.error
        return out


def success(a: Association) -> dict[str, Any]:
    """What AutoMem echoes for one created association (memory.py associate())."""
    return {
        "memory1_id": a.source_id, "memory2_id": a.target_id, "relation_type": a.type, "strength": a.strength,
        **a.properties,
    }


def take_back_orphans(memories: MemoryStore, edges: EdgeStore, bank: str, written: list[Association]) -> dict[str, str]:
    """A memory deleted while its edge was being written: check both ends again (a realtime mget) and
    take back the edges (and supersessions) whose ends are gone; returns {edge id: missing memory}.
    Together with the refresh before DELETE's edge sweep (EdgeStore.delete_touching) no edge outlives
    its memory: either this check sees the deletion, or the deletion's sweep sees the edge."""
    if not written:
        return {}
    alive = memories.existing(bank, [x for a in written for x in (a.source_id, a.target_id)])
    gone = {a.edge_id: next(x for x in (a.source_id, a.target_id) if x not in alive)
            for a in written if a.source_id not in alive or a.target_id not in alive}
    if gone:
        edges.delete_ids(list(gone))
        superseders_gone = [a.target_id for a in written if a.edge_id in gone and a.supersedes and a.target_id not in alive]
        if superseders_gone:
            memories.clear_supersessions(bank, superseders_gone)
    return gone


class AssociationService:
    def __init__(self, memories: MemoryStore, edges: EdgeStore):
        self.memories = memories
        self.edges = edges

    def associate(self, bank: str, items: list[Any], now: datetime) -> list[ItemOutcome]:
        """Edges between memories of `bank`: an end in another bank is answered as missing (404)."""
        outcomes = [ItemOutcome(i, item) for i, item in enumerate(items)]
        for o in outcomes:
            try:
                o.association = validate_association(o.item, id_ok=valid_id)
            except AssociationError as exc:
                o.error, o.status = str(exc), 400
        valid = [o for o in outcomes if o.association]
        found = self.memories.existing(bank, [x for o in valid for x in (o.association.source_id, o.association.target_id)])
        for o in valid:
            missing = [x for x in (o.association.source_id, o.association.target_id) if x not in found]
            if missing:
                o.error, o.status = f"Memory {missing[0]} not found", 404
        todo = [o for o in valid if o.error is None]
        errors = self.edges.upsert_many(
            bank, [{"source_id": o.association.source_id, "target_id": o.association.target_id, "type": o.association.type,
              "strength": o.association.strength, "properties": o.association.properties} for o in todo],
            iso(now),
        )
        for o, err in zip(todo, errors):
            if err:
                o.error, o.status = f"edge write failed: {err}", 503
        written = [o for o in todo if o.error is None]
        self.record_supersessions(bank, [o for o in written if o.association.supersedes], now)
        self._undo_orphans(bank, written)
        return outcomes

    def _undo_orphans(self, bank: str, written: list[ItemOutcome]) -> None:
        gone = take_back_orphans(self.memories, self.edges, bank, [o.association for o in written])
        for o in written:
            if o.association.edge_id in gone:
                o.error, o.status = f"Memory {gone[o.association.edge_id]} not found (deleted while the association was written)", 404

    def record_supersessions(self, bank: str, outcomes: list[ItemOutcome], now: datetime) -> None:
        actions = []
        for o in outcomes:
            entry, keep_at = supersession_entry(o.association, now)
            actions.append(self.memories.supersession_action(o.association.source_id, entry, keep_at=keep_at))
        for o, err in zip(outcomes, self.memories.bulk(bank, actions, "record supersession")):
            if err is not None and not err.missing:  # missing: deleted meanwhile, see _undo_orphans
                o.error, o.status = f"edge stored but the supersession state was not: {err}", 503
