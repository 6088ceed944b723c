"""AutoMem's backup archive layout, pure: member names, node / point / relationship shapes both ways.

`automem-backup-<ts>.tar.gz` holds `falkordb/falkordb_<ts>.json.gz` —
`{timestamp, graph_name, nodes: [{id: int, labels, properties}], relationships: [{source_id: int,
type, target_id: int, properties}], stats: {node_count, relationship_count}}` — and
`qdrant/qdrant_<ts>.json.gz` — `{timestamp, collection_name, points: [{id, vector, payload}],
stats: {points_count, vector_size}}` — as AutoMem's `GET /backup` and scripts/backup_automem.py
write them and scripts/restore_from_backup.py reads them. We add `manifest.json` (counts, sha256
of each member, model, vector size, bank); AutoMem's restore ignores it.

Node properties are what FalkorDB can hold: strings, numbers, booleans and lists of them, so
`metadata` is a JSON string as AutoMem stores it, and so are our `supersessions` and `curation`. Relationship
ends are the nodes' integer ids, which map to `nodes[].properties.id` (the memory id).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from service.admin.records import DERIVED
from service.errors import BadRequest

VALID_INCLUDES = ("falkordb", "qdrant")
MANIFEST = "manifest.json"
FORMAT = "engram-backup"
FORMAT_VERSION = 1
MEMORY_LABEL = "Memory"
# AutoMem's Qdrant payload (automem/api/memory.py store); we add the validity fields and archived.
PAYLOAD_FIELDS = ("content", "tags", "tag_prefixes", "importance", "timestamp", "type", "confidence", "updated_at",
                  "last_accessed", "metadata", "t_valid", "t_invalid", "archived")
# Node and payload properties that are ours to rebuild or to set (never counted as lost).
REBUILT = DERIVED | {"tag_prefixes"}
# Stored fields a Memory node leaves out: the vector (the Qdrant points hold it) and what restore's
# write path rebuilds. A thread's order and context (thread_seq / thread_prev / thread_context)
# stay, as in export lines: the importer keeps them and does not link threads.
NOT_IN_BACKUP = frozenset({"embedding", "bank", "tags_norm", "metadata_terms", "entities", "superseded_at", "superseded_by", "supersede_type",
                           "thread_key", "thread_at", "date_terms"})


def parse_include(raw: str | None) -> tuple[str, ...]:
    """`include=falkordb,qdrant` (both when absent), as AutoMem's parse_backup_include."""
    if raw is None:
        return VALID_INCLUDES
    parts = [p.strip().lower() for p in raw.split(",")]
    includes = tuple(i for i in VALID_INCLUDES if i in parts)
    if not includes or any(not p or p not in VALID_INCLUDES for p in parts):
        raise BadRequest(f"include must be a comma-separated subset of: {','.join(VALID_INCLUDES)}")
    return includes


def timestamp(now: datetime) -> str:
    return now.strftime("%Y%m%d_%H%M%S")


def archive_name(ts: str) -> str:
    return f"automem-backup-{ts}.tar.gz"


def member_name(service: str, ts: str) -> str:
    return f"{service}/{service}_{ts}.json.gz"


def _primitive(value: Any) -> bool:
    if isinstance(value, (str, bool, int, float)):
        return True
    return isinstance(value, list) and all(isinstance(v, (str, bool, int, float)) for v in value)


def node_properties(memory_id: str, source: Mapping[str, Any]) -> dict[str, Any]:
    """A memory as a FalkorDB Memory node's properties (AutoMem's names; structures as JSON strings)."""
    props: dict[str, Any] = {"id": memory_id}
    for key, value in source.items():
        if key in NOT_IN_BACKUP or value is None:
            continue
        if key == "metadata" or not _primitive(value):
            props[key] = json.dumps(value, ensure_ascii=False, sort_keys=True)
        else:
            props[key] = value
    return props


def point(memory_id: str, source: Mapping[str, Any], vector: Sequence[float]) -> dict[str, Any]:
    payload = {k: source[k] for k in PAYLOAD_FIELDS if source.get(k) is not None}
    return {"id": memory_id, "vector": list(vector), "payload": payload}


def relationship(source_node: int, target_node: int, edge: Mapping[str, Any]) -> dict[str, Any]:
    props = dict(edge.get("properties") or {})
    props.update({k: edge[k] for k in ("strength", "created_at", "updated_at") if edge.get(k) is not None})
    return {"source_id": source_node, "type": edge["type"], "target_id": target_node, "properties": props}


def _decoded(value: Any, kind: type) -> Any:
    """A structure stored as a JSON string (AutoMem's metadata, our supersessions), or as it is."""
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except ValueError:
            return None
        return decoded if isinstance(decoded, kind) else None
    return value if isinstance(value, kind) else None


def memory_record(props: Mapping[str, Any], fields: frozenset[str], payload: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], list[str]]:
    """An import record from a Memory node's properties (falling back on the Qdrant payload for what
    the node lacks), and the names of the properties our model has no place for."""
    merged = {**(payload or {}), **props}
    record: dict[str, Any] = {}
    unmapped: list[str] = []
    for key, value in merged.items():
        if value is None or key in REBUILT:
            continue
        if key == "metadata":
            decoded = _decoded(value, dict)
            if decoded is None:
                unmapped.append("metadata")
            else:
                record["metadata"] = decoded
        elif key == "tags":
            tags = _decoded(value, list)
            record["tags"] = [str(t) for t in tags or [] if t]
        elif key == "supersessions":
            record["supersessions"] = _decoded(value, list)
        elif key == "curation":  # Hindsight's curation record (service/api/hindsight/curation.py), a JSON string in the node
            record["curation"] = _decoded(value, dict)
        elif key == "id" or key in fields:
            record[key] = value
        else:
            unmapped.append(key)
    return record, unmapped


def edge_record(source_id: str, target_id: str, rel: Mapping[str, Any]) -> dict[str, Any]:
    """An edge line from a relationship whose ends were mapped to memory ids."""
    props = dict(rel.get("properties") or {})
    return {**props, "memory1_id": source_id, "memory2_id": target_id, "type": rel.get("type")}


def vector_of(raw: Any) -> np.ndarray | None:
    """A point's vector (float32): a list of numbers, or the first list of a named-vector map."""
    if isinstance(raw, dict):
        raw = next((v for v in raw.values() if isinstance(v, list)), None)
    if not isinstance(raw, list) or not raw:
        return None
    try:
        vector = np.asarray(raw)  # numbers only: strings, booleans and nested lists give another dtype or shape
    except (ValueError, TypeError):
        return None
    if vector.ndim != 1 or vector.dtype.kind not in "iuf" or not np.isfinite(vector).all():
        return None
    return vector.astype(np.float32)
