"""The memory write path: validate, classify, embed, build the stored document, write.

The stored document carries derived fields (tags_norm, tag_prefixes, metadata_terms, entities)
so that recall filters are exact `term`/`terms` lookups inside OpenSearch.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from scoring.components import metadata_terms
from service.config import Settings
from service.embedding import Embedder, EmbeddingError
from service.errors import BadRequest, EngineUnavailable, NotFound
from service.memory_types import EXPLICIT_TYPE_CONFIDENCE, classify, normalize_type
from service.relations import Association, supersession_entry
from service.schemas.memory import ID_PATTERN, MemoryCreate, MemoryUpdate
from service.storage.edges import EdgeStore
from service.storage.memories import MemoryStore, by_tags_query
from service.tags import clean_tags, entity_names, normalize_tag, tag_prefixes
from service.timeparse import iso, parse_iso_datetime

_ID_RE = re.compile(ID_PATTERN)
# POST /memory `supersedes` (issue 4): EVOLVED_INTO unless `supersede_type` says INVALIDATED_BY; the
# client states the replacement outright, so the edge is at full strength.
DEFAULT_SUPERSEDE_TYPE = "EVOLVED_INTO"
SUPERSEDE_STRENGTH = 1.0


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def valid_id(memory_id: str) -> bool:
    return bool(_ID_RE.match(memory_id))


def _iso_field(name: str, value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return iso(parse_iso_datetime(value))
    except ValueError as exc:
        raise BadRequest(f"Invalid {name}: {exc}") from exc


def derived_fields(tags: list[str], metadata: dict[str, Any]) -> dict[str, Any]:
    return {
        "tags": tags,
        "tags_norm": sorted({normalize_tag(t) for t in tags}),
        "tag_prefixes": tag_prefixes(tags),
        "metadata_terms": metadata_terms(metadata),
        "entities": entity_names(tags, metadata),
    }


@dataclass
class Prepared:
    memory_id: str
    doc: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


class MemoryWriter:
    def __init__(self, settings: Settings, store: MemoryStore, edges: EdgeStore, embedder: Embedder):
        self.settings = settings
        self.store = store
        self.edges = edges
        self.embedder = embedder

    # --- validation shared by single and batch writes ------------------------------------------
    def _check_content(self, content: str, where: str = "") -> None:
        limit = self.settings.memory_content_max
        if len(content) > limit:
            raise BadRequest(f"{where}content is {len(content)} characters; the maximum is {limit} (MEMORY_CONTENT_MAX)")

    def check_embedding(self, vector: list[float] | None, where: str = "") -> None:
        if vector is not None and len(vector) != self.embedder.dimension:
            raise BadRequest(f"{where}embedding must have exactly {self.embedder.dimension} values, got {len(vector)}")

    def prepare(self, req: MemoryCreate, now: datetime, where: str = "") -> Prepared:
        self._check_content(req.content, where)
        self.check_embedding(req.embedding, where)
        warnings: list[str] = []
        if req.type is not None:
            mem_type, warning = normalize_type(req.type)
            if warning:
                warnings.append(f"{where}{warning}")
            # spec 001: type and confidence given -> as given; type only -> 0.9
            confidence = req.confidence if req.confidence is not None else EXPLICIT_TYPE_CONFIDENCE
        else:
            mem_type, classified = classify(req.content)
            confidence = classified if req.confidence is None else req.confidence
        tags = clean_tags(req.tags or [])
        metadata = req.metadata or {}
        timestamp = _iso_field(f"{where}timestamp", req.timestamp) or iso(now)
        doc: dict[str, Any] = {
            "id": req.id or str(uuid.uuid4()),
            "bank": self.settings.default_bank,
            "content": req.content,
            **derived_fields(tags, metadata),
            "type": mem_type,
            "importance": 0.5 if req.importance is None else req.importance,
            "confidence": confidence,
            "metadata": metadata,
            "timestamp": timestamp,
            "updated_at": _iso_field(f"{where}updated_at", req.updated_at) or timestamp,
            "last_accessed": _iso_field(f"{where}last_accessed", req.last_accessed),
            "t_valid": _iso_field(f"{where}t_valid", req.t_valid),
            "t_invalid": _iso_field(f"{where}t_invalid", req.t_invalid),
            "archived": bool(req.archived),
            "embedding_model": None if req.embedding is not None else self.embedder.short_name,  # POST /admin/reembed finds stale vectors by it
        }
        if req.relevance_score is not None:
            doc["relevance_score"] = req.relevance_score
        if req.embedding is not None:
            doc["embedding"] = req.embedding
        return Prepared(doc["id"], doc, warnings)

    def _embed_missing(self, prepared: list[Prepared]) -> None:
        todo = [p for p in prepared if "embedding" not in p.doc]
        if not todo:
            return
        try:
            vectors = self.embedder.embed_documents([p.doc["content"] for p in todo])
        except EmbeddingError as exc:
            raise EngineUnavailable(f"embedding failed, nothing was stored: {exc}") from exc
        for p, vector in zip(todo, vectors):
            p.doc["embedding"] = vector

    # --- operations -------------------------------------------------------------------------------
    def create(self, req: MemoryCreate) -> Prepared:
        now = utcnow()
        old = self._superseded(req)  # 404 before anything is embedded or written
        prepared = self.prepare(req, now)
        if old is not None and prepared.memory_id == req.supersedes:
            raise BadRequest("a memory cannot supersede itself")
        self._embed_missing([prepared])
        if old is None:
            self.store.put(prepared.memory_id, prepared.doc)
        else:
            self._store_superseding(prepared, req, old, now)
        return prepared

    def _superseded(self, req: MemoryCreate) -> dict[str, Any] | None:
        if req.supersedes is None:
            return None
        old = self.store.get(req.supersedes) if valid_id(req.supersedes) else None
        if old is None:
            raise NotFound(f"Memory {req.supersedes} (supersedes) not found")
        return old

    def _store_superseding(self, prepared: Prepared, req: MemoryCreate, old: dict[str, Any], now: datetime) -> None:
        """`supersedes` (issue 4, beyond AutoMem): the new memory, the old one's t_invalid and its
        supersession state in ONE bulk request on the memories index, then the edge old -> new.
        AutoMem's client needs three calls (store, PATCH, associate) that can half-fail."""
        assoc = Association(req.supersedes, prepared.memory_id, req.supersede_type or DEFAULT_SUPERSEDE_TYPE, SUPERSEDE_STRENGTH)
        entry, keep_at = supersession_entry(assoc, now)
        # t_invalid moves to now unless the old memory already expired earlier.
        current_invalid = parse_iso_datetime(old["t_invalid"]) if old.get("t_invalid") else None
        t_invalid = iso(now) if current_invalid is None or current_invalid > now else None
        errors = self.store.bulk(
            [
                {"_op_type": "index", "_index": self.store.alias, "_id": prepared.memory_id, "_source": prepared.doc},
                self.store.supersession_action(assoc.source_id, entry, keep_at=keep_at, t_invalid=t_invalid),
            ],
            "store superseding memory",
        )
        if any(errors):
            raise EngineUnavailable(f"superseding write failed: {'; '.join(e for e in errors if e)}")
        edge_errors = self.edges.upsert_many(
            [{"source_id": assoc.source_id, "target_id": assoc.target_id, "type": assoc.type, "strength": assoc.strength}], iso(now)
        )
        if edge_errors[0]:
            raise EngineUnavailable(f"memory stored and {assoc.source_id} superseded, but the {assoc.type} edge failed: {edge_errors[0]}")

    def create_batch(self, reqs: list[MemoryCreate]) -> tuple[list[Prepared], list[str | None]]:
        """All-or-nothing validation, one embedding batch, one bulk request; per-item write errors returned."""
        now = utcnow()
        if any(req.supersedes for req in reqs):
            raise BadRequest("supersedes is accepted by POST /memory only, one memory at a time")
        prepared = [self.prepare(req, now, where=f"memories[{i}].") for i, req in enumerate(reqs)]
        ids = [p.memory_id for p in prepared]
        if len(set(ids)) != len(ids):
            raise BadRequest("memories: duplicate id in batch")
        self._embed_missing(prepared)
        errors = self.store.bulk_put([(p.memory_id, p.doc) for p in prepared])
        return prepared, errors

    def update(self, memory_id: str, req: MemoryUpdate) -> dict[str, Any]:
        current = self.store.get(memory_id) if valid_id(memory_id) else None
        if current is None:
            raise NotFound(f"Memory {memory_id} not found")
        changes: dict[str, Any] = {}
        given = req.model_dump(exclude_unset=True)
        if "content" in given and req.content is not None:
            self._check_content(req.content)
            changes["content"] = req.content
            if req.embedding is None:
                changes["embedding_model"] = self.embedder.short_name
                try:
                    changes["embedding"] = self.embedder.embed_documents([req.content])[0]
                except EmbeddingError as exc:
                    raise EngineUnavailable(f"embedding failed, nothing was changed: {exc}") from exc
        if req.embedding is not None:
            self.check_embedding(req.embedding)
            changes["embedding"], changes["embedding_model"] = req.embedding, None
        if "type" in given and req.type is not None:
            changes["type"], _ = normalize_type(req.type)
        for name in ("importance", "confidence", "relevance_score", "archived"):
            if name in given and given[name] is not None:
                changes[name] = given[name]
        if "tags" in given or "metadata" in given:
            tags = clean_tags(req.tags) if req.tags is not None else current.get("tags", [])
            metadata = req.metadata if "metadata" in given else current.get("metadata", {})
            changes.update(derived_fields(tags, metadata or {}))
            changes["metadata"] = metadata or {}
        for name in ("timestamp", "t_valid", "t_invalid", "last_accessed"):
            if name in given:  # an explicit null clears t_valid / t_invalid
                changes[name] = _iso_field(name, given[name])
        if changes.get("timestamp") is None:
            changes.pop("timestamp", None)
        changes["updated_at"] = _iso_field("updated_at", req.updated_at) or iso(utcnow())
        self.store.update(memory_id, changes)
        return {**current, **{k: v for k, v in changes.items() if k != "embedding"}}

    def delete(self, memory_id: str) -> None:
        if not valid_id(memory_id) or not self.store.delete(memory_id):
            raise NotFound(f"Memory {memory_id} not found")
        self._forget_graph([memory_id])

    def delete_by_tags(self, tags: list[str]) -> tuple[int, int]:
        """DELETE /memory/by-tag: the memories, their edges and the supersession state they caused.
        Returns (memories deleted, edges deleted)."""
        ids = self.store.ids_matching(by_tags_query(self.settings.default_bank, tags))
        deleted = self.store.delete_ids(ids)
        return deleted, self._forget_graph(ids)

    def _forget_graph(self, ids: list[str]) -> int:
        """Edges live in the edges index only: a deleted memory takes its edges along, and memories it
        superseded become current again (their only reason to be suppressed is gone)."""
        if not ids:
            return 0
        edges = self.edges.delete_touching(ids)
        self.store.clear_supersessions(ids)
        return edges
