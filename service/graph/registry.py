"""The relationship registry (spec 003: POST /associate; AutoMem config.py RELATIONSHIP_TYPES) and
the pure validation of one association. No I/O: the API, the writers and recall all read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from service.clock.instants import parse_iso_datetime
from service.memory.limits import finite_number
from service.storage.edges import edge_id

# The 11 authorable types, each with the optional properties AutoMem stores on the edge
# (spec 003; AutoMem config.py RELATIONSHIP_TYPES "properties").
AUTHORABLE_TYPES: dict[str, tuple[str, ...]] = {
    "RELATES_TO": (),
    "LEADS_TO": (),
    "OCCURRED_BEFORE": (),
    "PREFERS_OVER": ("context", "reason"),
    "EXEMPLIFIES": ("pattern_type", "confidence"),
    "CONTRADICTS": ("resolution", "reason"),
    "REINFORCES": ("observations",),
    "INVALIDATED_BY": ("reason", "timestamp"),
    "EVOLVED_INTO": ("confidence", "reason"),
    "DERIVED_FROM": ("transformation", "confidence"),
    "PART_OF": ("role", "context"),
}
# Written by enrichment / consolidation in AutoMem: readable and filterable, never authored here.
SYSTEM_TYPES: tuple[str, ...] = ("SIMILAR_TO", "PRECEDED_BY", "DISCOVERED")
ALL_TYPES: tuple[str, ...] = (*AUTHORABLE_TYPES, *SYSTEM_TYPES)
# spec 000 "Edge types traversed": expansion follows exactly the authorable types.
EXPANDABLE_TYPES: tuple[str, ...] = tuple(AUTHORABLE_TYPES)
# An outgoing edge of these types A -> B means "A is superseded by B" (spec 000 State Filtering).
# CONTRADICTS is deliberately absent: a contradiction does not suppress either side.
SUPERSEDING_TYPES: tuple[str, ...] = ("INVALIDATED_BY", "EVOLVED_INTO")
# AutoMem memory.py associate(): `payload.get("type") or "RELATES_TO"`, `payload.get("strength", 0.5)`.
DEFAULT_TYPE = "RELATES_TO"
DEFAULT_STRENGTH = 0.5
# Free-text property values are bounded like every other input (STYLE.md practice 2).
MAX_PROPERTY_TEXT = 2000
MAX_OBSERVATIONS = 2**63 - 1  # a long, as every JSON reader of ours serialises it
# spec 003: "Batch body: {associations: [...]} (max 500)".
MAX_BATCH = 500


class AssociationError(ValueError):
    """One association is invalid; the message is fit for a 400 / a batch item's `reason`."""


@dataclass(frozen=True)
class Association:
    source_id: str  # memory1_id: the edge runs memory1 -> memory2
    target_id: str
    type: str
    strength: float
    properties: dict[str, Any] = field(default_factory=dict)

    @property
    def edge_id(self) -> str:
        return edge_id(self.source_id, self.type, self.target_id)

    @property
    def supersedes(self) -> bool:
        return self.type in SUPERSEDING_TYPES


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise AssociationError(f"{name} must be a string")
    if len(value) > MAX_PROPERTY_TEXT:
        raise AssociationError(f"{name} is longer than {MAX_PROPERTY_TEXT} characters")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate: the bulk request could not even be encoded
            raise AssociationError(f"{name} is not valid Unicode (a lone surrogate at position {exc.start})") from None
    return value


def _unit(name: str, value: Any) -> float:
    number = finite_number(value)
    if number is None:
        raise AssociationError(f"{name} must be a number between 0 and 1")
    if not 0.0 <= number <= 1.0:
        raise AssociationError(f"{name} must be between 0 and 1, got {number:g}")
    return number


def _property(name: str, value: Any) -> Any:
    if name == "confidence":
        return _unit(name, value)
    if name == "observations":
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_OBSERVATIONS:
            raise AssociationError(f"observations must be an integer from 0 to {MAX_OBSERVATIONS}")
        return value
    if name == "timestamp":
        # INVALIDATED_BY's timestamp is when the invalidation takes effect; recall's as_of reads it.
        try:
            return parse_iso_datetime(_text(name, value)).isoformat()
        except ValueError as exc:
            raise AssociationError(f"timestamp must be an ISO 8601 time: {exc}") from None
    return _text(name, value)


def relation_type(raw: Any, *, allow_system: bool = False) -> str:
    if raw is None:
        return DEFAULT_TYPE
    if not isinstance(raw, str) or not raw.strip():
        raise AssociationError("type must be a non-empty string")
    name = raw.strip().upper()
    if name in AUTHORABLE_TYPES or (allow_system and name in SYSTEM_TYPES):
        return name
    if name in SYSTEM_TYPES:
        raise AssociationError(f"{name} is a system relationship type and cannot be created; use one of {', '.join(AUTHORABLE_TYPES)}")
    valid = ALL_TYPES if allow_system else tuple(AUTHORABLE_TYPES)
    raise AssociationError(f"unknown relationship type {raw!r}; expected one of {', '.join(valid)}")


def validate_association(item: Any, *, id_ok) -> Association:
    """One `{memory1_id, memory2_id, type, strength, ...properties}` object -> Association.

    `id_ok` checks id syntax (the memory API's id rule). Properties not defined for the type are
    ignored, as AutoMem does; defined ones are type-checked.
    """
    if not isinstance(item, dict):
        raise AssociationError("each association must be an object")
    ids = []
    for key in ("memory1_id", "memory2_id"):
        value = item.get(key)
        if not isinstance(value, str) or not value.strip():
            raise AssociationError("'memory1_id' and 'memory2_id' are required")
        if not id_ok(value.strip()):
            raise AssociationError(f"{key} {value!r} is not a valid memory id")
        ids.append(value.strip())
    if ids[0] == ids[1]:
        raise AssociationError("Cannot associate a memory with itself")
    edge_type = relation_type(item.get("type"))
    strength = _unit("strength", DEFAULT_STRENGTH if item.get("strength") is None else item["strength"])
    props = {name: _property(name, item[name]) for name in AUTHORABLE_TYPES[edge_type] if item.get(name) is not None}
    return Association(ids[0], ids[1], edge_type, strength, props)
