"""Memories and edges as portable records, pure: the stored document <-> an export line.

A memory line is the `POST /memory` body with its id and timestamps (plus the few stored fields
that body has no name for: `supersessions`, `enrichment`, `embedding_model`, and any field another
part of the service adds to the mapping); an edge line is the `POST /associate` body with its times.
Which stored fields a line carries is service/memory/codec.py's table: derived, hidden and rebuilt
index-only fields are never written (they are rebuilt from the rest on the way in, so a line cannot
contradict itself).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from service.clock.instants import iso, parse_iso_datetime
from service.graph.registry import SUPERSEDING_TYPES, Association, AssociationError, relation_type
from service.memory import codec
from service.memory.limits import finite_number

SUPERSESSION_FIELDS = ("supersessions", "superseded_at", "superseded_by", "supersede_type")
EDGE_FIELDS = ("memory1_id", "memory2_id", "type", "strength", "created_at", "updated_at")
# Keys of an edge line or an `associations` item that name its ends (memory1 -> memory2).
TARGET_KEYS = ("memory2_id", "target_id", "target")


def dumps(record: Mapping[str, Any]) -> bytes:
    """One line, its fields in sorted order, so the same store always exports the same bytes. Nested
    objects keep their stored key order: what is derived from them in that order (metadata_terms)
    comes back the same after an import."""
    return orjson.dumps({k: record[k] for k in sorted(record)}) + b"\n"


def memory_line(memory_id: str, source: Mapping[str, Any], vector: Sequence[float] | None = None) -> dict[str, Any]:
    """The export line of a stored memory: derived fields and empty values left out."""
    out = codec.portable(source)
    out["id"] = memory_id
    if vector is not None:
        out["embedding"] = list(vector)
    return out


def edge_line(source: Mapping[str, Any]) -> dict[str, Any]:
    """The export line of a stored edge: the association body, its properties at the top level."""
    out = {k: v for k, v in (source.get("properties") or {}).items() if k not in EDGE_FIELDS}
    out.update(memory1_id=source["source_id"], memory2_id=source["target_id"], type=source["type"], strength=source.get("strength"))
    for name in ("created_at", "updated_at"):
        if source.get(name):
            out[name] = source[name]
    return out


def is_edge_line(record: Mapping[str, Any]) -> bool:
    return "content" not in record and "memory1_id" in record and any(k in record for k in TARGET_KEYS)


def supersession_summary(entries: Sequence[Mapping[str, Any]] | None) -> dict[str, Any]:
    """The fields recall filters on, from the entries (as RECORD_SUPERSESSION computes them): the
    earliest time, the newest entry's memory and type. None values mean "not superseded"."""
    if not entries:
        return {"supersessions": None, "superseded_at": None, "superseded_by": None, "supersede_type": None}
    last = entries[-1]
    return {
        "supersessions": [dict(e) for e in entries], "superseded_at": min(str(e["at"]) for e in entries),
        "superseded_by": last["by"], "supersede_type": last["type"],
    }


def check_supersessions(value: Any) -> list[dict[str, Any]]:
    """A `supersessions` value from a line or an archive: a list of {by, type, at, strength}."""
    if not isinstance(value, list) or not all(isinstance(e, dict) for e in value):
        raise ValueError("supersessions must be a list of objects")
    out = []
    for e in value:
        if not isinstance(e.get("by"), str) or e.get("type") not in SUPERSEDING_TYPES or not isinstance(e.get("at"), str):
            raise ValueError("each supersession needs by (a memory id), type (INVALIDATED_BY or EVOLVED_INTO) and at (a time)")
        parse_iso_datetime(e["at"])
        entry = {"by": e["by"], "type": e["type"], "at": e["at"]}
        if e.get("strength") is not None:
            entry["strength"] = _unit("strength", e["strength"])
        out.append(entry)
    return out


@dataclass(frozen=True)
class EdgeRecord(Association):
    """A validated edge to write: an association (ends, type, strength, its own properties) and, when
    known, its times."""

    created_at: str | None = None
    updated_at: str | None = None


def _unit(name: str, value: Any) -> float:
    number = finite_number(value)
    if number is None or not 0 <= number <= 1:
        raise AssociationError(f"{name} must be a number between 0 and 1")
    return number


def _time(name: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise AssociationError(f"{name} must be an ISO 8601 time")
    try:
        return iso(parse_iso_datetime(value))
    except ValueError as exc:
        raise AssociationError(f"{name}: {exc}") from None


def edge_record(item: Any, *, id_ok, this_id: str | None = None) -> EdgeRecord:
    """An edge line, or an `associations` item of the memory `this_id` (which is memory1 unless the
    item names another memory1: `{"memory1_id": old, "type": "EVOLVED_INTO"}` = old is superseded by this one).

    Every type the store knows is accepted, system ones too (an export carries SIMILAR_TO edges);
    properties are kept as given, as the store keeps them."""
    if not isinstance(item, dict):
        raise AssociationError("each association must be an object")
    source = item.get("memory1_id") or this_id
    target = next((item[k] for k in TARGET_KEYS if item.get(k)), None) or (this_id if item.get("memory1_id") else None)
    for name, value in (("memory1_id", source), ("memory2_id", target)):
        if not isinstance(value, str) or not id_ok(value):
            raise AssociationError(f"{name} {value!r} is not a valid memory id")
    if source == target:
        raise AssociationError("Cannot associate a memory with itself")
    edge_type = relation_type(item.get("type"), allow_system=True)
    strength = _unit("strength", 0.5 if item.get("strength") is None else item["strength"])
    props = {k: v for k, v in item.items() if k not in EDGE_FIELDS and k not in TARGET_KEYS}
    if props.get("timestamp") is not None:  # INVALIDATED_BY: when the invalidation takes effect
        props["timestamp"] = _time("timestamp", props["timestamp"])
    return EdgeRecord(source, target, edge_type, strength, props, _time("created_at", item.get("created_at")), _time("updated_at", item.get("updated_at")))
