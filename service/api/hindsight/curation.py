"""Hindsight's curation of one memory (PATCH .../memories/{memory_id}, hindsight-client's
`update_memory`) and its history (GET .../memories/{memory_id}/history), on the one store. Pure.

    Hindsight                       stored
    text                            content (re-embedded; the dates it speaks of and its thread re-derived)
    context ("" or null clears)     context
    occurred_start / mentioned_at   timestamp — the one date this store keeps for all three (views.py);
      / occurred_end                the first given wins, the others are named in `warnings`;
                                    clearing occurred_start (or both occurred_*) makes it timeless
    fact_type world | experience    fact_type (an observation is derived: 400, as Hindsight's)
    entities (replace; [] = none)   metadata.entities, and curation.entities: what the views show
    state invalidated               t_invalid = now (recall, as AutoMem's current state, leaves it out)
    state valid                     t_invalid and archived cleared (a superseded memory: 409)
    reason                          curation.invalidation_reason, and the revision's reason

`curation` (a stored object no other surface shows) keeps edited_at, invalidated_at,
invalidation_reason, the entity set a PATCH gave, and the revisions: per PATCH that changed
something, when, what (`fields`), why, and each changed field's value before (newest last, at most
MAX_REVISIONS, the oldest dropped first once their texts pass REVISION_TEXT_BUDGET). The record is
written in the PATCH's own guarded read-modify-write (service/writes/writer.py update), so a
revision exists exactly when its change does, and it goes wherever the memory goes (delete, bank
deletion, export, backup).

The history of a memory is its revisions, the supersession chain it is part of (each link
A -> B: A superseded by B, with both texts; up to MAX_HOPS either way), and for an observation its
creation with the source facts it was made from, resolved to their text; newest first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import Field, PrivateAttr

from service.api.hindsight import views
from service.api.hindsight.models import _In
from service.clock.instants import iso, stored_datetime, to_instant
from service.errors import BadRequest, Conflict
from service.filters.clauses import OBSERVATION_TYPE
from service.memory.limits import check_text
from service.memory.models import MemoryUpdate
from service.recall.queries import observation_sources
from service.writes.writer import derived_fields

MAX_REVISIONS = 50
REVISION_TEXT_BUDGET = 100_000  # characters of earlier texts kept per memory
MAX_ENTITIES = 200
MAX_HOPS = 5  # spec 000's bound on supersession chains
DATE_FIELDS = ("occurred_start", "mentioned_at", "occurred_end")  # the first given is the memory's date
STATES = ("valid", "invalidated")
CURATABLE = ("world", "experience")


class UpdateMemoryBody(_In):
    """hindsight-client 1.1.0's UpdateMemoryRequest. At least one change is required."""

    text: str | None = Field(None, description="The corrected text (re-embedded)")
    context: str | None = Field(None, max_length=2_000, description='"" or null clears it')
    occurred_start: str | None = Field(None, max_length=64, description="ISO 8601; this store keeps one date per memory (see warnings)")
    occurred_end: str | None = Field(None, max_length=64)
    mentioned_at: str | None = Field(None, max_length=64)
    fact_type: str | None = Field(None, max_length=32, description="world or experience")
    entities: list[str] | None = Field(None, max_length=MAX_ENTITIES, description="Replaces the memory's entities ([] detaches all)")
    resolve_entities: bool | None = Field(True, description="Names are taken literally here, as Hindsight's edits take them")
    state: str | None = Field(None, max_length=32, description="invalidated (left out of recall) or valid (restored)")
    reason: str | None = Field(None, max_length=2_000, description="Recorded with the change")


@dataclass(frozen=True)
class Plan:
    """What one PATCH asks, validated: None means unchanged."""

    now: datetime
    text: str | None = None
    context: str | None = None
    context_given: bool = False
    timestamp: datetime | None = None
    clear_date: bool = False
    fact_type: str | None = None
    entities: tuple[str, ...] | None = None
    state: str | None = None
    reason: str | None = None


def plan_of(body: UpdateMemoryBody, now: datetime) -> tuple[Plan, list[str]]:
    """The validated plan and the warnings (dates this store cannot keep apart). 400 in Hindsight's words."""
    given = body.model_fields_set
    for name in ("text", "context", "reason", *DATE_FIELDS):
        if getattr(body, name) is not None:
            check_text(getattr(body, name), name)
    if body.text is not None and not body.text.strip():
        raise BadRequest("text must be a non-empty string")
    dates: list[tuple[str, datetime]] = []
    for name in DATE_FIELDS:
        value = getattr(body, name)
        if value is not None and value.strip():
            try:
                dates.append((name, to_instant(value.strip())))
            except ValueError as exc:
                raise BadRequest(f"Invalid {name}: {exc}") from None
    warnings = [f"{name} {iso(at)} not kept: this store keeps one date per memory (occurred_start = occurred_end = mentioned_at = {iso(dates[0][1])})"
                for name, at in dates[1:] if at != dates[0][1]]
    cleared = {name for name in ("occurred_start", "occurred_end") if name in given and not (getattr(body, name) or "").strip()}
    clear_date = not dates and "occurred_start" in cleared
    if not dates and cleared == {"occurred_end"}:
        warnings.append("occurred_end not cleared: it is occurred_start here (clear occurred_start to make the memory timeless)")
    fact_type = (body.fact_type or "").strip() or None
    if fact_type == "observation":
        raise BadRequest("fact_type 'observation' cannot be set: observations are derived from facts")
    if fact_type is not None and fact_type not in CURATABLE:
        raise BadRequest(f"Invalid fact_type '{fact_type}': expected 'world' or 'experience'.")
    state = (body.state or "").strip() or None
    if state is not None and state not in STATES:
        raise BadRequest(f"Invalid state '{state}': expected 'valid' or 'invalidated'.")
    entities = None
    if body.entities is not None:
        names: dict[str, str] = {}
        for i, name in enumerate(body.entities):
            check_text(name, f"entities[{i}]", max_chars=256)
            if name.strip():
                names.setdefault(name.strip().casefold(), name.strip())
        entities = tuple(names.values())
    plan = Plan(
        now=now, text=body.text, context=(body.context or None) if "context" in given else None, context_given="context" in given,
        timestamp=dates[0][1] if dates else None, clear_date=clear_date, fact_type=fact_type, entities=entities, state=state,
        reason=body.reason.strip() if body.reason and body.reason.strip() else None,
    )
    if not (plan.text is not None or plan.context_given or dates or clear_date or fact_type or entities is not None or state):
        raise BadRequest("Nothing to update: set text, context, occurred_start, occurred_end, mentioned_at, fact_type, entities or state")
    return plan, warnings


def record_of(source: Mapping[str, Any]) -> dict[str, Any]:
    value = source.get("curation")
    return dict(value) if isinstance(value, dict) else {}


def is_observation(source: Mapping[str, Any]) -> bool:
    return source.get("type") == OBSERVATION_TYPE


def _entities_metadata(current: Mapping[str, Any], names: Sequence[str]) -> dict[str, list[str]]:
    """{category: [names]}: a name the memory already had keeps its category, a new one is a concept."""
    known: dict[str, str] = {}
    stored = (current.get("metadata") or {}).get("entities") if isinstance(current.get("metadata"), dict) else None
    if isinstance(stored, dict):
        for category, values in stored.items():
            for value in values if isinstance(values, list) else [values]:
                if isinstance(value, str):
                    known.setdefault(value.strip().casefold(), str(category))
    out: dict[str, list[str]] = {}
    for name in names:
        out.setdefault(known.get(name.casefold(), "concept"), []).append(name)
    return out


def _bounded(revisions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The newest MAX_REVISIONS, the oldest dropped first while their earlier texts pass the budget."""
    kept = revisions[-MAX_REVISIONS:]
    while len(kept) > 1 and sum(len(str((r.get("before") or {}).get("text") or "")) for r in kept) > REVISION_TEXT_BUDGET:
        kept = kept[1:]
    return kept


def curation_changes(plan: Plan, current: Mapping[str, Any], changes: Mapping[str, Any], memory_id: str) -> dict[str, Any]:
    """The stored fields a PATCH changes besides AutoMem's (content and timestamp are AutoMem's, in
    `changes`), the curation record with this PATCH's revision included."""
    if is_observation(current):
        raise BadRequest(f"Memory unit '{memory_id}' is an observation: observations are derived and cannot be curated; curate their source facts")
    now = iso(plan.now)
    out: dict[str, Any] = {}
    before: dict[str, Any] = {}
    record = record_of(current)
    if plan.text is not None and plan.text != current.get("content"):
        before["text"] = current.get("content")
    if plan.context_given and plan.context != (current.get("context") or None):
        before["context"], out["context"] = current.get("context"), plan.context
    if plan.timestamp is not None and (current.get("timeless") or stored_datetime(current.get("timestamp")) != plan.timestamp):
        before["date"] = views.moment(current)
        if current.get("timeless"):
            out["timeless"] = False
    elif plan.clear_date and not current.get("timeless"):
        before["date"], out["timeless"] = views.moment(current), True
    if plan.fact_type and plan.fact_type != views.fact_type(current):
        before["fact_type"], out["fact_type"] = views.fact_type(current), plan.fact_type
    if plan.entities is not None and list(plan.entities) != views.entity_names(current):
        before["entities"] = views.entity_names(current)
        metadata = {**(current.get("metadata") or {}), "entities": _entities_metadata(current, plan.entities)}
        out.update(derived_fields(list(changes.get("tags", current.get("tags") or [])), metadata))
        out["metadata"], record["entities"] = metadata, list(plan.entities)
    if before:
        record["edited_at"] = now
    change = "edited" if before else None
    was_invalid = views.invalidated(current, plan.now)
    if plan.state == "invalidated":
        if not was_invalid:
            t_valid = stored_datetime(current.get("t_valid"))
            if t_valid is not None and t_valid >= plan.now:
                raise Conflict(f"Memory unit '{memory_id}' is valid only from {current.get('t_valid')}: there is nothing to invalidate yet")
            before["state"], out["t_invalid"], record["invalidated_at"], change = "valid", now, now, "invalidated"
        if plan.reason is not None and plan.reason != record.get("invalidation_reason"):
            before["invalidation_reason"], record["invalidation_reason"] = record.get("invalidation_reason"), plan.reason
            change = change or "invalidated"
    elif plan.state == "valid" and was_invalid:
        if current.get("superseded_by") or current.get("supersessions"):
            raise Conflict(f"Memory unit '{memory_id}' is superseded by memory {current.get('superseded_by')}: delete that memory or its edge to restore it")
        before["state"], change = "invalidated", "restored"
        if current.get("t_invalid") is not None:
            out["t_invalid"] = None
        if current.get("archived"):
            out["archived"] = False
        record.pop("invalidated_at", None)
        record.pop("invalidation_reason", None)
    if change is not None:
        revision = {"at": now, "change": change, "fields": sorted(k for k in before if k != "state") or ["state"], "reason": plan.reason, "before": before}
        record["revisions"] = _bounded([*(record.get("revisions") or []), revision])
    out["curation"] = record
    return out


class CurationUpdate(MemoryUpdate):
    """The PATCH as the writer takes it: AutoMem's fields (content, timestamp), and the plan whose
    remaining changes are computed against the version the write is conditioned on."""

    _plan: Plan = PrivateAttr()
    _memory_id: str = PrivateAttr()

    @classmethod
    def of(cls, plan: Plan, memory_id: str) -> CurationUpdate:
        given: dict[str, Any] = {}
        if plan.text is not None:
            given["content"] = plan.text
        if plan.timestamp is not None:
            given["timestamp"] = plan.timestamp
        update = cls(**given)
        update._plan, update._memory_id = plan, memory_id
        return update

    def surface_changes(self, current: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
        return curation_changes(self._plan, current, changes, self._memory_id)


# --- history ---------------------------------------------------------------------------------------
def supersession_links(source: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The memory's supersessions (by, type, at), oldest first; older documents kept only the newest."""
    entries = [e for e in source.get("supersessions") or [] if isinstance(e, dict) and e.get("by")]
    if not entries and source.get("superseded_by"):
        entries = [{"by": source["superseded_by"], "type": source.get("supersede_type"), "at": source.get("superseded_at")}]
    return entries


def predecessors_body(bank: str, ids: Sequence[str], size: int) -> dict:
    """The memories of `bank` that `ids` superseded."""
    return {"size": size, "_source": {"excludes": ["embedding"]}, "query": {"bool": {"filter": [
        {"term": {"bank": bank}},
        {"bool": {"should": [{"terms": {"supersessions.by": list(ids)}}, {"terms": {"superseded_by": list(ids)}}], "minimum_should_match": 1}},
    ]}}}


def _entry(changed_at: Any, change: str, memory_id: str, **fields: Any) -> dict[str, Any]:
    return {"changed_at": changed_at, "change": change, "memory_id": memory_id, "reason": None, "fields": [], "previous": {}, "current": {},
            "previous_text": None, "text": None, **fields}


def _value(source: Mapping[str, Any], field: str) -> Any:
    """A field as the revisions record it."""
    if field == "text":
        return source.get("content")
    if field == "date":
        return views.moment(source)
    if field == "fact_type":
        return views.fact_type(source)
    if field == "entities":
        return views.entity_names(source)
    if field == "invalidation_reason":
        return record_of(source).get("invalidation_reason")
    return source.get(field)


def revision_entries(memory_id: str, source: Mapping[str, Any], now: datetime) -> list[dict[str, Any]]:
    """One entry per recorded PATCH: each changed field before and after (the after of a revision is
    the before of the next one that changed it, else the memory as it is)."""
    out = []
    after = {f: _value(source, f) for f in ("text", "context", "date", "fact_type", "entities", "invalidation_reason")}
    after["state"] = "invalidated" if views.invalidated(source, now) else "valid"
    for rev in reversed(record_of(source).get("revisions") or []):
        before = rev.get("before") or {}
        current = {f: after.get(f) for f in before}
        out.append(_entry(rev.get("at"), rev.get("change") or "edited", memory_id, reason=rev.get("reason"), fields=list(rev.get("fields") or []),
                          previous=dict(before), current=current, previous_text=before.get("text"), text=current.get("text")))
        after.update(before)
    return out


def chain_entries(docs: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One entry per supersession among `docs` (the chain around the memory): A superseded by B."""
    out = []
    for old_id, source in docs.items():
        for link in supersession_links(source):
            new = docs.get(link["by"])
            out.append(_entry(link.get("at"), "superseded", old_id, fields=["state"], superseded_by=link["by"], relation=link.get("type"),
                              previous_text=source.get("content"), text=new.get("content") if new else None))
    return out


def creation_entry(memory_id: str, source: Mapping[str, Any], facts: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """An observation's creation, with the source facts it was made from resolved to their text."""
    sources = [{"id": fid, "text": facts[fid].get("content") or "", "type": views.fact_type(facts[fid]), "context": facts[fid].get("context")}
               for fid in observation_sources(dict(source)) if fid in facts]
    return _entry(source.get("timestamp"), "created", memory_id, text=source.get("content"), source_facts=sources)


def history(memory_id: str, source: Mapping[str, Any], chain: Mapping[str, Mapping[str, Any]], facts: Mapping[str, Mapping[str, Any]],
            now: datetime) -> list[dict[str, Any]]:
    """Every entry of a memory's history, newest first."""
    entries = [*revision_entries(memory_id, source, now), *chain_entries(chain)]
    if is_observation(source):
        entries.append(creation_entry(memory_id, source, facts))
    return sorted(entries, key=lambda e: stored_datetime(e["changed_at"]) or datetime.min.replace(tzinfo=now.tzinfo), reverse=True)
