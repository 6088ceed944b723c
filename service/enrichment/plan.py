"""What enrichment writes, planned by pure functions: derived fields, system edges, engine queries.

No I/O here: the worker reads, calls these, and writes. Derived tags and metadata keys are
recorded on the memory (`enrichment.derived_tags`, `enrichment.derived_metadata_keys`), so a later
run removes exactly what an earlier run added and a caller's own tags and keys are never touched.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from service.enrichment.extractor import EXTRACTION_RULES, entity_tags
from service.memory import codec
from service.memory.tags import normalize_tag
from service.threads.plan import MAX_KEY, thread_key
from service.clock.instants import stored_datetime
from service.writes.writer import derived_fields

SIMILAR_TO = "SIMILAR_TO"
PRECEDED_BY = "PRECEDED_BY"
# A scope key longer than this is cut: it is a keyword, and ids that long are not thread ids.
MAX_SCOPE = MAX_KEY
STATUS_PENDING, STATUS_DONE, STATUS_FAILED = codec.ENRICHMENT_PENDING, codec.ENRICHMENT_DONE, codec.ENRICHMENT_FAILED


def caller_tags(tags: Iterable[str], enrichment: Mapping[str, Any] | None) -> list[str]:
    """The memory's tags without the ones an earlier enrichment added (the one rule: service/memory/codec.py)."""
    return codec.without_derived(tags, enrichment)


def caller_metadata(metadata: Mapping[str, Any] | None, enrichment: Mapping[str, Any] | None) -> dict[str, Any]:
    """The memory's metadata without the keys an earlier enrichment wrote — a key counts as derived
    only while it still holds the value written, so a caller who PATCHed it since owns it."""
    written = (enrichment or {}).get("derived_metadata") or {}
    return {k: v for k, v in (metadata or {}).items() if not (k in written and written[k] == v)}


def scope_key(tags: Sequence[str], metadata: Mapping[str, Any]) -> str:
    """The sequence a memory belongs to for PRECEDED_BY: its thread (metadata session_id /
    conversation_id / thread_id, else a `session:` / `conversation:` tag), else its exact set of
    caller tags ("tags:<hash>"; untagged memories share "tags:")."""
    thread = thread_key(tags, metadata)  # the same threads as the thread context (service/threads)
    if thread is not None:
        return thread
    names = sorted({normalize_tag(t) for t in tags})
    return "tags:" + (hashlib.sha1("\n".join(names).encode("utf-8", "surrogatepass")).hexdigest()[:20] if names else "")


def input_hash(content: str, tags: Sequence[str], scope: str, timestamp: str | None) -> str:
    """What a run's result depends on: the content (entities, neighbours), the caller's tags,
    the scope and the timestamp (the memory's place in its sequence)."""
    parts = [content or "", "\x1f".join(sorted(normalize_tag(t) for t in tags)), scope, str(timestamp or "")]
    return hashlib.sha1("\x1e".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Subject:
    """One memory as read for enrichment."""

    id: str
    source: dict[str, Any]
    vector: list[float] | None
    seq_no: int
    primary_term: int

    @property
    def enrichment(self) -> dict[str, Any]:
        value = self.source.get("enrichment")
        return value if isinstance(value, dict) else {}

    @property
    def tags(self) -> list[str]:
        return caller_tags(self.source.get("tags") or [], self.enrichment)

    @property
    def metadata(self) -> dict[str, Any]:
        metadata = self.source.get("metadata")
        return caller_metadata(metadata if isinstance(metadata, dict) else {}, self.enrichment)

    @property
    def scope(self) -> str:
        return scope_key(self.tags, self.metadata)

    @property
    def timestamp(self) -> str | None:
        return self.source.get("timestamp")

    @property
    def fingerprint(self) -> str:
        return input_hash(self.source.get("content") or "", self.tags, self.scope, self.timestamp)

    def up_to_date(self) -> bool:
        """Enriched for these inputs, and its derived fields are all still there (a PATCH of tags
        or metadata may have replaced them)."""
        e = self.enrichment
        if e.get("status") != STATUS_DONE or e.get("input_hash") != self.fingerprint:
            return False
        have = {normalize_tag(t) for t in self.source.get("tags") or []}
        metadata = self.source.get("metadata") if isinstance(self.source.get("metadata"), dict) else {}
        written = e.get("derived_metadata") or {}
        return all(normalize_tag(t) in have for t in e.get("derived_tags") or ()) and all(metadata.get(k) == v for k, v in written.items())


def enriched_document(subject: Subject, entities: dict[str, list[str]], *, now: str, attempts: int, forced: bool,
                      similar: int, preceded_by: str | None) -> dict[str, Any]:
    """The memory's whole new _source (vector not included): caller fields as read, derived ones
    replaced. Entity tags the caller already has are not recorded as derived; metadata.entities is
    written only when the caller has no `entities` key of their own."""
    source = subject.source
    tags = subject.tags
    have = {normalize_tag(t) for t in tags}
    added = [t for t in entity_tags(entities) if normalize_tag(t) not in have]
    metadata = subject.metadata
    derived_keys = []
    if entities and "entities" not in metadata:
        metadata = {**metadata, "entities": entities}
        derived_keys.append("entities")
    doc = {k: v for k, v in source.items() if k != "embedding"}
    doc.update(derived_fields(tags + added, metadata))
    doc["metadata"] = metadata
    doc["enrichment"] = {
        "status": STATUS_DONE, "attempts": attempts, "last_error": None, "last_error_at": None, "enriched_at": now, "rules": EXTRACTION_RULES,
        "input_hash": subject.fingerprint, "source_updated_at": source.get("updated_at"), "forced": forced,
        "derived_tags": added, "derived_metadata_keys": derived_keys,
        "derived_metadata": {k: metadata[k] for k in derived_keys}, "scope": subject.scope,
        "sequence_at": subject.timestamp, "entity_count": sum(len(v) for v in entities.values()),
        "similar_count": similar, "preceded_by": preceded_by,
    }
    return doc


def reprocess_mark() -> dict[str, Any]:
    """The partial update that marks a memory for enrichment again, changed or not (POST
    /enrichment/reprocess, `engram reenrich`): `pending_query` finds it, and the worker runs it forced."""
    return {"enrichment": {"status": STATUS_PENDING, "forced": True}}


def failure_state(enrichment: Mapping[str, Any] | None, *, attempts: int, error: str, now: str, final: bool) -> dict[str, Any]:
    """The partial `enrichment` object written after a failed attempt (derived-field records kept)."""
    return {**(enrichment or {}), "status": STATUS_FAILED if final else STATUS_PENDING, "attempts": attempts,
            "last_error": error[:500], "last_error_at": now}


# --- queries ---------------------------------------------------------------------------------------
def bank_filter(bank: str | None) -> list[dict]:
    """The bank clause of a query; none when the worker looks at every bank (None)."""
    return [] if bank is None else [{"term": {"bank": bank}}]


def pending_query(bank: str | None) -> dict:
    """Memories still to enrich (of one bank, or of every bank with None): never enriched, or marked
    pending (a PATCH of their inputs, reprocess, `engram reenrich`, a retry). Term lookups only,
    cheap at any size: the idle worker runs it every few seconds."""
    return {"bool": {"filter": bank_filter(bank), "should": [
        {"bool": {"must_not": [{"exists": {"field": "enrichment.status"}}]}},
        {"term": {"enrichment.status": STATUS_PENDING}},
    ], "minimum_should_match": 1}}


def marked_query(bank: str) -> dict:
    """The bank's memories marked pending (`engram reenrich --wait` counts them down): not those never
    enriched, which memories written since the marking are."""
    return {"bool": {"filter": [*bank_filter(bank), {"term": {"enrichment.status": STATUS_PENDING}}]}}


def start_query(bank: str | None) -> dict:
    """What a worker's first scans look for: pending_query's memories, and enriched ones edited since
    their run that no mark says so: stores written before an edit marked its memory, or moved the
    run's `source_updated_at` along with an edit of other fields (codec.enrichment_after_edit). A
    script over every enriched memory: run until caught up, then pending_query alone (jobs.ScanSchedule)."""
    edited = {"script": {"script": {"lang": "painless", "source": (
        "if (doc['updated_at'].size() == 0) { return false; } "
        "if (doc['enrichment.source_updated_at'].size() == 0) { return true; } "
        "return doc['updated_at'].value.toInstant().toEpochMilli() != doc['enrichment.source_updated_at'].value.toInstant().toEpochMilli();"
    )}}}
    query = pending_query(bank)
    query["bool"]["should"].append({"bool": {"filter": [{"term": {"enrichment.status": STATUS_DONE}}, edited]}})
    return query


def read_body(bank: str | None, ids: Sequence[str], vector_script: str) -> dict:
    """The memories to enrich with their versions and vectors, in one search (one snapshot); of any
    bank with None (each is then enriched within its own bank)."""
    return {
        "size": len(ids), "seq_no_primary_term": True, "_source": {"excludes": ["embedding"]},
        "query": {"bool": {"filter": [*bank_filter(bank), {"ids": {"values": list(ids)}}]}},
        "script_fields": {"embedding": {"script": {"source": vector_script}}},
    }


def knn_body(bank: str, memory_id: str, vector: Sequence[float], k: int, excluded_types: Sequence[str]) -> dict:
    """Nearest neighbours of one memory (itself excluded inside the engine's filtered kNN)."""
    must_not: list[dict] = [{"ids": {"values": [memory_id]}}]
    if excluded_types:
        must_not.append({"terms": {"type": list(excluded_types)}})
    flt = {"bool": {"filter": [{"term": {"bank": bank}}], "must_not": must_not}}
    return {"size": k, "_source": False, "query": {"knn": {"embedding": {"vector": list(vector), "k": k, "filter": flt}}}}


def cosine(score: float) -> float:
    """Lucene's cosinesimil score is (1 + cos) / 2; AutoMem's threshold is on the cosine itself."""
    return max(-1.0, min(1.0, 2.0 * float(score) - 1.0))


def similar_edges(memory_id: str, hits: Sequence[dict], threshold: float, limit: int) -> list[dict]:
    """SIMILAR_TO both ways to the `limit` nearest neighbours at or above `threshold`
    (AutoMem link_semantic_neighbors: both directions, strength = similarity)."""
    out = []
    for hit in hits:
        if len(out) >= 2 * limit:
            break
        sim = round(cosine(hit.get("_score") or 0.0), 6)
        if hit["_id"] == memory_id or sim < threshold:
            continue
        for a, b in ((memory_id, hit["_id"]), (hit["_id"], memory_id)):
            out.append({"source_id": a, "target_id": b, "type": SIMILAR_TO, "strength": sim, "properties": {"score": sim}})
    return out


def neighbour_body(bank: str, scope: str, timestamp: str, memory_id: str, exclude: Sequence[str], *, before: bool) -> dict:
    """The enriched member of `scope` just before (or after) (timestamp, id), excluding `exclude`."""
    op, order = ("lt", "desc") if before else ("gt", "asc")
    return {
        "size": 1, "_source": ["timestamp"],
        "query": {"bool": {
            "filter": [{"term": {"bank": bank}}, {"term": {"enrichment.scope": scope}}],
            "must_not": [{"ids": {"values": list(exclude)}}],
            "should": [{"range": {"timestamp": {op: timestamp}}},
                       {"bool": {"filter": [{"term": {"timestamp": timestamp}}, {"range": {"id": {op: memory_id}}}]}}],
            "minimum_should_match": 1,
        }},
        "sort": [{"timestamp": order}, {"id": order}],
    }


def order_key(memory_id: str, timestamp: str | None) -> tuple:
    at = stored_datetime(timestamp)
    return (at.timestamp() if at else float("-inf"), memory_id)


@dataclass(frozen=True)
class Member:
    id: str
    scope: str
    timestamp: str | None


def plan_sequences(batch: Sequence[Member], before: Mapping[str, Member | None], after: Mapping[str, Member | None]) -> tuple[list[tuple[str, str]], list[str]]:
    """PRECEDED_BY links for a batch: (later, earlier) pairs and the already-enriched memories whose
    outgoing PRECEDED_BY must be replaced. `before` / `after` give, per batch member, the enriched
    member of its scope just before / after it (outside the batch). Merging them with the batch in
    (timestamp, id) order gives every batch member its immediate predecessor, and re-points a later
    memory enriched earlier (out of order) to the batch member now in front of it."""
    links: dict[str, str] = {}
    repoint: list[str] = []
    scopes: dict[str, dict[str, Member]] = {}
    for m in batch:
        group = scopes.setdefault(m.scope, {})
        group[m.id] = m
        for neighbour in (before.get(m.id), after.get(m.id)):
            if neighbour is not None:
                group.setdefault(neighbour.id, neighbour)
    batch_ids = {m.id for m in batch}
    for group in scopes.values():
        ordered = sorted(group.values(), key=lambda m: order_key(m.id, m.timestamp))
        for prev, cur in zip(ordered, ordered[1:]):
            if cur.id in batch_ids or prev.id in batch_ids:
                links[cur.id] = prev.id
                if cur.id not in batch_ids:
                    repoint.append(cur.id)
    return sorted(links.items()), sorted(set(repoint))


def preceded_edges(links: Sequence[tuple[str, str]]) -> list[dict]:
    """AutoMem find_temporal_relationships: (later)-[:PRECEDED_BY]->(earlier), with a count."""
    return [{"source_id": a, "target_id": b, "type": PRECEDED_BY, "strength": 1.0, "properties": {"count": 1}} for a, b in links]


def stale_edges_query(similar_of: Sequence[str], preceded_from: Sequence[str]) -> dict | None:
    """Edges a new run replaces: SIMILAR_TO touching re-enriched memories, PRECEDED_BY leaving
    re-enriched or re-pointed ones."""
    should: list[dict] = []
    if similar_of:
        ids = list(similar_of)
        should.append({"bool": {"filter": [{"term": {"type": SIMILAR_TO}}], "should": [{"terms": {"source_id": ids}}, {"terms": {"target_id": ids}}], "minimum_should_match": 1}})
    if preceded_from:
        should.append({"bool": {"filter": [{"term": {"type": PRECEDED_BY}}, {"terms": {"source_id": list(preceded_from)}}]}})
    return {"bool": {"should": should, "minimum_should_match": 1}} if should else None


def older_rules_query(bank: str | None) -> dict:
    """Memories enriched under an older edition of the extractor's rules (or before editions were
    recorded): `engram reenrich` redoes them."""
    return {"bool": {"filter": [*bank_filter(bank), {"term": {"enrichment.status": STATUS_DONE}}],
                     "must_not": [{"range": {"enrichment.rules": {"gte": EXTRACTION_RULES}}}]}}


def status_counts_body(bank: str) -> dict:
    """Stored enrichment states in one aggregation request (memories never enriched count as pending),
    and how many of the bank's memories an older edition of the rules enriched."""
    return {"size": 0, "query": {"term": {"bank": bank}}, "aggs": {
        "state": {"filters": {"filters": {
            "pending": pending_query(bank),
            "done": {"term": {"enrichment.status": STATUS_DONE}},
            "failed": {"term": {"enrichment.status": STATUS_FAILED}},
        }}},
        "older_rules": {"filter": older_rules_query(bank)},
    }}


def status_counts(resp: Mapping[str, Any]) -> dict[str, Any]:
    """`status_counts_body`'s answer as GET /enrichment/status shows it: `stored` by state, `older_rules`."""
    aggs = resp.get("aggregations", {})
    return {"stored": {name: int(b.get("doc_count", 0)) for name, b in aggs.get("state", {}).get("buckets", {}).items()},
            "older_rules": int(aggs.get("older_rules", {}).get("doc_count", 0))}
