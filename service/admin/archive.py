"""AutoMem's backup archive layout, pure: member names, node / point / relationship shapes both ways.

`automem-backup-<ts>.tar.gz` holds `falkordb/falkordb_<ts>.json.gz` —
`{timestamp, graph_name, nodes: [{id: int, labels, properties}], relationships: [{source_id: int,
type, target_id: int, properties}], stats: {node_count, relationship_count}}` — and
`qdrant/qdrant_<ts>.json.gz` — `{timestamp, collection_name, points: [{id, vector, payload}],
stats: {points_count, vector_size}}` — as AutoMem's `GET /backup` and scripts/backup_automem.py
write them and scripts/restore_from_backup.py reads them. We add `manifest.json` (counts, sha256
of each member, model, vector size, bank); AutoMem's restore ignores it.

Node properties are what FalkorDB can hold: strings, numbers, booleans and lists of them, so every
structured field of service/memory/codec.py (`metadata`, as AutoMem stores it, and our
`supersessions`, `enrichment` and Hindsight's `curation`) is a JSON string, decoded on the way back by the same table.
Relationship ends are the nodes' integer ids, which map to `nodes[].properties.id` (the memory id).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from service.errors import BadRequest
from service.memory import codec
from service.memory.limits import FLOAT32_MAX

VALID_INCLUDES = ("falkordb", "qdrant")
MANIFEST = "manifest.json"
FORMAT = "engram-backup"
FORMAT_VERSION = 1
MEMORY_LABEL = "Memory"
# AutoMem's Qdrant payload (automem/api/memory.py store); we add the validity fields and archived.
PAYLOAD_FIELDS = ("content", "tags", "tag_prefixes", "importance", "timestamp", "type", "confidence", "updated_at",
                  "last_accessed", "metadata", "t_valid", "t_invalid", "archived")
# A derived field AutoMem's own nodes hold (its restore script reads it); rebuilt on the way back.
AUTOMEM_DERIVED = ("tag_prefixes",)
# A vector whose squared norm is below this is as directionless as zero once stored as float32
# (service/memory/limits.check_vector refuses it on every write).
MIN_SQUARED_NORM = 1e-30


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


def node_properties(memory_id: str, source: Mapping[str, Any]) -> dict[str, Any]:
    """A memory as a FalkorDB Memory node's properties (AutoMem's names; structures as JSON strings)."""
    props: dict[str, Any] = {"id": memory_id}
    kept = codec.portable(source)
    kept.update({k: source[k] for k in AUTOMEM_DERIVED if source.get(k) is not None})
    for key, value in kept.items():
        if key != "id":
            props[key] = codec.encode_node(value, key)
    return props


def point(memory_id: str, source: Mapping[str, Any], vector: Sequence[float]) -> dict[str, Any]:
    payload = {k: source[k] for k in PAYLOAD_FIELDS if source.get(k) is not None}
    return {"id": memory_id, "vector": list(vector), "payload": payload}


def relationship(source_node: int, target_node: int, edge: Mapping[str, Any]) -> dict[str, Any]:
    props = dict(edge.get("properties") or {})
    props.update({k: edge[k] for k in ("strength", "created_at", "updated_at") if edge.get(k) is not None})
    return {"source_id": source_node, "type": edge["type"], "target_id": target_node, "properties": props}


def memory_record(props: Mapping[str, Any], fields: frozenset[str], payload: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], list[str]]:
    """An import record from a Memory node's properties (falling back on the Qdrant payload for what
    the node lacks), and the names of the properties our model has no place for (or whose value
    does not decode: a `metadata` that is no JSON object)."""
    merged = {**(payload or {}), **props}
    record: dict[str, Any] = {}
    unmapped: list[str] = []
    for key, value in merged.items():
        if value is None or key in codec.NOT_PORTABLE:
            continue
        if key != "id" and key not in fields:
            unmapped.append(key)
            continue
        try:
            value = codec.decode(key, value)
        except codec.Undecodable:
            unmapped.append(key)
            continue
        record[key] = [str(t) for t in value if t] if key == "tags" else value
    return record, unmapped


def edge_record(source_id: str, target_id: str, rel: Mapping[str, Any]) -> dict[str, Any]:
    """An edge line from a relationship whose ends were mapped to memory ids."""
    props = dict(rel.get("properties") or {})
    return {**props, "memory1_id": source_id, "memory2_id": target_id, "type": rel.get("type")}


def vector_of(raw: Any) -> np.ndarray | None:
    """A point's vector (float32): a list of numbers, or the first list of a named-vector map; None
    when it is no usable vector — no numbers, a value beyond float32 (1e39), or no direction (all
    zeros, or values so small their squared norm vanishes, 1e-40): the memory is re-embedded then."""
    if isinstance(raw, dict):
        raw = next((v for v in raw.values() if isinstance(v, list)), None)
    if not isinstance(raw, list) or not raw:
        return None
    try:
        vector = np.asarray(raw)  # numbers only: strings, booleans and nested lists give another dtype or shape
    except (ValueError, TypeError, OverflowError):
        return None
    if vector.ndim != 1 or vector.dtype.kind not in "iuf":
        return None
    vector = vector.astype(np.float64)
    if not np.isfinite(vector).all() or np.abs(vector).max() > FLOAT32_MAX or float(np.dot(vector, vector)) < MIN_SQUARED_NORM:
        return None
    return vector.astype(np.float32)
