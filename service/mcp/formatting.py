"""How recall_memory shows one memory and a page of them (spec 000 "MCP Response Formatting").

Pure functions over a normalized recall result (service.mcp.recall_request): content previews
with `content_truncated` / `content_chars`, relation stubs and metadata key lists for `detailed`,
the numbered text lines, the `detailed` and `items` blocks, the structured envelope and the
summary line. The token budget that decides how many of them fit is in service.mcp.budget.
Output shapes follow mcp-automem's src/recall-memory.ts so agents read the same fields.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from service.memory.limits import finite_number

# spec 000 "MCP Response Formatting": a 400-character preview, at most 3 relation stubs per memory,
# 100-character stub summaries.
PREVIEW_CHARS = 400
MAX_RELATIONS = 3
RELATION_SUMMARY_CHARS = 100
ELLIPSIS = "…"
FORMATS = ("text", "items", "detailed", "json")
OUTSIDE_SCOPE_NOTE = " [outside tag scope]"

# The result-level fields a rich item carries after the memory's own fields (mcp-automem's order).
_PASSTHROUGH = ("deduped_from", "expanded_from_entity", "outside_tag_scope", "jit_enriched", "state_replaces")
# The envelope's optional fields, in the order the structured content lists them.
ENVELOPE_FIELDS = (
    "dedup_removed", "query", "sort", "keywords", "time_window", "tags", "exclude_tags", "tag_mode", "tag_match",
    "state_mode", "tag_scope", "scope_fallback", "recency_bias", "score_filter", "queries", "vector_search",
    "jit_enriched_count", "query_time_ms", "entities", "expansion", "entity_expansion", "context_priority",
    "state_filter",
)


@dataclass(frozen=True)
class ItemOutput:
    """One memory as the response shows it: its structured item and its text block."""

    structured: dict[str, Any]
    text: str
    truncated: bool
    cost: int = 0  # estimated characters it adds to the serialized response


@dataclass(frozen=True)
class Cuts:
    """What the budget removed besides trailing results; reported in `truncation`."""

    omitted_fields: tuple[str, ...] = ()
    compacted_results: int = 0


@dataclass(frozen=True)
class ToolResponse:
    """A tool result: its text blocks and its structuredContent."""

    texts: tuple[str, ...]
    structured: dict[str, Any] = field(default_factory=dict)

    def wire(self) -> dict[str, Any]:
        """The part of the CallToolResult the budget bounds, as it travels (mcp-automem measures the same)."""
        return {"content": [{"type": "text", "text": t} for t in self.texts], "structuredContent": self.structured}


# --- numbers and sizes as the TypeScript reference prints and measures them ----------------------------
def is_number(value: Any) -> bool:
    return finite_number(value) is not None


def js_number(value: float) -> str:
    """A number as JavaScript's String(n) prints it: 1 not 1.0, 1e-7 not 1e-07."""
    if isinstance(value, int):
        return str(value)
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return re.sub(r"e([+-])0*(\d)", r"e\1\2", repr(value))


def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def pretty_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


def js_length(text: str) -> int:
    """Length in UTF-16 code units, as JSON.stringify(...).length counts it."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def wire_chars(response: ToolResponse) -> int:
    return js_length(compact_json(response.wire()))


def drop_none(values: dict[str, Any]) -> dict[str, Any]:
    """Absent fields are left out, not sent as null (the reference's undefined)."""
    return {k: v for k, v in values.items() if v is not None}


# --- one memory ----------------------------------------------------------------------------------------
def preview(content: str | None, budgeted: bool) -> tuple[str, bool, int]:
    """(shown text, truncated?, full length): budgeted formats cut content to a 400-character preview."""
    text = content or ""
    if not budgeted or len(text) <= PREVIEW_CHARS:
        return text, False, len(text)
    return text[:PREVIEW_CHARS] + ELLIPSIS, True, len(text)


def metadata_keys(metadata: Any) -> list[str] | None:
    if not isinstance(metadata, dict) or not metadata:
        return None
    return list(metadata)


def relation_stub(rel: dict[str, Any]) -> dict[str, Any]:
    """A relation reduced to what makes the edge meaningful: the other end, the edge, a short summary.

    Recall's own entries name their other end in `id`, or in `from` (the seed of an expanded result, the
    suppressed memory of a state replacement); an entry that embeds the related memory names it there.
    """
    memory = rel.get("memory") if isinstance(rel.get("memory"), dict) else {}
    rid = memory.get("id", rel.get("id", rel.get("memory_id")))
    raw = memory.get("summary") or memory.get("content") or rel.get("summary") or rel.get("content")
    summary = None
    if isinstance(raw, str) and raw:
        summary = raw[:RELATION_SUMMARY_CHARS] + ELLIPSIS if len(raw) > RELATION_SUMMARY_CHARS else raw
    return drop_none({
        "id": rid,
        "from": rel.get("from") if isinstance(rel.get("from"), str) else None,
        "type": rel.get("type"),
        "strength": rel.get("strength") if is_number(rel.get("strength")) else None,
        "kind": rel.get("kind") if isinstance(rel.get("kind"), str) else None,
        "summary": summary,
    })


def compact_relations(relations: Any) -> dict[str, Any]:
    if not isinstance(relations, list) or not relations:
        return {}
    out: dict[str, Any] = {"relations": [relation_stub(r) for r in relations[:MAX_RELATIONS] if isinstance(r, dict)]}
    if len(relations) > MAX_RELATIONS:
        out["relations_total"] = len(relations)
    return out


def structured_item(item: dict[str, Any], *, rich: bool, budgeted: bool, keep_components: bool) -> tuple[dict[str, Any], str, bool]:
    """(structured item, text shown for it, content truncated?).

    The text is the preview, or the stored summary when the content is empty; the structured `content`
    stays the (possibly empty) preview so callers can tell the fields apart.
    """
    memory = item["memory"]
    summary = memory.get("summary") if isinstance(memory.get("summary"), str) and memory["summary"].strip() else None
    shown, truncated, chars = preview(memory.get("content"), budgeted)
    display = shown if shown.strip() else (summary or shown)
    out: dict[str, Any] = {"memory_id": memory["memory_id"], "content": shown}
    if truncated:
        out.update(content_truncated=True, content_chars=chars)
    out.update(drop_none({
        "summary": summary, "tags": memory.get("tags"), "importance": memory.get("importance"),
        "created_at": memory.get("created_at"), "updated_at": memory.get("updated_at"),
        "final_score": item.get("final_score"), "match_type": item.get("match_type"),
    }))
    if not rich:
        return out, display, truncated
    out.update(drop_none({"last_accessed": memory.get("last_accessed")}))
    if budgeted:
        keys = metadata_keys(memory.get("metadata"))
        if keys:
            out["metadata_keys"] = keys
    else:
        out["metadata"] = memory.get("metadata") or {}
    out.update(drop_none({"type": memory.get("type"), "confidence": memory.get("confidence")}))
    if not budgeted:
        out.update(drop_none({
            "match_score": item.get("match_score"), "relation_score": item.get("relation_score"), "source": item.get("source"),
            # spec 000: json and id fetches keep the lifecycle fields.
            "t_valid": memory.get("t_valid"), "t_invalid": memory.get("t_invalid"), "archived": memory.get("archived"),
        }))
    if keep_components and item.get("score_components") is not None:
        out["score_components"] = item["score_components"]
    if budgeted:
        out.update(compact_relations(item.get("relations")))
    else:
        out["relations"] = item.get("relations") or []
    out.update(drop_none({k: item.get(k) for k in _PASSTHROUGH}))
    return out, display, truncated


def _scope_note(item: dict[str, Any]) -> str:
    return OUTSIDE_SCOPE_NOTE if item.get("outside_tag_scope") else ""


def text_block(item: dict[str, Any], display: str, index: int) -> str:
    """`1. [preview] [tags] (importance: X) score=X.XXX [match_type] relations=X` + ID and Created lines."""
    memory = item["memory"]
    tags = f" [{', '.join(memory['tags'])}]" if memory.get("tags") else ""
    importance = f" (importance: {js_number(memory['importance'])})" if is_number(memory.get("importance")) else ""
    score = f" score={item['final_score']:.3f}" if is_number(item.get("final_score")) else ""
    match = f" [{item['match_type']}]" if item.get("match_type") else ""
    relations = item.get("relations") or []
    rel_note = f" relations={len(relations)}" if relations else ""
    entity = f" [via entity: {item['expanded_from_entity']}]" if item.get("expanded_from_entity") else ""
    dedup = f" (deduped x{len(item['deduped_from'])})" if item.get("deduped_from") else ""
    updated = f"  Updated: {memory['updated_at']}" if memory.get("updated_at") else ""
    return (
        f"{index + 1}. {display}{tags}{importance}{score}{match}{rel_note}{entity}{dedup}{_scope_note(item)}\n"
        f"   ID: {memory['memory_id']}\n   Created: {memory.get('created_at', '')}{updated}"
    )


def detailed_block(item: dict[str, Any], display: str) -> str:
    memory = item["memory"]
    lines = [display, f"  ID: {memory['memory_id']}"]
    if memory.get("type"):
        lines.append(f"  Type: {memory['type']}")
    lines.append(f"  Created: {memory.get('created_at', '')}")
    if memory.get("updated_at"):
        lines.append(f"  Updated: {memory['updated_at']}")
    if memory.get("last_accessed"):
        lines.append(f"  Accessed: {memory['last_accessed']}")
    if is_number(memory.get("importance")):
        lines.append(f"  Importance: {memory['importance']:.3f}")
    if is_number(memory.get("confidence")):
        lines.append(f"  Confidence: {memory['confidence']:.3f}")
    if memory.get("tags"):
        lines.append(f"  Tags: {', '.join(memory['tags'])}")
    if is_number(item.get("final_score")):
        lines.append(f"  Score: {item['final_score']:.3f}")
    if item.get("match_type"):
        lines.append(f"  Match: {item['match_type']}")
    if item.get("outside_tag_scope"):
        lines.append("  Outside tag scope: true")
    return "\n".join(lines)


def item_cost(fmt: str, structured: dict[str, Any], text: str) -> int:
    """Estimated characters one result adds: its structured item plus its text block JSON-escaped
    (json repeats the item pretty-printed, four spaces deeper inside `results`). Only has to be close:
    the assembled response is measured exactly."""
    base = js_length(compact_json(structured)) + 1
    if fmt == "json":
        nested = re.sub(r"(?m)^", "    ", pretty_json(structured))
        return base + js_length(json.dumps(nested, ensure_ascii=False)) + 1
    if fmt == "items":
        return base + js_length(compact_json({"type": "text", "text": text})) + 1
    return base + js_length(json.dumps(text, ensure_ascii=False)) + 2


def item_output(item: dict[str, Any], index: int, fmt: str, *, rich: bool, budgeted: bool, keep_components: bool) -> ItemOutput:
    structured, display, truncated = structured_item(item, rich=rich, budgeted=budgeted, keep_components=keep_components)
    if fmt == "items":
        text = f"[{item['memory']['memory_id']}] {display}{_scope_note(item)}"
    elif fmt == "detailed":
        text = detailed_block(item, display)
    elif fmt == "json":
        text = ""
    else:
        text = text_block(item, display, index)
    return ItemOutput(structured, text, truncated, item_cost(fmt, structured, text))


# --- the page ------------------------------------------------------------------------------------------
def envelope(result: dict[str, Any], returned: int) -> dict[str, Any]:
    """Everything but the results. An enumeration page the budget trimmed reports itself as a page of
    `returned` records with more to come, so a pager continuing at next_offset sees every record."""
    total = len(result.get("results") or [])
    enumeration = result.get("mode") == "enumeration"
    trimmed = enumeration and returned < total
    has_more = True if trimmed else result.get("has_more")
    limit = returned if trimmed else result.get("limit")
    offset = result.get("offset")
    out: dict[str, Any] = {"count": returned if trimmed else result.get("count", total)}
    out.update(drop_none({"mode": result.get("mode"), "has_more": has_more, "limit": limit, "offset": offset}))
    if enumeration and has_more is True:
        out["next_offset"] = (offset or 0) + returned
    out.update(drop_none({k: result.get(k) for k in ENVELOPE_FIELDS}))
    return out


def omit_field(values: dict[str, Any], path: str) -> bool:
    """Drop `field` or `field.nested` in place; False when it is absent."""
    key, _, nested = path.partition(".")
    if key not in values:
        return False
    if not nested:
        del values[key]
        return True
    inner = values[key]
    if not isinstance(inner, dict) or nested not in inner:
        return False
    values[key] = {k: v for k, v in inner.items() if k != nested}
    return True


def notes(env: dict[str, Any]) -> list[str]:
    """The summary line's statistics, when they apply."""
    out: list[str] = []
    if (env.get("dedup_removed") or 0) > 0:
        out.append(f"{env['dedup_removed']} duplicates removed")
    entity = env.get("entity_expansion") or {}
    if entity.get("enabled") and (entity.get("expanded_count") or 0) > 0:
        found = ", ".join(entity.get("entities_found") or []) or "entities found"
        out.append(f"{entity['expanded_count']} via entity expansion ({found})")
    expansion = env.get("expansion") or {}
    if expansion.get("enabled") and (expansion.get("expanded_count") or 0) > 0:
        out.append(f"{expansion['expanded_count']} via relation expansion")
    state = env.get("state_filter") or {}
    # Only when something was suppressed or replaced: "0 suppressed" on every line is noise.
    if (state.get("suppressed_count") or 0) > 0 or (state.get("replacement_count") or 0) > 0:
        out.append(f"state filter suppressed {state.get('suppressed_count', 0)}, replacements {state.get('replacement_count', 0)}")
    if env.get("scope_fallback"):
        out.append("scope fallback included outside-scope results")
    filtered = (env.get("score_filter") or {}).get("filtered_count")
    if is_number(filtered) and filtered > 0:
        out.append(f"score filter removed {filtered}")
    if env.get("mode") == "enumeration":
        more = f" — more pages available, next offset {env.get('next_offset')}" if env.get("has_more") else ""
        limit = env["limit"] if env.get("limit") is not None else env.get("count")
        out.append(f"enumeration page: offset {env.get('offset') or 0}, limit {limit}{more}")
    return out


def summary_line(count: int, shown: int, env: dict[str, Any]) -> str:
    """`Found 12 memories (showing 5) (3 duplicates removed; ...):` — the text format's first line."""
    showing = f" (showing {shown})" if shown < count else ""
    stats = notes(env)
    joined = f" ({'; '.join(stats)})" if stats else ""
    return f"Found {count} memories{showing}{joined}:"
