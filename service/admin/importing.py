"""Bulk import of memory and edge records, through the service's own write path, without stalling it.

A record is a JSON line (or a dict made by the archive reader): a memory in the `POST /memory`
shape with its id and timestamps, with an optional `associations` list, or an edge line (the
`POST /associate` body). Per batch: validation and document building as `POST /memory/batch`
(MemoryCreate, MemoryWriter.prepare), one mget of the stored versions, one embedding call for the
memories that need a vector, one `_bulk` of memories and the batch's edges (service/admin/edges.py),
with `workers` batches in flight while the next one is prepared.

- Idempotent by id: a record's `id` is its document id; a record without one gets an id derived
  from its content (uuid5), and edge ids are `source|TYPE|target`.
- Re-running keeps what the records do not say: a record without `timestamp`, `updated_at` or
  `last_accessed` keeps the stored one (it is never re-dated), stored supersession state stays
  unless the record carries its own, and an unchanged content keeps its stored vector when the
  configured model made it (a re-run embeds nothing).
- Writes do not wait for a refresh and the index keeps refreshing every second: a live service's
  `refresh=wait_for` writes wait at most one refresh interval, never for the import. (Turning
  refresh off, as bulk-load advice says, made a `POST /memory` during an import wait 6.7 s.)
- Nothing is dropped: every failure is reported with its line, stage and reason; edges whose end
  comes later are retried once at the end.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

import orjson
from opensearchpy import OpenSearch
from pydantic import ValidationError

from service.admin.edges import EdgeWriter
from service.admin.records import SUPERSESSION_FIELDS, EdgeRecord, check_supersessions, edge_record, is_edge_line, supersession_summary
from service.clock.instants import utcnow
from service.config import Settings
from service.embedding import EmbeddingError
from service.errors import EngramError
from service.graph.registry import AssociationError
from service.memory import codec
from service.memory.models import MemoryCreate, valid_id
from service.storage import transfer
from service.storage.bootstrap import load_template
from service.storage.edges import EdgeStore
from service.storage.memories import MemoryStore
from service.writes.writer import MemoryWriter, Prepared

log = logging.getLogger("engram.importer")

# One bulk request per batch: the memory store's own chunk size (500 actions).
BATCH_SIZE = 500
# Batches in flight while the next one is validated and embedded. Measured on the 2-core machine,
# 20k memories with vectors and ~1.25 edges each: 1 -> ~750/s, 2 -> ~1,400/s, 3 -> ~1,650/s.
WORKERS = 3
# Deterministic ids for records without one (uuid5 of the record): re-running a file never duplicates.
ID_NAMESPACE = uuid.UUID("6f1c1a52-7d0e-4c55-9a6e-3f0f6f0b9e61")
# Timestamps a record may leave out; the stored ones then stay.
KEPT_WHEN_ABSENT = ("timestamp", "updated_at", "last_accessed")
# Batches whose ids are remembered as written (an edge's end among them needs no lookup): 10 x 500 ids.
RECENT_BATCHES = 10


@dataclass
class Failure:
    line: int
    id: str | None
    stage: str  # parse | validate | embed | store | associate
    reason: str
    record: Any


class RecordFailure(Exception):
    """A record its reader could not turn into one to write (the archive reader's lone surrogates):
    reported as that record's failure, with its id."""

    def __init__(self, memory_id: str | None, stage: str, reason: str, *, record: Any = None, edge: bool = False):
        super().__init__(reason)
        self.memory_id, self.stage, self.reason, self.record, self.edge = memory_id, stage, reason, record, edge


# A restore or import that meets an id another bank's memory holds says how to copy it instead.
NEW_IDS_HINT = "restore with new ids to copy it (POST /admin/restore?new_ids=true, engram restore --new-ids)"


@dataclass
class ImportReport:
    read: int = 0
    stored: int = 0
    failed: int = 0
    embedded: int = 0  # memories embedded here (no usable vector in the record or the store)
    reused_vectors: int = 0  # unchanged memories that kept their stored vector
    given_vectors: int = 0  # stored memories whose vector came with the record
    generated_ids: int = 0
    edges_stored: int = 0
    edges_failed: int = 0
    skipped: int = 0  # records before the resume point
    seconds: float = 0.0
    failures_by_stage: dict[str, int] = field(default_factory=dict)

    @property
    def memories_per_s(self) -> float:
        return self.stored / self.seconds if self.seconds else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "memories_per_s": round(self.memories_per_s, 1)}


@dataclass
class _Item:
    line: int
    record: Any
    prepared: Prepared | None = None
    edges: list[EdgeRecord] = field(default_factory=list)


@dataclass
class _Batch:
    seq: int
    last_line: int
    size: int
    memories: list[_Item]
    edges: list[tuple[int, EdgeRecord]]


# No refresh while loading (offline loads only): service/storage/transfer.py.
relaxed_refresh = transfer.refresh_paused


def memory_fields() -> frozenset[str]:
    """Fields of the memories mapping a record may set directly (fields added to the template by
    other parts of the service survive an export and an import without this module knowing them)."""
    return frozenset(load_template("memories")["template"]["mappings"]["properties"]) - codec.NOT_PORTABLE


class Importer:
    """Validates, embeds and writes records in batches, then their edges; reports every failure."""

    def __init__(
        self, settings: Settings, client: OpenSearch, embedder, *, bank: str | None = None, batch_size: int = BATCH_SIZE,
        workers: int = WORKERS, on_failure: Callable[[Failure], None] | None = None, on_progress: Callable[[int], None] | None = None,
        on_confirmed: Callable[[int, list[tuple[int, EdgeRecord]]], None] | None = None,
    ):
        bank = bank or settings.default_bank
        self.settings = settings.model_copy(update={"default_bank": bank})
        self.client = client
        self.embedder = embedder
        self.bank = bank
        self.store = MemoryStore(client, settings.memories_alias, refresh="false")
        self.writer = MemoryWriter(self.settings, self.store, EdgeStore(client, settings.edges_alias, refresh="false"), embedder)
        self.edge_writer = EdgeWriter(client, self.store, settings.edges_alias, bank=bank, refresh="false")
        self.fields = memory_fields()
        self.batch_size = max(1, min(batch_size, BATCH_SIZE))
        self.workers = max(1, workers)
        self.on_failure = on_failure or (lambda f: None)
        self.on_progress = on_progress or (lambda n: None)
        self.on_confirmed = on_confirmed
        self.report = ImportReport()
        self.deferred: list[tuple[int, EdgeRecord]] = []  # (line, edge) whose end came later
        self._lock = threading.Lock()  # the report, the failure sink and the checkpoint are shared with the writers
        self._done: set[int] = set()
        self._confirmed_seq = -1
        self._lines: dict[int, int] = {}
        # Ids of the latest batches written: edges to them need no existence lookup (bounded).
        self._recent: deque[set[str]] = deque(maxlen=RECENT_BATCHES)

    # --- the whole run ---------------------------------------------------------------------------
    def run(self, records: Iterable[tuple[int, Any]]) -> ImportReport:
        """`records` yields (line number, record): a dict, a JSON line (str / bytes), or an exception."""
        started = time.perf_counter()
        pending: list[Future] = []
        seq = 0
        with ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="import") as pool:
            chunk: list[tuple[int, Any]] = []
            for line, record in records:
                chunk.append((line, record))
                if len(chunk) >= self.batch_size:
                    pending = self._submit(pool, pending, self._prepare(seq, chunk))
                    chunk, seq = [], seq + 1
            if chunk:
                pending = self._submit(pool, pending, self._prepare(seq, chunk))
            for fut in pending:
                fut.result()
        self._retry_deferred()
        transfer.refresh(self.client, [self.settings.memories_alias, self.settings.edges_alias])
        self.report.seconds = time.perf_counter() - started
        return self.report

    def _submit(self, pool: ThreadPoolExecutor, pending: list[Future], batch: _Batch) -> list[Future]:
        while len(pending) >= self.workers:
            pending.pop(0).result()
        pending.append(pool.submit(self._write, batch))
        return pending

    # --- one batch: validate and build ---------------------------------------------------------------
    def _fail(self, line: int, mid: str | None, stage: str, reason: str, record: Any) -> None:
        with self._lock:
            self.report.failed += 1
            self.report.failures_by_stage[stage] = self.report.failures_by_stage.get(stage, 0) + 1
            self.on_failure(Failure(line, mid, stage, reason, record))

    def _edge_failed(self, line: int, item: Any, reason: str) -> None:
        with self._lock:
            self.report.edges_failed += 1
            self.report.failures_by_stage["associate"] = self.report.failures_by_stage.get("associate", 0) + 1
            self.on_failure(Failure(line, item.get("memory1_id") if isinstance(item, dict) else None, "associate", reason, item))

    def _parse(self, line: int, record: Any) -> dict | None:
        if isinstance(record, RecordFailure):
            if record.edge:
                with self._lock:
                    self.report.edges_failed += 1
                    self.report.failures_by_stage[record.stage] = self.report.failures_by_stage.get(record.stage, 0) + 1
                    self.on_failure(Failure(line, record.memory_id, record.stage, record.reason, record.record))
            else:
                self._fail(line, record.memory_id, record.stage, record.reason, record.record)
            return None
        if isinstance(record, Exception):
            self._fail(line, None, "parse", str(record), None)
            return None
        if isinstance(record, (str, bytes)):
            try:
                record = orjson.loads(record)
            except orjson.JSONDecodeError as exc:
                self._fail(line, None, "parse", f"invalid JSON: {exc}", record if isinstance(record, str) else record.decode(errors="replace"))
                return None
        if not isinstance(record, dict):
            self._fail(line, None, "parse", f"expected a JSON object, got {type(record).__name__}", record)
            return None
        return record

    def _prepare(self, seq: int, chunk: list[tuple[int, Any]]) -> _Batch:
        now = utcnow()
        memories: list[_Item] = []
        edges: list[tuple[int, EdgeRecord]] = []
        for line, raw in chunk:
            self.report.read += 1
            record = self._parse(line, raw)
            if record is None:
                continue
            if is_edge_line(record):
                try:
                    edges.append((line, edge_record(record, id_ok=valid_id)))
                except AssociationError as exc:
                    self._edge_failed(line, record, str(exc))
                continue
            item = self._memory(line, record, now)
            if item is not None:
                memories.append(item)
        self._complete(memories)
        return _Batch(seq, chunk[-1][0], len(chunk), memories, edges)

    def _memory(self, line: int, record: dict, now) -> _Item | None:
        fields = record
        if not record.get("id"):
            fields = {**record, "id": str(uuid.uuid5(ID_NAMESPACE, orjson.dumps(record, option=orjson.OPT_SORT_KEYS).decode()))}
            self.report.generated_ids += 1
        try:
            req = MemoryCreate.model_validate(fields)
            if req.supersedes:
                raise EngramError("supersedes is not imported; give an association of type EVOLVED_INTO or INVALIDATED_BY from the old memory")
            prepared = self.writer.prepare(self.bank, req, now, imported=record)
            doc = prepared.doc
            if record.get("supersessions") is not None:
                doc.update(supersession_summary(check_supersessions(record["supersessions"])))
            for name in self.fields.difference(doc).intersection(record):
                doc[name] = record[name]  # a stored field the write path does not build (added by another feature)
            if req.embedding is not None and isinstance(record.get("embedding_model"), str):
                doc["embedding_model"] = record["embedding_model"]  # a vector that comes with the name of its model
        except ValidationError as exc:
            self._fail(line, fields.get("id"), "validate", _describe(exc), record)
            return None
        except (EngramError, ValueError) as exc:
            self._fail(line, fields.get("id"), "validate", getattr(exc, "message", str(exc)), record)
            return None
        item = _Item(line, record, prepared)
        for raw in record.get("associations") or ():
            try:
                item.edges.append(edge_record(raw, id_ok=valid_id, this_id=prepared.memory_id))
            except AssociationError as exc:
                self._edge_failed(line, {"memory1_id": prepared.memory_id, "item": raw}, str(exc))
        return item

    def _complete(self, items: list[_Item]) -> None:
        """What the records leave out comes from the stored versions; then vectors (stored or embedded)."""
        if not items:
            return
        stored = self._stored([it.prepared.memory_id for it in items])
        reusable = []
        for it in list(items):
            doc, old = it.prepared.doc, stored.get(it.prepared.memory_id)
            if old is None:
                continue
            if old.get("bank") != self.bank:
                # Ids are unique in the index, not per bank: writing it would move the memory out of its
                # bank. The answer never names that bank (the caller may not see it).
                self._fail(it.line, it.prepared.memory_id, "store",
                           f"this id is already used by a memory of another bank; {NEW_IDS_HINT}", it.record)
                items.remove(it)
                continue
            for name in KEPT_WHEN_ABSENT:
                if it.record.get(name) is None:
                    doc[name] = old.get(name)
            if it.record.get("supersessions") is None and old.get("supersessions"):
                doc.update({name: old.get(name) for name in SUPERSESSION_FIELDS})
            if "embedding" not in doc and old.get("content") == doc["content"] and old.get("embedding_model") == doc["embedding_model"]:
                reusable.append(it)
        if reusable:
            vectors = self.store.vectors(self.bank, [it.prepared.memory_id for it in reusable])
            for it in reusable:
                vector = vectors.get(it.prepared.memory_id, (None,))[0]
                if vector is not None:
                    it.prepared.doc["embedding"] = vector
                    self.report.reused_vectors += 1
        todo = [it for it in items if "embedding" not in it.prepared.doc]
        if not todo:
            return
        try:
            vectors = self.embedder.encode([it.prepared.doc["content"] for it in todo])
        except EmbeddingError as exc:
            for it in todo:
                self._fail(it.line, it.prepared.memory_id, "embed", str(exc), it.record)
            items[:] = [it for it in items if "embedding" in it.prepared.doc]
            return
        for it, vector in zip(todo, vectors):
            it.prepared.doc["embedding"] = vector.tolist()
        self.report.embedded += len(todo)

    def _stored(self, ids: list[str]) -> dict[str, dict]:
        """The stored versions of `ids`, whatever their bank (one realtime mget)."""
        return transfer.get_sources(self.client, self.store.alias, ids)

    # --- one batch: write ------------------------------------------------------------------------------
    def _write(self, batch: _Batch) -> None:
        items = batch.memories
        errors: list[str | None] = []
        if items:
            try:
                outcomes = self.store.bulk_put([(it.prepared.memory_id, it.prepared.doc) for it in items], refresh="false")
                errors = [None if o is None else o.reason for o in outcomes]
            except EngramError as exc:
                errors = [exc.message] * len(items)
        stored = []
        for it, err in zip(items, errors):
            if err:
                self._fail(it.line, it.prepared.memory_id, "store", err, it.record)
            else:
                stored.append(it)
        with self._lock:
            self.report.stored += len(stored)
            self.report.given_vectors += sum(1 for it in stored if it.record.get("embedding") is not None)
            self._recent.append({it.prepared.memory_id for it in stored})
        self._write_edges([(it.line, e) for it in stored for e in it.edges] + batch.edges, final=False)
        self.on_progress(batch.size)
        self._confirm(batch)

    def _confirm(self, batch: _Batch) -> None:
        """Advance the checkpoint to the last line of the longest run of finished batches."""
        with self._lock:
            self._done.add(batch.seq)
            self._lines[batch.seq] = batch.last_line
            moved = False
            while self._confirmed_seq + 1 in self._done:
                self._confirmed_seq += 1
                moved = True
            if moved and self.on_confirmed:
                self.on_confirmed(self._lines[self._confirmed_seq], list(self.deferred))

    # --- edges -------------------------------------------------------------------------------------------
    def _write_edges(self, pairs: list[tuple[int, EdgeRecord]], *, final: bool) -> None:
        for start in range(0, len(pairs), BATCH_SIZE):
            chunk = pairs[start : start + BATCH_SIZE]
            try:
                with self._lock:
                    known = set().union(*self._recent)
                outcomes = self.edge_writer.write([e for _, e in chunk], utcnow(), known=known)
            except EngramError as exc:
                for line, e in chunk:
                    self._edge_failed(line, asdict(e), exc.message)
                continue
            for (line, e), outcome in zip(chunk, outcomes):
                if outcome.error is None:
                    with self._lock:
                        self.report.edges_stored += 1
                elif outcome.missing and not final:
                    with self._lock:
                        self.deferred.append((line, e))  # the missing end may come later in the file
                else:
                    self._edge_failed(line, {"memory1_id": e.source_id, "memory2_id": e.target_id, "type": e.type}, outcome.error)

    def _retry_deferred(self) -> None:
        deferred, self.deferred = self.deferred, []
        self._write_edges(deferred, final=True)


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err.get("loc", ()))
        parts.append(f"{where}: {err.get('msg')}" if where else str(err.get("msg")))
    return "; ".join(parts)
