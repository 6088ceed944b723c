"""MemoryStore: every client call on the memories index (STYLE.md practice 5)."""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime

from opensearchpy import OpenSearch

from service.errors import Conflict, EngineUnavailable, NotFound
from service.filters.scripts import CARRY_VECTOR, CLEAR_SUPERSESSIONS, RECORD_SUPERSESSION, VECTOR_SCRIPT
from service.storage.access import RecentAccesses
from service.storage.bulk import ItemError, deleted_count, run_bulk
from service.storage.client import MAYBE_APPLIED, EngineRejected, check_docs, engine_errors, msearch
from service.clock.instants import iso
from service.memory.stems import with_stems

log = logging.getLogger("engram.memories")

# Fields never sent back to clients: vectors are large and AutoMem hides them. (Indices created from
# the current template keep no vector in _source at all; older ones still do.)
HIDDEN_FIELDS = ("embedding",)
# An update that lost a race with another write (its if_seq_no no longer matches) is retried, after
# a short random pause: the property test (8 writers on ~60 memories) lost 3 races in a row.
CONFLICT_ATTEMPTS = 6
# PATCH's read-modify-write under contention: each lost race reads again after a random pause that
# grows with the attempt (full jitter, at most RMW_MAX_PAUSE_S); 160 concurrent PATCHes of one memory
# lost up to 6 races in a row. Only a writer that loses every attempt gets a 409.
RMW_ATTEMPTS = 12
RMW_MAX_PAUSE_S = 0.2
# Page size when collecting ids (DELETE /memory/by-tag); the engine's default result window is 10,000.
ID_PAGE = 1000
# A memory's vector (None when stored without one) and the version it was read at: _seq_no, _primary_term.
Version = tuple[list[float] | None, int, int]
# What a search asks for to read its hits' versions (`version_of`).
VERSION_FIELDS = {"seq_no_primary_term": True, "script_fields": {"embedding": {"script": {"source": VECTOR_SCRIPT}}}}
# Striped per-memory locks of read_modify_write (a lock per memory would grow without bound).
_RMW_LOCKS = tuple(threading.Lock() for _ in range(256))


def _vector_field(hit: dict) -> list[float] | None:
    """VECTOR_SCRIPT's value: the list comes back flattened as the field's values; null as [null]."""
    values = hit.get("fields", {}).get("embedding")
    if not values or values[0] is None:
        return None
    return values[0] if isinstance(values[0], list) else values


def version_of(hit: dict) -> Version:
    """A hit's vector and version, from a search that asked for VERSION_FIELDS."""
    return _vector_field(hit), hit["_seq_no"], hit["_primary_term"]


def _of_bank(doc: dict, bank: str) -> bool:
    """An mget answer: the memory exists and belongs to `bank` (ids are unique across banks)."""
    return bool(doc.get("found")) and doc["_source"].get("bank") == bank


class MemoryStore:
    """One store for every bank: each method that reads or writes memories takes the bank it acts on."""

    def __init__(self, client: OpenSearch, alias: str, *, refresh: str = "wait_for", access_resolution_s: float = 0.0):
        self.client = client
        self.alias = alias
        self.refresh = refresh
        self.recent_accesses = RecentAccesses(access_resolution_s)

    def claimed_elsewhere(self, bank: str, ids: Sequence[str]) -> set[str]:
        """Which of `ids` are memories of ANOTHER bank: ids are unique across banks, and writing one
        would take that memory over (an index op replaces the document whatever its bank)."""
        ids = list(dict.fromkeys(ids))
        if not ids:
            return set()
        with engine_errors("check memory ids"):
            resp = self.client.mget(index=self.alias, body={"ids": ids}, params={"_source_includes": "bank"})
        return {d["_id"] for d in resp["docs"] if d.get("found") and not _of_bank(d, bank)}

    # --- single documents -------------------------------------------------------------------
    def get(self, bank: str, memory_id: str) -> dict | None:
        return self.get_many(bank, [memory_id]).get(memory_id)

    def get_many(self, bank: str, ids: Sequence[str]) -> dict[str, dict]:
        docs = self._mget(ids, "fetch memories", {"_source_excludes": ",".join(HIDDEN_FIELDS)})
        return {d["_id"]: d["_source"] for d in docs if _of_bank(d, bank)}

    def read_sources(self, ids: Sequence[str]) -> dict[str, dict]:
        """The whole stored sources of `ids` the last refresh shows (a recall's page: ids its bank's arms
        found). One `_mget` with realtime=false: a realtime get of a memory written since the last refresh
        (access tracking writes often) makes the engine refresh, and the arms saw that refresh anyway.
        10 memories cost the engine 0.6 ms of CPU so, 1.0 by a search by ids (bench/page_read.py)."""
        return {d["_id"]: d["_source"] for d in self._mget(ids, "read recalled memories", {"realtime": "false"}) if d.get("found")}

    def _mget(self, ids: Sequence[str], what: str, params: dict[str, str]) -> list[dict]:
        """The docs of one `_mget` of `ids` (none asked, none sent), doc-level errors raised (check_docs)."""
        if not ids:
            return []
        with engine_errors(what):
            resp = self.client.mget(index=self.alias, body={"ids": list(ids)}, params=params)
        return check_docs(resp, what)

    def put(self, memory_id: str, doc: dict) -> None:
        with engine_errors("store memory", write=True):
            self.client.index(index=self.alias, id=memory_id, body=with_stems(doc), refresh=self.refresh)

    def read_modify_write(self, bank: str, memory_id: str, compute: Callable[[dict], dict], *, attempts: int = RMW_ATTEMPTS) -> tuple[dict, dict]:
        """Optimistic concurrency for changes that depend on the stored document: read the source, the
        vector and the version in one search, `compute(source)` the partial document, and write it only
        if the memory is still at that version (if_seq_no); a lost race reads again and recomputes.
        Writers of one memory in this process take turns (a striped lock), so races are left only
        with other processes and background writes. Returns (source it was computed from, changes)."""
        with _RMW_LOCKS[hash(memory_id) % len(_RMW_LOCKS)]:
            return self._read_modify_write(bank, memory_id, compute, attempts)

    def _read_modify_write(self, bank: str, memory_id: str, compute: Callable[[dict], dict], attempts: int) -> tuple[dict, dict]:
        for attempt in range(attempts):
            found = self._read_for_update(bank, memory_id, refresh_first=attempt > 0)
            if found is None:
                raise NotFound(f"Memory {memory_id} not found")
            source, vector, seq_no, term = found
            changes = compute(source)
            # The whole document, not a partial `doc` update: the engine deep-merges partial objects,
            # and a PATCHed `metadata` must replace the stored one.
            doc = with_stems({**source, **changes})
            if "embedding" not in changes and vector is not None:
                doc["embedding"] = vector
            action = {"_op_type": "index", "_index": self.alias, "_id": memory_id, "_source": doc, "if_seq_no": seq_no, "if_primary_term": term}
            error = run_bulk(self.client, [action], what="update memory", refresh=self.refresh)[0]
            if error is None:
                return source, changes
            if not error.conflict:
                raise item_failure(error, "update memory", memory_id)
            time.sleep(random.uniform(0, min(RMW_MAX_PAUSE_S, 0.005 * 2**attempt)))  # spread the contenders out
        raise Conflict(f"update memory: {attempts} concurrent writes in a row changed memory {memory_id} first; retry the update")

    def _read_for_update(self, bank: str, memory_id: str, *, refresh_first: bool) -> tuple[dict, list[float] | None, int, int] | None:
        """Source, vector and version of one memory, all of one refreshed point (doc values only exist
        for refreshed documents): after a lost race the index is refreshed before reading again."""
        body = {
            "size": 1, **VERSION_FIELDS, "_source": {"excludes": list(HIDDEN_FIELDS)},
            "query": {"bool": {"filter": [{"term": {"bank": bank}}, {"ids": {"values": [memory_id]}}]}},
        }
        for refreshed in ((True,) if refresh_first else (False, True)):
            if refreshed:
                self.refresh_now()  # search sees the last refresh: a memory written since needs one
            with engine_errors("read memory"):
                hits = self.client.search(index=self.alias, body=body)["hits"]["hits"]
            if hits:
                h = hits[0]
                return h["_source"], *version_of(h)
        return None

    # --- vectors ------------------------------------------------------------------------------
    def vectors(self, bank: str, ids: Sequence[str]) -> dict[str, Version]:
        """{id: (vector or None, _seq_no, _primary_term)} of the bank's stored memories.

        Doc values are only as fresh as the last refresh: an id not found yet may be a memory written
        since, so the index is refreshed once and read again (a version that moved on since the
        refresh shows up as a conflict in `bulk`, which refreshes and retries)."""
        ids = list(dict.fromkeys(ids))
        found = self._read_vectors(bank, ids)
        if len(found) < len(ids):
            self.refresh_now()
            found = self._read_vectors(bank, ids)
        return found

    def refresh_now(self) -> None:
        with engine_errors("refresh memories"):
            self.client.indices.refresh(index=self.alias)

    def _read_vectors(self, bank: str, ids: list[str]) -> dict[str, Version]:
        out: dict[str, Version] = {}
        # In pages: a search returns at most index.max_result_window (10,000) hits.
        for start in range(0, len(ids), ID_PAGE):
            page = ids[start : start + ID_PAGE]
            body = {
                "size": len(page), "_source": False, **VERSION_FIELDS,
                "query": {"bool": {"filter": [{"term": {"bank": bank}}, {"ids": {"values": page}}]}},
            }
            with engine_errors("read vectors"):
                hits = self.client.search(index=self.alias, body=body)["hits"]["hits"]
            out.update({h["_id"]: version_of(h) for h in hits})
        return out

    def carry_vectors(self, bank: str, actions: Sequence[dict], known: Mapping[str, Version] | None = None) -> list[dict | None]:
        """Update actions made safe for an index that keeps vectors out of _source: an update re-indexes
        the document from _source, so each one carries its memory's vector back in (a partial doc gets
        `embedding`, a script `params.embedding`), guarded by the version the vector was read at.
        An update of a memory the bank does not hold (missing, or another bank's) is None: not sent.
        `known`: versions of the bank's memories read already (a recall's page read), not read again."""
        known = known or {}
        ids = [a["_id"] for a in actions if a.get("_op_type") == "update" and a["_id"] not in known]
        found = {**known, **(self.vectors(bank, ids) if ids else {})}
        guarded: set[str] = set()
        out: list[dict | None] = []
        for a in actions:
            if a.get("_op_type") != "update":
                out.append(a)
                continue
            if a["_id"] not in found:
                out.append(None)
                continue
            vector, seq_no, term = found[a["_id"]]
            a = {k: v for k, v in a.items() if k != "retry_on_conflict"}  # exclusive with if_seq_no
            if a["_id"] not in guarded:
                # Only the first update of a memory in this batch can know its version; the shard
                # applies the batch's later ones to the same memory right after it, in order.
                guarded.add(a["_id"])
                a.update(if_seq_no=seq_no, if_primary_term=term)
            if "script" in a:
                script = a["script"]
                a["script"] = {**script, "source": CARRY_VECTOR + script["source"], "params": {**script.get("params", {}), "embedding": vector}}
            elif vector is not None and "embedding" not in a.get("doc", {}):
                a["doc"] = {**a["doc"], "embedding": vector}
            out.append(a)
        return out

    def delete(self, bank: str, memory_id: str) -> bool:
        if not self.existing(bank, [memory_id]):  # the bank's memories only
            return False
        with engine_errors("delete memory", write=True):
            resp = self.client.delete(index=self.alias, id=memory_id, refresh=self.refresh, ignore=[404])
        return resp.get("result") == "deleted"

    # --- many documents -----------------------------------------------------------------------
    def bulk_put(self, docs: Sequence[tuple[str, dict]], *, refresh: str | None = None, create: bool = False) -> list[ItemError | None]:
        """Index many documents in one bulk request; one outcome per input, in order. `create` never
        overwrites: a memory that exists already answers a 409 (idempotent retries)."""
        op = "create" if create else "index"
        actions = [{"_op_type": op, "_index": self.alias, "_id": mid, "_source": with_stems(doc)} for mid, doc in docs]
        return run_bulk(self.client, actions, what="bulk store memories", refresh=refresh or self.refresh)

    def stale_accesses(self, seen: Mapping[str, str | None], now: datetime) -> dict[str, str | None]:
        """The part of `seen` ({id: stored last_accessed}) that `touch` would rewrite; no I/O."""
        return self.recent_accesses.stale(seen, now)

    def touch(self, bank: str, seen: Mapping[str, str | None], now: datetime, versions: Mapping[str, Version] | None = None) -> None:
        """Set last_accessed on many memories ({id: stored last_accessed}) in one bulk request,
        without waiting for a refresh.

        Like a file system's relatime, a memory whose stored last_accessed is younger than
        RECALL_ACCESS_RESOLUTION_SECONDS, or whose access this process recorded within it (RecentAccesses: the
        search may not show that write yet), is left alone: an update rewrites the whole document, vector
        included (an HNSW insertion now and a merge later), so hot memories are rewritten at most once per period.
        `versions`: the vectors and versions of some of them, read already (`carry_vectors`).
        """
        when = iso(now)
        actions = [{"_op_type": "update", "_index": self.alias, "_id": mid, "doc": {"last_accessed": when}} for mid in self.stale_accesses(seen, now)]
        if not actions:
            return
        try:
            outcomes = self.bulk(bank, actions, "record access", refresh="false", versions=versions)
        except Exception:  # noqa: BLE001 - access tracking must never fail a recall
            log.warning("last_accessed update failed for %d memories", len(actions), exc_info=True)
            return
        self.recent_accesses.record([a["_id"] for a, outcome in zip(actions, outcomes) if outcome is None], now)

    def count(self, query: dict | None = None) -> int:
        with engine_errors("count memories"):
            return int(self.client.count(index=self.alias, body={"query": query or {"match_all": {}}})["count"])

    def search(self, body: dict) -> dict:
        with engine_errors("search memories"):
            return self.client.search(index=self.alias, body=body)

    def msearch(self, bodies: Sequence[dict], along: Sequence[tuple[str, dict, str]] = ()) -> list[dict]:
        """All retrieval arms in one round trip, and `along` it searches of other indexes ((index, body,
        what it reads) each, answered after the arms'); every sub-response is checked for its error key."""
        searches = [(self.alias, body, f"recall search arm {i}") for i, body in enumerate(bodies)]
        return msearch(self.client, [*searches, *along], "recall search")

    def delete_by_query(self, query: dict) -> int:
        with engine_errors("delete memories", write=True):
            resp = self.client.delete_by_query(index=self.alias, body={"query": query}, refresh=True, conflicts="proceed")
        return int(resp.get("deleted", 0))

    # --- graph and lifecycle ----------------------------------------------------------
    def existing(self, bank: str, ids: Sequence[str]) -> set[str]:
        """Which of `ids` are stored memories of the bank (one mget, no content transferred)."""
        ids = list(dict.fromkeys(ids))
        if not ids:
            return set()
        with engine_errors("check memories"):
            resp = self.client.mget(index=self.alias, body={"ids": ids}, params={"_source_includes": "bank"})
        return {d["_id"] for d in resp["docs"] if _of_bank(d, bank)}

    def supersession_action(self, memory_id: str, entry: dict, *, keep_at: bool, t_invalid: str | None = None) -> dict:
        """A bulk action that records `entry` ({by, type, at, strength}) on the superseded memory."""
        return {
            "_op_type": "update", "_index": self.alias, "_id": memory_id,
            "script": {"lang": "painless", "source": RECORD_SUPERSESSION, "params": {"entry": entry, "keep_at": keep_at, "t_invalid": t_invalid}},
        }

    def bulk(
        self, bank: str, actions: Sequence[dict], what: str, *, refresh: str | None = None, versions: Mapping[str, Version] | None = None,
    ) -> list[ItemError | None]:
        """Any bulk actions on the bank's memories; one outcome per action, in order. Update actions carry
        their memory's vector (carry_vectors, from `versions` when given: an update of another bank's memory
        finds none and fails as document_missing would); one that lost a race with another write (409) is
        retried, with what it reads again."""
        actions = [_stemmed(a) for a in actions]
        outcomes: list[ItemError | None] = [None] * len(actions)
        pending = list(range(len(actions)))
        for attempt in range(CONFLICT_ATTEMPTS):
            if not pending:
                break
            if attempt:
                time.sleep(random.uniform(0, 0.01 * attempt))  # spread the contenders out
                self.refresh_now()  # the versions read were stale (written since the last refresh)
            carried = self.carry_vectors(bank, [actions[i] for i in pending], None if attempt else versions)
            sent = [(i, a) for i, a in zip(pending, carried) if a is not None]
            for i, a in zip(pending, carried):
                if a is None:  # as the engine answers an update of a missing document
                    outcomes[i] = ItemError(404, "document_missing_exception", f"memory {actions[i]['_id']} not found")
            results = run_bulk(self.client, [a for _, a in sent], what=what, refresh=refresh or self.refresh)
            for (i, _), outcome in zip(sent, results):
                outcomes[i] = outcome
            pending = [i for (i, _), outcome in zip(sent, results) if outcome is not None and outcome.conflict and actions[i].get("_op_type") == "update"]
        return outcomes

    def clear_supersessions(self, bank: str, deleted_ids: Sequence[str]) -> int:
        """Forget supersessions by deleted memories (their edges are gone). Not an update_by_query:
        that re-indexes from _source, which holds no vector. Chunked: a `terms` query takes at most
        65,536 values (index.max_terms_count), and a delete-by-tag can delete far more memories.
        Returns how many memories were updated."""
        ids = list(dict.fromkeys(deleted_ids))
        if not ids:
            return 0
        # Refreshed first, as EdgeStore.delete_touching: a supersession recorded just before its
        # superseding memory was deleted must be found.
        self.refresh_now()
        cleared = 0
        for start in range(0, len(ids), TERMS_CHUNK):
            chunk = ids[start : start + TERMS_CHUNK]
            query = {"bool": {"filter": [{"term": {"bank": bank}}, {"terms": {"supersessions.by": chunk}}]}}
            script = {"lang": "painless", "source": CLEAR_SUPERSESSIONS, "params": {"ids": chunk}}
            targets = self.ids_matching(query)
            errors = self.bulk(bank, [{"_op_type": "update", "_index": self.alias, "_id": mid, "script": script} for mid in targets],
                               "clear supersessions", refresh="true")
            failed = [e for e in errors if e is not None and not e.missing]
            if failed:
                log.warning("clearing supersessions failed for %d memories: %s", len(failed), failed[0])
            cleared += sum(1 for e in errors if e is None)
        return cleared

    def page(self, query: dict, sort: list[dict], *, size: int, offset: int) -> tuple[list[tuple[str, dict]], int]:
        """One page of (id, source) and the total number of matches (exact)."""
        body = {"query": query, "sort": sort, "from": offset, "size": size, "track_total_hits": True, "_source": {"excludes": list(HIDDEN_FIELDS)}}
        with engine_errors("list memories"):
            resp = self.client.search(index=self.alias, body=body)
        return [(h["_id"], h["_source"]) for h in resp["hits"]["hits"]], int(resp["hits"]["total"]["value"])

    def ids_matching(self, query: dict) -> list[str]:
        """Every id matching `query` (see id_pages)."""
        return [mid for page in self.id_pages(query) for mid in page]

    def id_pages(self, query: dict, size: int = ID_PAGE) -> Iterator[list[str]]:
        """The ids matching `query` in pages of `size` (at most the 10,000 result window), id order,
        paged with search_after: a caller may delete each page before asking for the next."""
        after = None
        while True:
            body: dict = {"query": query, "size": size, "sort": [{"id": "asc"}], "_source": False, "track_total_hits": False}
            if after is not None:
                body["search_after"] = after
            with engine_errors("list memories"):
                hits = self.client.search(index=self.alias, body=body)["hits"]["hits"]
            if hits:
                yield [h["_id"] for h in hits]
            if len(hits) < size:
                return
            after = hits[-1]["sort"]

    def delete_ids(self, ids: Sequence[str]) -> int:
        """Delete many memories by id in bulk requests; the number actually deleted."""
        actions = [{"_op_type": "delete", "_index": self.alias, "_id": mid} for mid in dict.fromkeys(ids)]
        return deleted_count(self.client, actions, what="delete memories", refresh=True) if actions else 0


# Ids per `terms` query: index.max_terms_count is 65,536; painless `contains` on the list is linear.
TERMS_CHUNK = 10_000


def item_failure(error: ItemError, what: str, memory_id: str) -> Exception:
    """A failed bulk item of a single-memory operation as the project's error."""
    if error.missing:
        return NotFound(f"Memory {memory_id} not found")
    if error.status == 400:
        return EngineRejected(f"{what}: internal error (the engine rejected the document; see the service log)")
    return EngineUnavailable(f"{what} failed ({error.reason}); {MAYBE_APPLIED}")


def _stemmed(action: dict) -> dict:
    """A bulk action whose document (whole, or an update's partial `doc`) carries the stems of the
    texts it sets (service/memory/stems.py)."""
    if "_source" in action and isinstance(action["_source"], Mapping):
        return {**action, "_source": with_stems(action["_source"])}
    if isinstance(action.get("doc"), Mapping):
        return {**action, "doc": with_stems(action["doc"])}
    return action
