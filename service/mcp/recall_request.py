"""recall_memory's routing: arguments -> one HTTP request, and the HTTP answer -> one recall result.

Three mutually exclusive modes (spec 000 "MCP Client Routing"), only one runs per call:
  id fetch      `memory_id`               -> GET /memory/{id}; every other argument is ignored
  enumeration   `exhaustive: true` + tags -> GET /memory/by-tag, paged with limit / offset
  ranked        anything else             -> GET /recall with the arguments as URL parameters
Pure: no I/O. The normalized result (memory_id, created_at, ...) is what service.mcp.budget renders.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from service.mcp.formatting import ENVELOPE_FIELDS, FORMATS, js_number

# spec 000: ranked-only parameters, rejected in enumeration mode.
RANKED_ONLY = (
    "query", "queries", "embedding", "time_query", "start", "end", "exclude_tags", "expand_relations",
    "expand_entities", "auto_decompose", "expansion_limit", "relation_limit", "expand_min_importance",
    "expand_min_strength", "current_only", "state_debug", "state_mode", "recency_bias", "scope_fallback",
    "expand_respect_tags", "min_score", "adaptive_floor", "sort", "context", "language", "active_path",
    "context_tags", "context_types", "priority_ids", "per_query_limit",
)
# spec 000: GET /memory/by-tag serves at most 200 per page.
ENUMERATION_MAX_LIMIT = 200

# How each ranked argument travels in GET /recall's query string (lists as repeated parameters).
_LISTS = ("queries", "tags", "exclude_tags", "context_tags", "context_types", "priority_ids")
_INTEGERS = ("limit", "expansion_limit", "relation_limit", "per_query_limit")
_NUMBERS = ("expand_min_importance", "expand_min_strength", "min_score")
_BOOLEANS = (
    "expand_entities", "expand_relations", "auto_decompose", "expand_respect_tags", "current_only", "state_debug",
    "scope_fallback", "adaptive_floor",
)
_STRINGS = (
    "query", "time_query", "start", "end", "tag_mode", "tag_match", "context", "language", "active_path", "state_mode",
    "recency_bias", "sort",
)

# The result fields GET /recall returns that the tool keeps (the rest of a hit is bookkeeping).
_HIT_FIELDS = (
    "match_type", "score_components", "source", "match_score", "relation_score", "deduped_from",
    "expanded_from_entity", "outside_tag_scope", "jit_enriched", "state_replaces",
)


class ArgumentError(ValueError):
    """The arguments do not make one valid recall; the message is shown to the calling agent."""


@dataclass(frozen=True)
class RecallRequest:
    mode: str  # id_fetch | enumeration | ranked
    path: str
    params: tuple[tuple[str, str], ...] = ()
    format: str = "text"


def _given(args: dict[str, Any], name: str) -> bool:
    return args.get(name) is not None


def _clean_list(values: Any) -> list[str]:
    return [str(v).strip() for v in values or [] if str(v).strip()]


def _scalar(name: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if name in _INTEGERS:
        return str(int(value))
    if isinstance(value, (int, float)):
        return js_number(value)
    return str(value)


# Limits the tool schema declares, which the arguments are clamped to as mcp-automem's client does
# (the service clamps ranked pages again to RECALL_MAX_LIMIT): {name: (minimum, maximum)}.
_CLAMPED = {"limit": (1, 200), "expansion_limit": (1, 500), "relation_limit": (1, 200), "per_query_limit": (1, 50), "offset": (0, None)}


def _shown(value: int | float) -> str:
    """A number for a note: as written, or, with more digits than anyone reads, its first ones and how many."""
    if isinstance(value, float):
        return f"{value:g}"
    digits = str(abs(value))
    return str(value) if len(digits) <= 20 else f"{'-' if value < 0 else ''}{digits[:6]}... ({len(digits)} digits)"


def lenient_arguments(args: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """recall_memory's arguments as mcp-automem takes them, before the schema check: a list given as one
    string is that one item, a number out of range is clamped (a fraction rounded down), an unknown
    format is the default. Returns the arguments and a note for each change a caller should know of."""
    out, notes = dict(args), []
    for name in _LISTS:
        if isinstance(out.get(name), str):
            out[name] = [out[name]]
    for name, (low, high) in _CLAMPED.items():
        value = out.get(name)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value != value:  # NaN: the schema says so
            continue
        if value in (math.inf, -math.inf):
            if (bound := high if value > 0 else low) is None:
                continue  # no bound to clamp to: the schema says so
            whole, kept = value, bound
        else:
            whole = int(value)
            kept = max(low, whole) if high is None else min(high, max(low, whole))
        if kept != value:
            out[name] = kept
            if kept != whole:
                notes.append(f"{name} {_shown(value)} is outside {low}..{high if high is not None else ''}: used {kept}")
    fmt = out.get("format")
    if fmt is not None and fmt not in FORMATS:
        out["format"] = "text"
        notes.append(f"format {str(fmt)[:40]!r} is not one of {', '.join(FORMATS)}: used text")
    return out, notes


def plan_recall(args: dict[str, Any]) -> RecallRequest:
    """The one request this call makes. Raises ArgumentError for a call no mode accepts."""
    fmt = args.get("format") or "text"
    if fmt not in FORMATS:
        raise ArgumentError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    memory_id = args.get("memory_id")
    if isinstance(memory_id, str) and memory_id.strip():
        return RecallRequest("id_fetch", f"/memory/{quote(memory_id.strip(), safe='')}", (), fmt)
    if args.get("exhaustive") is True:
        return _plan_enumeration(args, fmt)
    return _plan_ranked(args, fmt)


def _plan_enumeration(args: dict[str, Any], fmt: str) -> RecallRequest:
    tags = _clean_list(args.get("tags"))
    if not tags:
        raise ArgumentError("exhaustive: true needs a non-empty tags list (enumeration lists the memories carrying them)")
    rejected = [name for name in RANKED_ONLY if _given(args, name)]
    if args.get("tag_mode") not in (None, "any"):
        rejected.append(f'tag_mode: "{args["tag_mode"]}"')
    if args.get("tag_match") not in (None, "exact"):
        rejected.append(f'tag_match: "{args["tag_match"]}"')
    if rejected:
        raise ArgumentError(
            f"exhaustive: true (tag enumeration) does not accept {', '.join(rejected)}; it accepts only tags, limit, "
            'offset, tag_mode: "any", tag_match: "exact" and format. Drop exhaustive for ranked recall.'
        )
    params: list[tuple[str, str]] = [("tags", t) for t in tags]
    if _given(args, "limit"):
        params.append(("limit", str(min(int(args["limit"]), ENUMERATION_MAX_LIMIT))))
    if _given(args, "offset"):
        params.append(("offset", str(int(args["offset"]))))
    return RecallRequest("enumeration", "/memory/by-tag", tuple(params), fmt)


def _plan_ranked(args: dict[str, Any], fmt: str) -> RecallRequest:
    params: list[tuple[str, str]] = []
    if _given(args, "offset") and int(args["offset"]) > 0:
        params.append(("offset", str(int(args["offset"]))))  # the ranked list, paged by the service
    for name in _STRINGS + _INTEGERS + _NUMBERS + _BOOLEANS:
        if _given(args, name) and not (name in _STRINGS and not str(args[name]).strip()):
            params.append((name, _scalar(name, args[name])))
    for name in _LISTS:
        params.extend((name, v) for v in _clean_list(args.get(name)))
    if _given(args, "embedding") and args["embedding"]:
        params.append(("embedding", ",".join(js_number(float(x)) for x in args["embedding"])))
    return RecallRequest("ranked", "/recall", tuple(params), fmt)


# --- the HTTP answer, normalized -----------------------------------------------------------------------
def memory_record(memory_id: str, stored: dict[str, Any]) -> dict[str, Any]:
    """A stored memory as the tool presents it: `memory_id`, and `created_at` for the stored timestamp."""
    return {
        "memory_id": memory_id,
        "content": stored.get("content") or "",
        "summary": stored.get("summary"),
        "tags": stored.get("tags") or [],
        "importance": stored.get("importance"),
        "created_at": stored.get("timestamp") or stored.get("created_at") or "",
        "updated_at": stored.get("updated_at"),
        "last_accessed": stored.get("last_accessed"),
        "metadata": stored.get("metadata") or {},
        "type": stored.get("type"),
        "confidence": stored.get("confidence"),
        "t_valid": stored.get("t_valid"),
        "t_invalid": stored.get("t_invalid"),
        "archived": stored.get("archived"),
    }


def from_recall(body: dict[str, Any]) -> dict[str, Any]:
    """GET /recall's body -> the ranked recall result."""
    results = []
    for hit in body.get("results") or []:
        item = {k: hit.get(k) for k in _HIT_FIELDS}
        item["id"] = hit["id"]
        item["final_score"] = hit.get("final_score", hit.get("score"))
        item["relations"] = hit.get("relations") or []
        item["memory"] = memory_record(hit["id"], hit.get("memory") or {})
        results.append(item)
    out: dict[str, Any] = {"mode": "ranked", "results": results, "count": body.get("count", len(results))}
    out.update({k: body[k] for k in ENVELOPE_FIELDS if body.get(k) is not None})
    return out


def from_by_tag(body: dict[str, Any]) -> dict[str, Any]:
    """GET /memory/by-tag's body -> one enumeration page (not ranked: each a `direct` match)."""
    results = [direct(m["id"], m) for m in body.get("memories") or []]
    out: dict[str, Any] = {"mode": "enumeration", "results": results, "count": body.get("count", len(results))}
    out.update({k: body[k] for k in ("has_more", "limit", "offset", "tags") if body.get(k) is not None})
    return out


def direct(memory_id: str, stored: dict[str, Any]) -> dict[str, Any]:
    """A memory read by id or listed by tag, as a result: mcp-automem's `direct` match at score 1."""
    return {"id": memory_id, "match_type": "direct", "final_score": 1, "score_components": {}, "relations": [],
            "memory": memory_record(memory_id, stored)}


def from_memory(body: dict[str, Any] | None) -> dict[str, Any]:
    """GET /memory/{id}'s body -> a one-record result; None (a 404) -> no record, as mcp-automem answers."""
    stored = (body or {}).get("memory")
    if not stored:
        return {"mode": "id_fetch", "results": [], "count": 0}
    return {"mode": "id_fetch", "results": [direct(stored["id"], stored)], "count": 1}


NORMALIZERS = {"id_fetch": from_memory, "enumeration": from_by_tag, "ranked": from_recall}
