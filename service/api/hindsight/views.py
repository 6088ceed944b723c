"""A stored memory as Hindsight shows it: the one mapping between the two APIs' views (README).

    AutoMem            Hindsight
    content            text
    tags               tags (the caller's: tags enrichment derived are not a scope)
    metadata           metadata (string values as they are, other JSON values JSON-encoded;
                       `entities` is shown as `entities`, a MetaPattern's `consolidation` as
                       `source_fact_ids`)
    timestamp          mentioned_at = occurred_start = occurred_end (null for an 'unset' retain)
    updated_at         updated_at
    type MetaPattern   type observation; other memories: their stored fact_type, else world
    entities           entities (metadata.entities names, then enrichment's entity tags; the
                       set a curation PATCH gave, when one did)
    archived, t_invalid
    <= now, superseded state invalidated (invalidated_at, invalidation_reason, edited_at from the
                       curation record: service/api/hindsight/curation.py)

Pure functions of the stored source (and of the instant a state is read at).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

from service.filters.clauses import OBSERVATION_TYPE
from service.clock.instants import stored_datetime
from service.memory import codec
from service.recall.queries import observation_sources

# Metadata keys the service itself writes and shows elsewhere in Hindsight's view.
SHOWN_ELSEWHERE = ("entities",)
OBSERVATION_KEYS = ("consolidation",)
_NON_ALNUM = re.compile(r"[^0-9a-z]+")


def fact_type(source: Mapping[str, Any]) -> str:
    if source.get("type") == OBSERVATION_TYPE:
        return "observation"
    return source.get("fact_type") or "world"


def hindsight_tags(source: Mapping[str, Any]) -> list[str]:
    return codec.caller_tags(source)


def hindsight_metadata(source: Mapping[str, Any]) -> dict[str, str]:
    metadata = source.get("metadata")
    if not isinstance(metadata, dict):
        return {}
    hidden = set(SHOWN_ELSEWHERE) | (set(OBSERVATION_KEYS) if source.get("type") == OBSERVATION_TYPE else set())
    out = {}
    for key, value in metadata.items():
        if key in hidden:
            continue
        out[str(key)] = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return out


def _names(value: Any) -> Iterable[str]:
    """Entity names in metadata.entities, in document order (a string, a list, or {category: [...]})."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if item.strip():
                yield item.strip()
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed(item))


def _slug(name: str) -> str:
    """How an entity tag spells a name (`entity:people:sarah-connor` for "Sarah Connor")."""
    return _NON_ALNUM.sub("-", name.lower()).strip("-")


def entity_names(source: Mapping[str, Any]) -> list[str]:
    """The caller's entities (retain's `entities`, kept in metadata.entities), then what enrichment
    found (its `entity:<category>:<name>` tags, when not named already), each name once; after a
    curation PATCH named them, exactly those."""
    curation = source.get("curation") if isinstance(source.get("curation"), dict) else {}
    if isinstance(curation.get("entities"), list):
        return [str(n) for n in curation["entities"]]
    metadata = source.get("metadata") if isinstance(source.get("metadata"), dict) else {}
    seen: dict[str, str] = {}
    for name in _names(metadata.get("entities")):
        seen.setdefault(_slug(name), name)
    for tag in source.get("tags") or []:
        parts = [p for p in str(tag).replace("/", ":").split(":") if p]
        if len(parts) >= 3 and parts[0].lower() == "entity":
            name = ":".join(parts[2:])
            seen.setdefault(_slug(name), name)
    return list(seen.values())


def moment(source: Mapping[str, Any]) -> str | None:
    return None if source.get("timeless") else source.get("timestamp")


def invalidated(source: Mapping[str, Any], now: datetime) -> bool:
    """Hindsight's `invalidated`: archived, superseded, or past its t_invalid (a curation PATCH sets it)."""
    t_invalid = stored_datetime(source.get("t_invalid"))
    return bool(source.get("archived")) or bool(source.get("superseded_by")) or (t_invalid is not None and t_invalid <= now)


def invalidated_at(source: Mapping[str, Any]) -> str | None:
    curation = source.get("curation") if isinstance(source.get("curation"), dict) else {}
    return curation.get("invalidated_at") or source.get("superseded_at") or source.get("t_invalid")


def recall_result(memory_id: str, source: Mapping[str, Any], scores: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Hindsight's HindsightRecallResult."""
    when = moment(source)
    kind = fact_type(source)
    out: dict[str, Any] = {
        "id": memory_id,
        "text": source.get("content") or "",
        "type": kind,
        "entities": entity_names(source) or None,
        "context": source.get("context"),
        "occurred_start": when,
        "occurred_end": when,
        "mentioned_at": when,
        "document_id": source.get("document_id"),
        "metadata": hindsight_metadata(source) or None,
        "chunk_id": source.get("chunk_id"),
        "tags": hindsight_tags(source) or None,
        "source_fact_ids": observation_sources(dict(source)) if kind == "observation" else None,
    }
    if scores is not None:
        out["scores"] = dict(scores)
    return out


def list_item(memory_id: str, source: Mapping[str, Any], now: datetime | None = None) -> dict[str, Any]:
    """Hindsight's MemoryUnitListItem (GET .../memories/list) and memory unit (GET .../memories/{id}),
    its state as of `now` (the current instant when omitted)."""
    when = moment(source)
    invalid = invalidated(source, now or datetime.now(timezone.utc))
    curation = source.get("curation") if isinstance(source.get("curation"), dict) else {}
    return {
        "id": memory_id,
        "text": source.get("content") or "",
        "context": source.get("context") or "",
        "date": when or "",
        "fact_type": fact_type(source),
        "type": fact_type(source),
        "document_id": source.get("document_id"),
        "mentioned_at": when,
        "occurred_start": when,
        "occurred_end": when,
        "entities": ", ".join(entity_names(source)),
        "chunk_id": source.get("chunk_id"),
        "proof_count": 1,
        "tags": hindsight_tags(source),
        "metadata": hindsight_metadata(source),
        "state": "invalidated" if invalid else "valid",
        "invalidated_at": invalidated_at(source) if invalid else None,
        "invalidation_reason": curation.get("invalidation_reason") if invalid else None,
        "edited_at": curation.get("edited_at"),
        "updated_at": source.get("updated_at"),
        "source_memory_ids": observation_sources(dict(source)),
    }
