"""ThreadLinker: the engine side of thread context (the plan is service/threads/plan.py).

Cost per write, in the usual case (a thread's memories arrive in order): one `_msearch` of two
size-1 queries per thread in the request (the stored memory before the batch's first, and whether
any stored memory follows it), plus one `terms` query when the client chose the ids (a memory
rewritten in place may have successors whose context came from it). Only a memory written out of
order costs more: its neighbours are looked up one by one, and the stored memories that now follow
it are updated (one bulk request; each update carries its vector back in, as every update does).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

from service.storage.memories import MemoryStore
from service.threads.plan import (
    SEQ_SLOTS, Links, Member, context_fields, neighbour_query, plan_links, stored_updates, successors_query,
)

log = logging.getLogger("engram.threads")
# Ids per successors query (a `terms` query on thread_prev); deletes by tag can name many more.
IDS_PER_QUERY = 1_000


class ThreadLinker:
    def __init__(self, store: MemoryStore, *, enabled: bool = True):
        self.store = store
        self.enabled = enabled

    # --- writes -------------------------------------------------------------------------------------
    def link(self, bank: str, docs: Sequence[tuple[str, dict[str, Any]]], *, fresh_ids: bool) -> Links | None:
        """Before a write: give each document of a thread its sequence number and its predecessor's
        text (in place). `fresh_ids`: every id was generated for this write, so no stored memory
        can have taken its context from one of them. Returns what `settle` writes after the write."""
        if not self.enabled:
            return None
        base = time.time_ns() // 1000 * SEQ_SLOTS
        members: list[Member] = []
        for i, (mid, doc) in enumerate(docs):
            if doc.get("thread_key") and doc.get("thread_at") is not None:
                doc["thread_seq"] = doc.get("thread_seq") or base + i
                members.append(Member.of(mid, doc))
            else:
                doc.update(thread_seq=None, thread_prev=None, thread_context=None)
        ids = [mid for mid, _ in docs]
        if not members and fresh_ids:
            return None
        firsts: dict[str, Member] = {}
        for m in sorted(members, key=lambda m: m.order):
            firsts.setdefault(m.key, m)
        bodies = [neighbour_query(bank, m, ids, before=b) for m in firsts.values() for b in (True, False)]
        chunks = [] if fresh_ids else [ids[i : i + IDS_PER_QUERY] for i in range(0, len(ids), IDS_PER_QUERY)]
        bodies += [successors_query(bank, chunk, ids, size=2 * len(chunk) + 10) for chunk in chunks]
        responses = self.store.msearch(bodies)
        before: dict[str, Member | None] = {}
        after: dict[str, Member | None] = {}
        crowded: set[str] = set()  # threads with stored memories after the batch's first: written out of order
        for j, m in enumerate(firsts.values()):
            before[m.id] = _first(responses[2 * j])
            after[m.id] = _first(responses[2 * j + 1])
            if after[m.id] is not None:
                crowded.add(m.key)
        stale = [s for resp in responses[2 * len(firsts):] for s in _members(resp)]
        # Out of order: each member's own neighbours, and what stands before each stale successor.
        todo = [m for m in members if m.key in crowded and m.id not in before]
        queries = [(m.id, neighbour_query(bank, m, ids, before=b)) for m in todo for b in (True, False)]
        queries += [(s.id, neighbour_query(bank, s, ids, before=True)) for s in stale]
        stale_before: dict[str, Member | None] = {}
        if queries:
            found = self.store.msearch([body for _, body in queries])
            for k, m in enumerate(todo):
                before[m.id], after[m.id] = _first(found[2 * k]), _first(found[2 * k + 1])
            for (sid, _), resp in zip(queries[2 * len(todo):], found[2 * len(todo):]):
                stale_before[sid] = _first(resp)
        links = plan_links(members, before, after, stale, stale_before)
        for mid, doc in docs:
            if mid in links.prev:
                doc.update(context_fields(links.prev[mid]))
        return links

    def settle(self, bank: str, links: Links | None, extra: Sequence[tuple[str, dict[str, Any]]] = (), *, failed: Sequence[str] = ()) -> int:
        """After the write: the stored memories whose predecessor changed get its text (`failed`: batch
        members that were not stored, which nothing may point to). A failure is logged, never raised:
        the memories are stored, and their context is an aid to ranking only."""
        skip = set(failed)
        updates = [u for u in (stored_updates(links) if links is not None else []) if u[1]["thread_prev"] not in skip] + list(extra)
        if not updates:
            return 0
        actions = [{"_op_type": "update", "_index": self.store.alias, "_id": mid, "doc": fields} for mid, fields in updates]
        try:
            errors = self.store.bulk(bank, actions, "update thread context")
        except Exception:  # noqa: BLE001 - see docstring
            log.warning("thread context of %d memories was not updated", len(actions), exc_info=True)
            return 0
        failed = [e for e in errors if e is not None and not e.missing]
        if failed:
            log.warning("thread context of %d memories was not updated: %s", len(failed), failed[0])
        return sum(1 for e in errors if e is None)

    def relink(self, bank: str, memory_id: str, doc: Mapping[str, Any]) -> int:
        """After a PATCH that changed a memory's content or its place (thread, timestamp): its own
        context, the memory that now follows it, and those whose context came from it."""
        if not self.enabled:
            return 0
        work = dict(doc)
        links = self.link(bank, [(memory_id, work)], fresh_ids=False)
        own = {name: work.get(name) for name in ("thread_seq", "thread_prev", "thread_context")}
        extra = [] if all(doc.get(name) == value for name, value in own.items()) else [(memory_id, own)]
        return self.settle(bank, links, extra)

    def forget(self, bank: str, deleted: Sequence[str]) -> int:
        """After a delete: memories whose context came from a deleted memory take the one before it."""
        if not self.enabled or not deleted:
            return 0
        links = self.link(bank, [(mid, {}) for mid in deleted], fresh_ids=False)
        return self.settle(bank, links)


def _members(resp: Mapping[str, Any]) -> list[Member]:
    return [m for m in (Member.of(h["_id"], h.get("_source") or {}) for h in resp["hits"]["hits"]) if m is not None]


def _first(resp: Mapping[str, Any]) -> Member | None:
    found = _members(resp)
    return found[0] if found else None
