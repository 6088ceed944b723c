"""The one table of a stored memory's fields, and what each surface makes of them (pure).

Every field of index_templates/memories.json has one kind here (tests/unit/test_memory_codec.py
checks the table against the template), and everything that writes a stored memory out or reads
one back asks this table: the backup's nodes and points (service/admin/archive.py), restore, the
export lines and the importer (service/admin/records.py), and every response view (AutoMem's
public_memory and recall detail, Hindsight's and Signet's tags).

Kinds:
- scalar:     a string, number or boolean, or a list of them. Shown, exported, backed up as is.
- structured: an object or a list of objects (metadata, supersessions, enrichment). Shown and
              exported as JSON; a backup node holds it as a JSON string (FalkorDB holds no maps),
              decoded by restore, as the released code wrote them (so its backups restore).
- derived:    rebuilt by the write path from the fields above (tag_prefixes, entities, the
              supersession summary). Shown; never written out, so a line cannot contradict itself.
- hidden:     never shown and never written out as a field: the bank (the request's), the vector
              (it travels on its own channel: the backup's points, the export's `embedding`), the
              search keys the write path derives (tags_norm, metadata_terms) and the copy_to targets.
- index_only: ranking aids recall reads from _source (thread context, date terms): never shown. The
              thread's own order and context travel (the importer keeps them and links no
              threads); the keys the write path rebuilds do not.
- private:    a surface's own record of a memory (Hindsight's `curation`: its revisions, read by
              Hindsight's views alone): never shown by the generic views; travels as a structure.

Derived tags: the `entity:...` tags enrichment adds are recorded in `enrichment.derived_tags`;
`caller_tags` is the memory's tags without them — Hindsight's and Signet's `tags`. AutoMem's view
keeps them, as AutoMem's own enrichment merges them into the memory's tags (spec 003, Enrichment;
spec 001 entity expansion reads them back from results).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from service.memory.tags import normalize_tag


class Kind(str, Enum):
    SCALAR = "scalar"
    STRUCTURED = "structured"
    DERIVED = "derived"
    HIDDEN = "hidden"
    INDEX_ONLY = "index_only"
    PRIVATE = "private"


@dataclass(frozen=True)
class Field:
    kind: Kind
    portable: bool  # written by backup and export, read back by restore and import
    shape: type | None = None  # what a structured (or list) value must decode to

    @property
    def shown(self) -> bool:
        return self.kind in (Kind.SCALAR, Kind.STRUCTURED, Kind.DERIVED)


SCALAR = Field(Kind.SCALAR, True)
SCALAR_LIST = Field(Kind.SCALAR, True, list)
DERIVED = Field(Kind.DERIVED, False)
HIDDEN = Field(Kind.HIDDEN, False)

# Thread context (service/threads/): the thread, the place in it, and the predecessor's text.
THREAD_FIELDS: tuple[str, ...] = ("thread_key", "thread_at", "thread_seq", "thread_prev", "thread_context")
# The dates a memory speaks of and was written on (service/clock/terms.py).
DATE_FIELDS: tuple[str, ...] = ("date_terms",)
RANKING_FIELDS: tuple[str, ...] = (*THREAD_FIELDS, *DATE_FIELDS)

FIELDS: dict[str, Field] = {
    "id": SCALAR,
    "bank": HIDDEN,
    "content": SCALAR,
    "embedding": HIDDEN,
    "tags": SCALAR_LIST,
    "tags_norm": HIDDEN,
    "tag_prefixes": DERIVED,
    "tags_text": HIDDEN,  # copy_to target: never in _source
    "type": SCALAR,
    "importance": SCALAR,
    "confidence": SCALAR,
    "relevance_score": SCALAR,
    "timestamp": SCALAR,
    "updated_at": SCALAR,
    "last_accessed": SCALAR,
    "t_valid": SCALAR,
    "t_invalid": SCALAR,
    "archived": SCALAR,
    "superseded_by": DERIVED,
    "superseded_at": DERIVED,
    "supersede_type": DERIVED,
    "supersessions": Field(Kind.STRUCTURED, True, list),
    "metadata": Field(Kind.STRUCTURED, True, dict),
    "metadata_terms": HIDDEN,
    "metadata_terms_plain": HIDDEN,  # metadata_terms without entities (recall's tag component, from doc values)
    "content_stems": HIDDEN,  # the stems of content and thread context (recall's keyword component, from doc values:
    "context_stems": HIDDEN,  # service/memory/stems.py)
    "metadata_text": HIDDEN,  # copy_to target: never in _source
    "entities": DERIVED,
    "enrichment": Field(Kind.STRUCTURED, True, dict),
    "embedding_model": SCALAR,
    "who": SCALAR,
    "project": SCALAR,
    "pinned": SCALAR,
    "fact_type": SCALAR,
    "document_id": SCALAR,
    "chunk_id": SCALAR,
    "chunk_index": SCALAR,
    "context": SCALAR,
    "timeless": SCALAR,
    "thread_key": Field(Kind.INDEX_ONLY, False),
    "thread_at": Field(Kind.INDEX_ONLY, False),
    "thread_seq": Field(Kind.INDEX_ONLY, True),
    "thread_prev": Field(Kind.INDEX_ONLY, True),
    "thread_context": Field(Kind.INDEX_ONLY, True),
    "date_terms": Field(Kind.INDEX_ONLY, False),
    "curation": Field(Kind.PRIVATE, True, dict),  # service/api/hindsight/curation.py
}


def _primitive(value: Any) -> bool:
    if isinstance(value, (str, bool, int, float)):
        return True
    return isinstance(value, list) and all(isinstance(v, (str, bool, int, float)) for v in value)


def field_of(name: str, value: Any = None) -> Field:
    """The field's entry; a field the table does not know yet (added to the mapping by another part of
    the service) is scalar or structured by its value, and travels."""
    known = FIELDS.get(name)
    if known is not None:
        return known
    return SCALAR if value is None or _primitive(value) else Field(Kind.STRUCTURED, True)


NOT_SHOWN: frozenset[str] = frozenset(n for n, f in FIELDS.items() if not f.shown)
# Fields restore and import rebuild or set themselves: a record's value for them is ignored.
NOT_PORTABLE: frozenset[str] = frozenset(n for n, f in FIELDS.items() if not f.portable)
PORTABLE: frozenset[str] = frozenset(n for n, f in FIELDS.items() if f.portable)
# copy_to targets: indexed, never in _source.
COPY_TARGETS: tuple[str, ...] = ("tags_text", "metadata_text")
# What no reader of _source needs: the hidden fields but the bank, which the importer and the
# enrichment worker read to keep every memory in its own bank.
SOURCE_EXCLUDES: tuple[str, ...] = tuple(n for n, f in FIELDS.items() if f.kind is Kind.HIDDEN and n != "bank" and n not in COPY_TARGETS)
# --- views ------------------------------------------------------------------------------------------
def shown(source: Mapping[str, Any]) -> dict[str, Any]:
    """The stored memory as clients see it (AutoMem's view): every field but the hidden and index-only ones."""
    return {k: v for k, v in source.items() if k not in NOT_SHOWN}


def without_derived(tags: Iterable[str], enrichment: Mapping[str, Any] | None) -> list[str]:
    """`tags` without the ones an enrichment run recorded as its own."""
    derived = {normalize_tag(str(t)) for t in (enrichment or {}).get("derived_tags") or ()}
    return [t for t in tags if normalize_tag(str(t)) not in derived]


def caller_tags(source: Mapping[str, Any]) -> list[str]:
    """The memory's tags without those enrichment derived (Hindsight's and Signet's `tags`)."""
    enrichment = source.get("enrichment")
    return without_derived(source.get("tags") or [], enrichment if isinstance(enrichment, dict) else None)


# The stored enrichment states (service/enrichment writes them). "pending" is a mark: the worker's
# look every few seconds finds it, in this process or any other, after any restart.
ENRICHMENT_PENDING, ENRICHMENT_DONE, ENRICHMENT_FAILED = "pending", "done", "failed"
# What an enrichment run reads (service/enrichment/plan.py input_hash, derived fields): a write that
# changes one of these leaves the memory's entities and edges stale.
ENRICHMENT_INPUTS = frozenset({"content", "tags", "metadata", "timestamp"})


def enrichment_after_edit(source: Mapping[str, Any], changed: Iterable[str], updated_at: str) -> dict[str, Any] | None:
    """The `enrichment` record to write with an edit of an enriched memory (None: leave it as is). A
    change of its inputs marks it pending in the same write, so no restart can lose it. Any other edit
    (importance, pinned, ...) of a memory enriched as it stood moves the run's `source_updated_at`
    along with `updated_at`, so the first scans after a restart (plan.start_query: enriched, edited
    since its run) do not find it again."""
    enrichment = source.get("enrichment")
    if not isinstance(enrichment, dict) or not enrichment.get("status"):
        return None
    if not ENRICHMENT_INPUTS.isdisjoint(changed):
        return {**enrichment, "status": ENRICHMENT_PENDING}
    ran_on = enrichment.get("source_updated_at")
    if enrichment["status"] == ENRICHMENT_DONE and ran_on is not None and ran_on == source.get("updated_at"):
        return {**enrichment, "source_updated_at": updated_at}
    return None


# --- portable records (export lines, backup nodes) ----------------------------------------------------
def portable(source: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a stored memory that an export line or a backup node carries (no empty values)."""
    return {k: v for k, v in source.items() if v is not None and field_of(k, v).portable}


def encode_node(value: Any, name: str) -> Any:
    """A portable value as a FalkorDB node property: structures as JSON strings (in their stored key
    order: what is derived from it in that order, metadata_terms, comes back the same), the rest as is."""
    if field_of(name, value).kind in (Kind.STRUCTURED, Kind.PRIVATE) or not _primitive(value):
        return json.dumps(value, ensure_ascii=False)
    return value


class Undecodable(ValueError):
    pass


def decode(name: str, value: Any) -> Any:
    """A value read back from a backup node or point (structures possibly as JSON strings), checked
    against the field's shape; Undecodable names the field."""
    f = field_of(name, value)
    if f.shape is None:
        return value
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise Undecodable(f"{name} is neither {_article(f.shape)} nor a JSON string of one") from None
    if not isinstance(value, f.shape):
        raise Undecodable(f"{name} must be {_article(f.shape)}, got {type(value).__name__}")
    return value


def _article(shape: type) -> str:
    return "an object" if shape is dict else "a list"


def lone_surrogate(value: Any, where: str) -> str | None:
    """The path of the first string (key or value) in `value` that holds a lone surrogate, if any:
    such a string cannot be encoded as UTF-8, so storing it would break every later read."""
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if not item.isascii():
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError as exc:
                    return f"{path} (U+{ord(item[exc.start]):04X} at character {exc.start})"
        elif isinstance(item, dict):
            for key, inner in item.items():
                stack.append((key, f"{path} key"))
                stack.append((inner, f"{path}.{key}" if len(path) < 200 else path))
        elif isinstance(item, list):
            stack.extend((inner, f"{path}[{i}]") for i, inner in enumerate(item))
    return None


# --- memory ids inside a memory ----------------------------------------------------------------------
# A consolidation summary (type MetaPattern) lists the memories it summarises in its metadata.
SUMMARY_TYPE = "MetaPattern"


def remap_ids(record: Mapping[str, Any], new_id: Callable[[str], str]) -> dict[str, Any]:
    """The record with its id and every memory id it holds rewritten by `new_id`: its supersessions'
    `by`, its thread predecessor, enrichment's `preceded_by`, a summary's member ids."""
    out = dict(record)
    for name in ("id", "thread_prev"):
        if isinstance(out.get(name), str):
            out[name] = new_id(out[name])
    if isinstance(out.get("supersessions"), list):
        out["supersessions"] = [{**e, "by": new_id(e["by"])} if isinstance(e, dict) and isinstance(e.get("by"), str) else e
                                for e in out["supersessions"]]
    enrichment = out.get("enrichment")
    if isinstance(enrichment, dict) and isinstance(enrichment.get("preceded_by"), str):
        out["enrichment"] = {**enrichment, "preceded_by": new_id(enrichment["preceded_by"])}
    metadata = out.get("metadata")
    summary = metadata.get("consolidation") if out.get("type") == SUMMARY_TYPE and isinstance(metadata, dict) else None
    if isinstance(summary, dict) and isinstance(summary.get("member_ids"), list):
        members = [new_id(m) if isinstance(m, str) else m for m in summary["member_ids"]]
        out["metadata"] = {**metadata, "consolidation": {**summary, "member_ids": members}}
    return out
