"""Write edges from records (imports and restores): both ends checked, times kept, supersessions recorded once.

Unlike `POST /associate`, a record may carry the edge's own `created_at` / `updated_at` (an export
or a backup does): they are written as given, so a store moved elsewhere keeps its history. A
record without them keeps the times of the stored edge it rewrites, or gets now: re-running an
import never re-dates anything. A superseding edge (INVALIDATED_BY, EVOLVED_INTO) is recorded on
the superseded memory unless that memory already holds the entry (an export line carries its
supersessions exactly; recording them again would reorder them).

Per batch: one mget for the ends the caller has not just written, one for the stored edges' times, one bulk of edges, and for
superseding edges one mget of the superseded memories and one bulk of supersession scripts.
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from dataclasses import dataclass
from datetime import datetime

from opensearchpy import OpenSearch

from service.admin.records import EdgeRecord
from service.graph.supersession import state_time
from service.storage import transfer
from service.storage.memories import MemoryStore
from service.clock.instants import iso, parse_iso_datetime


@dataclass
class EdgeOutcome:
    error: str | None = None
    missing: str | None = None  # an end that does not exist (yet): the caller may retry later


class EdgeWriter:
    def __init__(self, client: OpenSearch, memories: MemoryStore, edges_alias: str, *, bank: str, refresh: str = "false"):
        self.client = client
        self.memories = memories
        self.bank = bank  # one import job's bank
        self.alias = edges_alias
        self.refresh = refresh

    def write(self, records: Sequence[EdgeRecord], now: datetime, *, known: Set[str] = frozenset()) -> list[EdgeOutcome]:
        """`known`: memories the caller has just written itself. They are not looked up: a realtime
        get of a memory not refreshed yet makes the engine refresh, once per request, mid-load."""
        outcomes = [EdgeOutcome() for _ in records]
        found = set(known) | self.memories.existing(self.bank, [x for r in records for x in (r.source_id, r.target_id) if x not in known])
        todo: list[int] = []
        for i, r in enumerate(records):
            missing = next((x for x in (r.source_id, r.target_id) if x not in found), None)
            if missing:
                outcomes[i] = EdgeOutcome(f"Memory {missing} not found", missing)
            else:
                todo.append(i)
        if not todo:
            return outcomes
        stored = self._stored_times([records[i].edge_id for i in todo if not (records[i].created_at and records[i].updated_at)])
        when = iso(now)
        docs = []
        for i in todo:
            r = records[i]
            before = stored.get(r.edge_id, {})
            created = r.created_at or before.get("created_at") or r.updated_at or when
            docs.append((r.edge_id, {
                "bank": self.bank, "source_id": r.source_id, "target_id": r.target_id, "type": r.type,
                "strength": r.strength, "created_at": created, "updated_at": r.updated_at or before.get("updated_at") or created,
                "properties": r.properties,
            }))
        for i, err in zip(todo, transfer.write(self.client, self.alias, docs, refresh=self.refresh)):
            if err:
                outcomes[i] = EdgeOutcome(f"edge write failed: {err}")
        self._record_supersessions([(i, records[i], docs[n][1]["created_at"]) for n, i in enumerate(todo) if records[i].supersedes and not outcomes[i].error], outcomes)
        return outcomes

    def _stored_times(self, edge_ids: list[str]) -> dict[str, dict]:
        found = transfer.get_sources(self.client, self.alias, edge_ids, includes=("created_at", "updated_at", "bank"))
        return {i: source for i, source in found.items() if source.get("bank") == self.bank}

    def _record_supersessions(self, items: list[tuple[int, EdgeRecord, str]], outcomes: list[EdgeOutcome]) -> None:
        if not items:
            return
        holders = self.memories.get_many(self.bank, [r.source_id for _, r, _ in items])
        actions, owners = [], []
        for i, r, created in items:
            held = (holders.get(r.source_id) or {}).get("supersessions") or []
            if any(e.get("by") == r.target_id and e.get("type") == r.type for e in held):
                continue
            at = state_time(parse_iso_datetime(r.properties.get("timestamp") or created))
            entry = {"by": r.target_id, "type": r.type, "at": at, "strength": r.strength}
            actions.append(self.memories.supersession_action(r.source_id, entry, keep_at=True))
            owners.append(i)
        for i, err in zip(owners, self.memories.bulk(self.bank, actions, "record supersession", refresh=self.refresh) if actions else []):
            if err:
                outcomes[i] = EdgeOutcome(f"edge stored but the supersession state was not: {err}")
