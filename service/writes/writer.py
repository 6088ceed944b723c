"""The memory write path: validate, classify, embed, build the stored document, write.

The stored document carries derived fields (tags_norm, tag_prefixes, metadata_terms, entities)
so that recall filters are exact `term`/`terms` lookups inside OpenSearch.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from collections.abc import Mapping
from typing import Any

from scoring.components import metadata_terms
from service.config import Settings
from service.embedding import Embedder, EmbeddingError, MicroBatcher
from service.errors import BadRequest, Conflict, EngineUnavailable, EngramError, NotFound
from service.memory.types import EXPLICIT_TYPE_CONFIDENCE, classify, canonical_type
from service.graph.links import take_back_orphans
from service.graph.registry import Association
from service.graph.supersession import supersession_entry
from service.memory.codec import enrichment_after_edit, without_derived
from service.memory.models import MemoryCreate, MemoryFields, MemoryUpdate, valid_id
from service.storage.bulk import ItemError, PartialDelete
from service.storage.client import MAYBE_APPLIED
from service.storage.edges import EdgeStore
from service.storage.memories import MemoryStore, item_failure
from service.filters.clauses import by_tags_query
from service.memory.tags import clean_tags, entity_names, normalize_tag, tag_prefixes
from service.threads import ThreadLinker, inferred, thread_position
from service.clock.terms import memory_date_terms
from service.clock.instants import iso, iso_or_none, stored_datetime, utcnow
from service.memory.limits import check_metadata, check_tags, check_text, check_vector

# DELETE /memory/by-tag works through the matches this many ids at a time (see delete_by_tags).
DELETE_CHUNK = 5_000
# POST /memory `supersedes`: EVOLVED_INTO unless `supersede_type` says INVALIDATED_BY; the
# client states the replacement outright, so the edge is at full strength.
DEFAULT_SUPERSEDE_TYPE = "EVOLVED_INTO"
SUPERSEDE_STRENGTH = 1.0


def check_validity_window(t_valid: str | None, t_invalid: str | None, where: str = "") -> None:
    """A memory valid from t_valid must stop being valid after it starts: t_invalid < t_valid could never hold."""
    valid_from, valid_to = stored_datetime(t_valid), stored_datetime(t_invalid)
    if valid_from and valid_to and valid_to <= valid_from:
        raise BadRequest(f"{where}t_invalid ({t_invalid}) is not after {where}t_valid ({t_valid}): the memory could never be valid")


def derived_fields(tags: list[str], metadata: dict[str, Any]) -> dict[str, Any]:
    return {
        "tags": tags,
        "tags_norm": sorted({normalize_tag(t) for t in tags}),
        "tag_prefixes": tag_prefixes(tags),
        "metadata_terms": metadata_terms(metadata),
        "metadata_terms_plain": plain_metadata_terms(metadata),
        "entities": entity_names(tags, metadata),
    }


def plain_metadata_terms(metadata: dict[str, Any]) -> list[str]:
    """The tag component's terms (entities left out), read by recall from doc values; [""] when none,
    so that a document written before the field existed is told apart (service/recall/lean.py)."""
    return metadata_terms(metadata, include_entities=False) or [""]


@dataclass
class Prepared:
    memory_id: str
    doc: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    replayed: bool = False  # an Idempotency-Key retry: the memory was stored by an earlier request


# Ids derived from Idempotency-Key headers: uuid5 in a namespace of our own, per bank.
IDEMPOTENCY_NAMESPACE = uuid.UUID("6f1c2a52-9d7e-4c1b-8a43-0d6c2f1e9b7a")


def idempotent_id(key: str, bank: str, index: int | None = None) -> str:
    name = f"{bank}\n{key}" if index is None else f"{bank}\n{key}\n{index}"
    return str(uuid.uuid5(IDEMPOTENCY_NAMESPACE, name))


class MemoryWriter:
    """Writes memories; every operation names the bank it writes into."""

    def __init__(self, settings: Settings, store: MemoryStore, edges: EdgeStore, embedder: Embedder):
        self.settings = settings
        self.store = store
        self.edges = edges
        self.embedder = embedder
        self.threads = ThreadLinker(store, enabled=settings.thread_context_enabled)
        # One memory per request: concurrent requests' texts share a model call (service/embedding/batcher.py).
        self.batcher = MicroBatcher(embedder.embed_documents, window=settings.embedding_batch_window_ms / 1000,
                                    max_batch=settings.embedding_batch_size) if settings.embedding_write_batching else None

    def close(self) -> None:
        if self.batcher is not None:
            self.batcher.close()

    def _vectors(self, texts: list[str]) -> list[list[float]]:
        if self.batcher is not None and len(texts) == 1:
            return [self.batcher.embed(texts[0])]
        return self.embedder.embed_documents(texts)

    def _check_ids_free(self, bank: str, prepared: list[Prepared], where_of=lambda i: "") -> None:
        """A client id already used by another bank's memory is refused (writing it would take it over)."""
        taken = self.store.claimed_elsewhere(bank, [p.memory_id for p in prepared])
        for i, p in enumerate(prepared):
            if p.memory_id in taken:
                raise Conflict(f"{where_of(i)}id {p.memory_id} is already used by a memory of another bank; choose another id")

    # --- validation: ONE validator for POST, batch and PATCH ------------------------------------
    def validate(self, req: MemoryFields, where: str = "", *, content: str | None = None, embedding: list[float] | None = None) -> None:
        """Every client-given field, checked before anything is embedded or written (service/memory/limits.py)."""
        limits = self.settings.limits
        if content is not None:
            check_text(content, f"{where}content", max_chars=limits.content_chars)
        if embedding is not None:
            check_vector(embedding, self.embedder.dimension, f"{where}embedding")
        if req.tags is not None:
            check_tags(req.tags, limits, f"{where}tags")
        if req.type is not None:
            check_text(req.type, f"{where}type", max_chars=limits.type_chars)
        for name in ("who", "project"):  # keyword values, bounded like tags
            if getattr(req, name) is not None:
                check_text(getattr(req, name), f"{where}{name}", max_chars=limits.tag_chars)
        check_metadata(req.metadata, limits, f"{where}metadata")

    def prepare(self, bank: str, req: MemoryCreate, now: datetime, where: str = "", *, memory_id: str | None = None,
                imported: Mapping[str, Any] | None = None) -> Prepared:
        """The stored document of a new memory. `imported`: the stored fields an imported memory comes
        with, which place it in its thread as they did when it was first written: its Hindsight
        `document_id`, and its enrichment, whose derived tags are no part of the tag set a burst is
        keyed on (the caller's tags are)."""
        imported = imported or {}
        enrichment = imported.get("enrichment") if isinstance(imported.get("enrichment"), dict) else None
        self.validate(req, where, content=req.content, embedding=req.embedding)
        warnings: list[str] = []
        if req.type is not None:
            mem_type, warning = canonical_type(req.type)
            if warning:
                warnings.append(f"{where}{warning}")
            # spec 001: type and confidence given -> as given; type only -> 0.9
            confidence = req.confidence if req.confidence is not None else EXPLICIT_TYPE_CONFIDENCE
        else:
            mem_type, classified = classify(req.content)
            confidence = classified if req.confidence is None else req.confidence
        tags = clean_tags(req.tags or [])
        metadata = req.metadata or {}
        timestamp = iso(req.timestamp or now)
        doc: dict[str, Any] = {
            "id": memory_id or req.id or str(uuid.uuid4()),
            "bank": bank,
            "content": req.content,
            **derived_fields(tags, metadata),
            "type": mem_type,
            "importance": 0.5 if req.importance is None else req.importance,
            "confidence": confidence,
            "metadata": metadata,
            "timestamp": timestamp,
            "updated_at": iso_or_none(req.updated_at) or timestamp,
            "last_accessed": iso_or_none(req.last_accessed),
            "t_valid": iso_or_none(req.t_valid),
            "t_invalid": iso_or_none(req.t_invalid),
            "archived": bool(req.archived),
            "embedding_model": None if req.embedding is not None else self.embedder.short_name,  # POST /admin/reembed finds stale vectors by it
            "date_terms": memory_date_terms(req.content, stored_datetime(timestamp)),  # "yesterday" read against the timestamp
        }
        check_validity_window(doc["t_valid"], doc["t_invalid"], where)
        doc.update(req.surface_fields())
        # the thread (named, a Hindsight document's, or inferred from a stated timestamp); the linker adds its context at write time
        document_id = doc.get("document_id") or imported.get("document_id")
        doc.update(thread_position(without_derived(tags, enrichment), metadata, timestamp, document_id=document_id, stated=req.timestamp is not None,
                                   infer=self.settings.thread_infer_enabled))
        if req.relevance_score is not None:
            doc["relevance_score"] = req.relevance_score
        for name in ("who", "project", "pinned"):  # stored only when given: other documents stay as they were
            if getattr(req, name) is not None:
                doc[name] = getattr(req, name)
        if req.embedding is not None:
            doc["embedding"] = req.embedding
        return Prepared(doc["id"], doc, warnings)

    def _embed_missing(self, prepared: list[Prepared]) -> None:
        todo = [p for p in prepared if "embedding" not in p.doc]
        if not todo:
            return
        try:
            vectors = self._vectors([p.doc["content"] for p in todo])
        except EmbeddingError as exc:
            raise EngineUnavailable(f"embedding failed, nothing was stored: {exc}") from exc
        for p, vector in zip(todo, vectors):
            p.doc["embedding"] = vector

    # --- operations -------------------------------------------------------------------------------
    def create(self, bank: str, req: MemoryCreate, idempotency_key: str | None = None) -> Prepared:
        """Store one memory. With an Idempotency-Key (and no client id) the memory's id derives from
        the key and the write never overwrites, so a retried request stores once."""
        now = utcnow()
        old = self._superseded(bank, req)  # 404 before anything is embedded or written
        prepared = self.prepare(bank, req, now, memory_id=self._keyed_id(bank, req, idempotency_key))
        if old is not None and prepared.memory_id == req.supersedes:
            raise BadRequest("a memory cannot supersede itself")
        self._check_ids_free(bank, [prepared])
        self._embed_missing([prepared])
        keyed = idempotency_key is not None and req.id is None
        links = self.threads.link(bank, [(prepared.memory_id, prepared.doc)], fresh_ids=req.id is None and not keyed)
        if old is None:
            error = self.store.bulk_put([(prepared.memory_id, prepared.doc)], create=keyed)[0]
            if error is not None:
                self._settle(bank, prepared, error)
        else:
            self._store_superseding(bank, prepared, req, old, now, keyed=keyed)
        if not prepared.replayed:
            self.threads.settle(bank, links)
        return prepared

    @staticmethod
    def _keyed_id(bank: str, req: MemoryCreate, key: str | None, index: int | None = None) -> str | None:
        if req.id is not None or key is None:
            return req.id
        return idempotent_id(key, bank, index)

    def _settle(self, bank: str, prepared: Prepared, error: ItemError, where: str = "") -> None:
        """A keyed create that found its memory stored already: a retry (same content) answers as the
        first call did; another memory under the same key is a conflict. Any other error raises."""
        if not error.conflict:
            raise item_failure(error, f"{where}store memory", prepared.memory_id)
        stored = self.store.get(bank, prepared.memory_id)
        if stored is None or stored.get("content") != prepared.doc["content"]:
            raise Conflict(f"{where}Idempotency-Key was already used for a different memory ({prepared.memory_id})")
        prepared.doc = {**stored, "id": prepared.memory_id}
        prepared.replayed = True

    def _superseded(self, bank: str, req: MemoryCreate) -> dict[str, Any] | None:
        if req.supersedes is None:
            return None
        old = self.store.get(bank, req.supersedes) if valid_id(req.supersedes) else None
        if old is None:
            raise NotFound(f"Memory {req.supersedes} (supersedes) not found")
        return old

    def _store_superseding(self, bank: str, prepared: Prepared, req: MemoryCreate, old: dict[str, Any], now: datetime, *, keyed: bool) -> None:
        """`supersedes` (beyond AutoMem): the new memory, the old one's t_invalid and its supersession
        state in ONE bulk request on the memories index, then the edge old -> new. AutoMem's client
        needs three calls (store, PATCH, associate) that can half-fail. Every step is idempotent, so a
        keyed retry completes what a failed first attempt left undone."""
        assoc = Association(req.supersedes, prepared.memory_id, req.supersede_type or DEFAULT_SUPERSEDE_TYPE, SUPERSEDE_STRENGTH)
        entry, keep_at = supersession_entry(assoc, now)
        # t_invalid moves to now unless the old memory already expired earlier.
        current_invalid = stored_datetime(old.get("t_invalid"))
        t_invalid = iso(now) if current_invalid is None or current_invalid > now else None
        stored, superseded = self.store.bulk(
            bank,
            [
                {"_op_type": "create" if keyed else "index", "_index": self.store.alias, "_id": prepared.memory_id, "_source": prepared.doc},
                self.store.supersession_action(assoc.source_id, entry, keep_at=keep_at, t_invalid=t_invalid),
            ],
            "store superseding memory",
        )
        if stored is not None:
            self._settle(bank, prepared, stored)
        if superseded is not None:
            if superseded.missing:  # deleted since it was read: the new memory stands alone
                prepared.warnings.append(f"memory {req.supersedes} was deleted while this one was stored; nothing was superseded")
                return
            raise item_failure(superseded, "record supersession", req.supersedes)
        edge_error = self.edges.upsert_many(
            bank, [{"source_id": assoc.source_id, "target_id": assoc.target_id, "type": assoc.type, "strength": assoc.strength}], iso(now)
        )[0]
        if edge_error is not None:
            raise EngineUnavailable(
                f"memory stored and {assoc.source_id} superseded, but the {assoc.type} edge failed ({edge_error}); {MAYBE_APPLIED}"
            )
        if take_back_orphans(self.store, self.edges, bank, [assoc]):  # either memory was deleted meanwhile
            prepared.warnings.append(f"memory {req.supersedes} or this one was deleted while it was stored; nothing was superseded")

    def create_batch(self, bank: str, reqs: list[MemoryCreate], idempotency_key: str | None = None) -> tuple[list[Prepared], list[str | None]]:
        """All-or-nothing validation, one embedding batch, one bulk request; per-item write errors returned.
        With an Idempotency-Key, item i without a client id gets an id derived from (key, i)."""
        now = utcnow()
        if any(req.supersedes for req in reqs):
            raise BadRequest("supersedes is accepted by POST /memory only, one memory at a time")
        prepared = [
            self.prepare(bank, req, now, where=f"memories[{i}].", memory_id=self._keyed_id(bank, req, idempotency_key, i))
            for i, req in enumerate(reqs)
        ]
        ids = [p.memory_id for p in prepared]
        if len(set(ids)) != len(ids):
            raise BadRequest("memories: duplicate id in batch")
        self._check_ids_free(bank, prepared, lambda i: f"memories[{i}].")
        self._embed_missing(prepared)
        keyed = [idempotency_key is not None and req.id is None for req in reqs]
        links = self.threads.link(bank, [(p.memory_id, p.doc) for p in prepared], fresh_ids=not any(req.id is not None or k for req, k in zip(reqs, keyed)))
        # Keyed items never overwrite (create); the others upsert as before. One bulk request each.
        errors: list[str | None] = [None] * len(prepared)
        for create in (False, True):
            group = [i for i, k in enumerate(keyed) if k is create]
            outcomes = self.store.bulk_put([(prepared[i].memory_id, prepared[i].doc) for i in group], create=create) if group else []
            for i, outcome in zip(group, outcomes):
                if outcome is None:
                    continue
                if not create:
                    errors[i] = outcome.reason
                    continue
                try:
                    self._settle(bank, prepared[i], outcome, where=f"memories[{i}].")
                except EngramError as exc:
                    errors[i] = exc.message
        self.threads.settle(bank, links, failed=[p.memory_id for p, error in zip(prepared, errors) if error])
        return prepared, errors

    def update(self, bank: str, memory_id: str, req: MemoryUpdate) -> dict[str, Any]:
        """PATCH: validated like POST, embedded once, then a guarded read-modify-write: the derived
        fields are computed from the version the write is conditioned on, so two concurrent PATCHes
        (of tags and of metadata, say) never undo each other."""
        if not valid_id(memory_id):
            raise NotFound(f"Memory {memory_id} not found")
        self.validate(req, content=req.content, embedding=req.embedding)
        given = req.model_dump(exclude_unset=True)
        vector = req.embedding
        if vector is None and req.content is not None:
            if not self.store.existing(bank, [memory_id]):  # 404 before embedding anything
                raise NotFound(f"Memory {memory_id} not found")
            try:
                vector = self._vectors([req.content])[0]
            except EmbeddingError as exc:
                raise EngineUnavailable(f"embedding failed, nothing was changed: {exc}") from exc
        updated_at = iso(req.updated_at or utcnow())
        # The vector's model id (POST /admin/reembed finds stale vectors by it): none for a given vector.
        model_id = None if req.embedding is not None else self.embedder.short_name
        infer = self.settings.thread_infer_enabled

        def compute(current: dict[str, Any]) -> dict[str, Any]:
            changes = patch_changes(current, req, given, vector, updated_at, model_id, infer=infer)
            return {**changes, **req.surface_changes(current, changes)}

        current, changes = self.store.read_modify_write(bank, memory_id, compute)
        updated = {**current, **{k: v for k, v in changes.items() if k != "embedding"}}
        if any(updated.get(k) != current.get(k) for k in ("content", "thread_key", "thread_at")):
            self.threads.relink(bank, memory_id, updated)
        return updated

    def delete(self, bank: str, memory_id: str) -> None:
        if not valid_id(memory_id) or not self.store.delete(bank, memory_id):
            raise NotFound(f"Memory {memory_id} not found")
        self.forget_graph(bank, [memory_id])

    def delete_by_tags(self, bank: str, tags: list[str]) -> DeleteReport:
        """DELETE /memory/by-tag: the memories, their edges and the supersession state they caused, in
        chunks of DELETE_CHUNK ids (search_after pages), each chunk deleted and swept before the next
        is read: memory and request sizes stay bounded at any count (every per-chunk query stays
        far below the engine's terms and body limits)."""
        report = DeleteReport(matched=0, deleted=0)
        for chunk in self.store.id_pages(by_tags_query(bank, tags), DELETE_CHUNK):
            report.matched += len(chunk)
            deleted, edges, cleared = self.delete_many(bank, chunk)
            report.deleted += deleted
            report.edges_deleted += edges
            report.supersessions_cleared += cleared
        return report

    def delete_many(self, bank: str, ids: list[str]) -> tuple[int, int, int]:
        """Delete memories by id with their graph (forget_graph); (deleted, edges deleted, supersessions
        cleared). When some deletes fail (PartialDelete, a 503), the graph of those that went is
        forgotten all the same before the error is raised: no edge is left pointing at a deleted memory."""
        try:
            deleted = self.store.delete_ids(ids)
        except PartialDelete as exc:
            self.forget_graph(bank, [mid for mid in ids if mid not in exc.failed])
            raise
        return (deleted, *self.forget_graph(bank, ids))

    def forget_graph(self, bank: str, ids: list[str]) -> tuple[int, int]:
        """Edges live in the edges index only: a deleted memory takes its edges along, and memories it
        superseded become current again (their only reason to be suppressed is gone); then the thread
        context taken from it (a ranking aid, so last).
        Returns (edges deleted, memories whose supersession was cleared)."""
        if not ids:
            return 0, 0
        edges = self.edges.delete_touching(bank, ids)
        cleared = self.store.clear_supersessions(bank, ids)
        self.threads.forget(bank, ids)
        return edges, cleared


def patch_changes(
    current: dict[str, Any], req: MemoryUpdate, given: dict[str, Any], vector: list[float] | None, updated_at: str, model_id: str | None,
    *, infer: bool = True,
) -> dict[str, Any]:
    """The partial document a PATCH writes over `current` (pure; re-run if `current` moved on)."""
    changes: dict[str, Any] = {}
    if req.content is not None:
        changes["content"] = req.content
    if vector is not None:
        changes["embedding"], changes["embedding_model"] = vector, model_id
    if req.type is not None:
        changes["type"], _ = canonical_type(req.type)
    for name in ("importance", "confidence", "relevance_score", "archived"):
        if given.get(name) is not None:
            changes[name] = given[name]
    for name in ("who", "project", "pinned"):
        if name in given:  # an explicit null clears it
            changes[name] = given[name]
    if "tags" in given or "metadata" in given:
        tags = clean_tags(req.tags) if req.tags is not None else current.get("tags", [])
        metadata = req.metadata if "metadata" in given else current.get("metadata", {})
        changes.update(derived_fields(tags, metadata or {}))
        changes["metadata"] = metadata or {}
    for name in ("timestamp", "t_valid", "t_invalid", "last_accessed"):
        if name in given:  # an explicit null clears t_valid / t_invalid
            changes[name] = iso_or_none(given[name])
    if changes.get("timestamp") is None:
        changes.pop("timestamp", None)
    if "tags" in changes or "timestamp" in changes:  # the thread and the place in it (the linker re-links)
        # A timestamp is stated when this PATCH gives it, or when the stored one already put the memory in a burst.
        stated = "timestamp" in changes or inferred(current.get("thread_key"))
        # keyed on the caller's tags: enrichment's derived ones would move an enriched memory out of its burst
        tags = without_derived(changes.get("tags", current.get("tags") or []), current.get("enrichment") if isinstance(current.get("enrichment"), dict) else None)
        changes.update(thread_position(tags, changes.get("metadata", current.get("metadata") or {}),
                                       changes.get("timestamp", current.get("timestamp")), document_id=current.get("document_id"),
                                       stated=stated, infer=infer))
    if "content" in changes or "timestamp" in changes:
        changes["date_terms"] = memory_date_terms(changes.get("content", current.get("content")), stored_datetime(changes.get("timestamp", current.get("timestamp"))))
    check_validity_window(
        changes["t_valid"] if "t_valid" in changes else current.get("t_valid"),
        changes["t_invalid"] if "t_invalid" in changes else current.get("t_invalid"),
    )
    enrichment = enrichment_after_edit(current, [k for k, v in changes.items() if current.get(k) != v], updated_at)
    if enrichment is not None:
        changes["enrichment"] = enrichment
    changes["updated_at"] = updated_at
    return changes


@dataclass
class DeleteReport:
    matched: int
    deleted: int
    edges_deleted: int = 0
    supersessions_cleared: int = 0
