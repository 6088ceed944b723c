"""The six tools: names, input schemas, output schemas and annotations as mcp-automem declares them
(src/mcp-surface.ts), so an agent configured for AutoMem's MCP server works unchanged.

The recall_memory schema is spec 000's "MCP Tool: recall_memory" table; the annotations are
spec 000's (recall: readOnlyHint, idempotentHint) and mcp-automem's for the others.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from service.memory.types import MEMORY_TYPES
from service.graph.registry import AUTHORABLE_TYPES

STRING = {"type": "string"}
STRINGS = {"type": "array", "items": STRING}
NUMBERS = {"type": "array", "items": {"type": "number"}}
UNIT = {"type": "number", "minimum": 0, "maximum": 1}
OBJECT = {"type": "object"}
TYPES = {"type": "string", "enum": list(MEMORY_TYPES)}
RELATION_TYPES = {"type": "string", "enum": list(AUTHORABLE_TYPES)}

# mcp-automem's store_memory content guidance: rejected above 2,000 characters in single mode, a
# warning above 500 (batch items go straight to the service, which enforces MEMORY_CONTENT_MAX).
CONTENT_SOFT_LIMIT = 500
CONTENT_HARD_LIMIT = 2000
BATCH_MAX = 500

INSTRUCTIONS = (
    "Engram is the agent's long-term memory. Use recall_memory to load context (at session start, before "
    "decisions, when debugging), store_memory to keep decisions, patterns, preferences and fixes, and "
    "associate_memories to link related memories. update_memory edits a memory in place, delete_memory removes "
    "one by id or all memories carrying a tag, check_database_health checks the service and its OpenSearch."
)


def _described(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {**schema, "description": description}


def _object(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = required
    return out


# --- store_memory ---------------------------------------------------------------------------------------
BATCH_ITEM = _object({
    "content": STRING, "tags": STRINGS, "importance": UNIT, "timestamp": STRING, "type": TYPES,
    "confidence": UNIT, "metadata": OBJECT,
}, ["content"])

STORE_INPUT = _object({
    "content": _described(STRING, "Single mode (XOR with `memories`): the memory. Be specific: context, reasoning, outcome."),
    "id": _described(STRING, "Single mode only. A client-chosen id (URL-safe, up to 128 characters): storing it again updates that memory."),
    "memories": {"type": "array", "maxItems": BATCH_MAX, "items": BATCH_ITEM, "description":
                 "Batch mode (XOR with `content`): up to 500 memories in one request. Items take content, tags, "
                 "importance, timestamp, type, confidence, metadata (no id, embedding, t_valid or t_invalid)."},
    "tags": _described(STRINGS, 'Single mode. Tags, e.g. ["project-name", "bug-fix"]; ":" or "/" nest them.'),
    "importance": _described(UNIT, "Single mode. 0.9+ critical decisions, 0.7-0.9 patterns and bugs, 0.5-0.7 notes."),
    "embedding": _described(NUMBERS, "Single mode only. A precomputed vector (the service embeds the content otherwise)."),
    "metadata": _described(OBJECT, 'Single mode. Structured metadata, e.g. { "files_modified": ["auth.ts"] }.'),
    "timestamp": _described(STRING, "Single mode. ISO 8601 creation time (now when omitted)."),
    "type": _described(TYPES, "Single mode. Memory type (classified from the content when omitted)."),
    "confidence": _described(UNIT, "Single mode. Classification confidence (0.9 when only type is given)."),
    "t_valid": _described(STRING, "Single mode only. ISO 8601: when the memory becomes valid."),
    "t_invalid": _described(STRING, "Single mode only. ISO 8601: when the memory expires."),
    "updated_at": _described(STRING, "Single mode. ISO 8601 last-updated time."),
    "last_accessed": _described(STRING, "Single mode. ISO 8601 last-accessed time."),
    "supersedes_memory_id": _described(STRING, "Single mode. The id of the memory this one replaces or corrects."),
    "supersede_relation": {"type": "string", "enum": ["INVALIDATED_BY", "EVOLVED_INTO"], "default": "INVALIDATED_BY",
                           "description": "Supersede mode. The edge from the old memory to the new one."},
    "supersede_reason": _described(STRING, "Supersede mode. Why; kept in the new memory's metadata as supersede_reason."),
})
STORE_OUTPUT = _object({
    "memory_id": _described(STRING, "Single mode: the stored memory's id (use it for associations)."),
    "memory_ids": _described(STRINGS, "Batch mode: the stored memories' ids."),
    "superseded_memory_id": _described(STRING, "Supersede mode: the old memory, now invalid."),
    "association_created": {"type": "boolean", "description": "Supersede mode: whether the old -> new edge was made."},
    "stored": {"type": "integer", "description": "Batch mode: how many memories were stored."},
    "failed": {"type": "array", "items": OBJECT, "description": "Batch mode: the items that failed, with reasons."},
    "warnings": STRINGS,
    "message": _described(STRING, "Confirmation message."),
}, ["message"])
STORE_DESCRIPTION = f"""Store a memory (single mode: `content`) or up to {BATCH_MAX} (batch mode: `memories: [...]`).

Supersede mode: `content` plus `supersedes_memory_id` stores the replacement, marks the old memory invalid (t_invalid = now) and links old -> new with INVALIDATED_BY (default) or EVOLVED_INTO, in one request; recall then shows the new memory in its place.

Content: aim for 150-300 characters ("Title. Context and details. Outcome."); over {CONTENT_SOFT_LIMIT} draws a warning, over {CONTENT_HARD_LIMIT} is refused in single mode.

Examples:
- store_memory({{ content: "Chose PostgreSQL over MongoDB for the user service: ACID for transactions.", tags: ["architecture", "database"], importance: 0.9 }})
- store_memory({{ content: "User now prefers SQLite for small local tools.", supersedes_memory_id: "old-id", supersede_reason: "Correction from user" }})
- store_memory({{ memories: [{{ content: "first" }}, {{ content: "second", tags: ["import"] }}] }})"""

# --- recall_memory --------------------------------------------------------------------------------------
RECALL_INPUT = _object({
    "memory_id": _described(STRING, "ID fetch mode: returns this one memory, whole and untruncated, via GET /memory/{id}; every other parameter is ignored."),
    "exhaustive": {"type": "boolean", "description": "Tag enumeration mode: needs non-empty tags; lists every memory carrying any of them "
                   "(exact, case-insensitive) via GET /memory/by-tag, paged with limit (<= 200) and offset. Not ranked."},
    "query": _described(STRING, "Semantic search query in natural language."),
    "queries": _described(STRINGS, "Several queries for broader recall; results are deduplicated by the service."),
    "embedding": _described(NUMBERS, "A precomputed query vector for direct similarity search."),
    "limit": {"type": "integer", "minimum": 1, "maximum": 200, "default": 5, "description":
              "Max results. Omitted: 5 ranked, 20 enumerated; ranked recall is capped by the service (RECALL_MAX_LIMIT, 100)."},
    "tags": _described(STRINGS, "Filter by tags; the project name first scopes well."),
    "exclude_tags": _described(STRINGS, "Ranked mode only. Drop memories carrying any of these (and their sub-tags)."),
    "tag_mode": {"type": "string", "enum": ["any", "all"], "description": '"any" (default) or "all" tags must match.'},
    "tag_match": {"type": "string", "enum": ["exact", "prefix"], "description": '"prefix" matches sub-tags too (ranked default); "exact" only the tag.'},
    "time_query": _described(STRING, 'Natural-language time filter: "today", "yesterday", "last week", "last 30 days".'),
    "start": _described(STRING, "ISO timestamp lower bound (alternative to time_query)."),
    "end": _described(STRING, "ISO timestamp upper bound."),
    "expand_entities": {"type": "boolean", "description": "Multi-hop: also return memories about people and places the results mention."},
    "expand_relations": {"type": "boolean", "description": "Follow graph relationships from the results to related memories."},
    "expansion_limit": {"type": "integer", "minimum": 1, "maximum": 500, "default": 25, "description": "Max expanded memories in total."},
    "relation_limit": {"type": "integer", "minimum": 1, "maximum": 200, "default": 5, "description": "Max relations followed per result."},
    "expand_min_importance": _described(UNIT, "Minimum importance of expanded memories (results themselves are never filtered)."),
    "expand_min_strength": _described(UNIT, "Minimum strength of a relationship to follow."),
    "expand_respect_tags": {"type": "boolean", "description": "Ranked mode only. Keep expansion inside the tag scope."},
    "context": _described(STRING, 'Context label that boosts matching preferences, e.g. "coding-style".'),
    "language": _described(STRING, 'Programming language hint, e.g. "python".'),
    "active_path": _described(STRING, 'Current file path, for language detection, e.g. "src/auth.ts".'),
    "context_tags": _described(STRINGS, "Tags to boost."),
    "context_types": _described(STRINGS, 'Memory types to boost, e.g. ["Style", "Preference"].'),
    "priority_ids": _described(STRINGS, "Memory ids to boost, fetched directly when the search missed them (filters still apply)."),
    "auto_decompose": {"type": "boolean", "description": "Derive supplementary searches from the query's entities and topics."},
    "per_query_limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "Results per query with `queries` (default: limit)."},
    "state_mode": {"type": "string", "enum": ["current", "history"], "description":
                   "Ranked mode only. current (default) hides superseded, expired and not-yet-valid memories; history shows them."},
    "current_only": {"type": "boolean", "default": True, "description": "Ranked mode only. Legacy form of state_mode; wins when both are given."},
    "state_debug": {"type": "boolean", "default": False, "description": "Ranked mode only. List what the state filter suppressed or replaced."},
    "recency_bias": {"type": "string", "enum": ["off", "on", "auto"], "description": "Ranked mode only. Relative-recency re-rank."},
    "scope_fallback": {"type": "boolean", "description": "Ranked mode only. Fill short tag-scoped results from an unscoped search."},
    "min_score": _described(UNIT, "Ranked mode only. Minimum final score of returned results."),
    "adaptive_floor": {"type": "boolean", "description": "Ranked mode only. Adaptive score floor for weak matches."},
    "sort": {"type": "string", "enum": ["score", "time_desc", "time_asc", "updated_desc", "updated_asc"],
             "description": "Result order; time_* for chronological recaps."},
    "format": {"type": "string", "enum": ["text", "items", "detailed", "json"], "default": "text", "description":
               "text (numbered list), items (one block per memory), detailed (adds type, confidence, metadata keys, relation "
               "stubs), json (every field, whole content). text/items/detailed show 400-character previews; the whole "
               "response stays under the token budget (AUTOMEM_RECALL_TOKEN_BUDGET) in every format."},
    "offset": {"type": "integer", "minimum": 0, "description": "Records to skip: enumeration pages (next_offset of the previous page) and ranked pages alike."},
})
_RESULT_ITEM = _object({
    "memory_id": STRING, "summary": STRING, "content": STRING,
    "content_truncated": {"type": "boolean", "description": "content is a preview: fetch the record with memory_id."},
    "content_chars": {"type": "integer", "description": "The full content's length, when previewed."},
    "tags": STRINGS, "importance": {"type": "number"}, "final_score": {"type": "number"}, "match_type": STRING,
    "created_at": STRING, "updated_at": STRING, "deduped_from": STRINGS, "outside_tag_scope": {"type": "boolean"},
    "jit_enriched": {"type": "boolean"}, "state_replaces": STRING,
})
RECALL_OUTPUT = _object({
    "count": {"type": "integer", "description": "Memories returned."},
    "mode": {"type": "string", "enum": ["ranked", "enumeration", "id_fetch"]},
    "has_more": {"type": "boolean", "description": "Enumeration: more records past this page."},
    "limit": {"type": "integer", "description": "Enumeration: this page's size."},
    "offset": {"type": "integer", "description": "Enumeration: this page's offset."},
    "next_offset": {"type": "integer", "description": "Enumeration, when has_more: the next page's offset."},
    "results": {"type": "array", "items": _RESULT_ITEM},
    "truncation": _described(OBJECT, "Present when the budget cut anything: { applied, omitted_results, reason, ... }."),
    "dedup_removed": {"type": "integer"}, "query": STRING, "sort": STRING, "exclude_tags": STRINGS,
    "state_filter": OBJECT, "state_mode": {"type": "string", "enum": ["current", "history"]}, "tag_scope": OBJECT,
    "scope_fallback": {"type": "boolean"}, "recency_bias": {"type": "string", "enum": ["auto", "on", "off"]},
    "score_filter": OBJECT, "queries": STRINGS, "vector_search": OBJECT, "jit_enriched_count": {"type": "integer"},
    "query_time_ms": {"type": "number"}, "entities": {"type": "array", "items": OBJECT},
}, ["count", "results"])
RECALL_DESCRIPTION = """Recall memories in one of three modes, chosen by the parameters you pass.

1. ID fetch: `memory_id` returns that memory whole (never truncated); everything else is ignored.
2. Tag enumeration: `tags` + `exhaustive: true` lists every memory carrying any of the tags (exact match), paged with `limit` (<= 200) and `offset`; the answer has `has_more` and `next_offset`. For audits and cleanups, where ranked recall would undercount. Only tags, limit, offset, tag_mode "any", tag_match "exact" and format are accepted.
3. Ranked (default): hybrid search over vectors, keywords, tags, recency and, optionally, the graph. Current memories only unless state_mode "history". `offset` pages the ranked list (the same ranking, then the slice).

Examples:
- recall_memory({ query: "database architecture decisions", tags: ["my-project"], limit: 5 })
- recall_memory({ memory_id: "abc123" })
- recall_memory({ tags: ["benchmark-test"], exhaustive: true, limit: 50, offset: 50 })
- recall_memory({ query: "What is Sarah's sister's job?", expand_entities: true })"""

# --- associate_memories ---------------------------------------------------------------------------------
PROPERTIES = {
    "context": _described(STRING, "PREFERS_OVER, PART_OF: context."),
    "reason": _described(STRING, "PREFERS_OVER, CONTRADICTS, INVALIDATED_BY, EVOLVED_INTO: reason."),
    "pattern_type": _described(STRING, "EXEMPLIFIES: pattern label."),
    "confidence": _described(UNIT, "EXEMPLIFIES, EVOLVED_INTO, DERIVED_FROM: confidence."),
    "resolution": _described(STRING, "CONTRADICTS: resolution."),
    "observations": _described(STRINGS, "REINFORCES: observations."),
    "timestamp": _described(STRING, "INVALIDATED_BY: when."),
    "transformation": _described(STRING, "DERIVED_FROM: transformation note."),
    "role": _described(STRING, "PART_OF: role."),
}
PAIR = {
    "memory1_id": _described(STRING, "The source memory (the edge runs memory1 -> memory2)."),
    "memory2_id": _described(STRING, "The target memory."),
    "type": _described(RELATION_TYPES, "Relationship type."),
    "strength": _described(UNIT, "0.9+ direct causation, 0.7-0.9 strong, 0.5-0.7 moderate."),
}
ASSOCIATE_INPUT = _object({
    **PAIR, **PROPERTIES,
    "associations": {"type": "array", "minItems": 1, "maxItems": BATCH_MAX, "description":
                     "Batch mode: up to 500 associations; do not combine with the top-level pair fields.",
                     "items": _object({**PAIR, **PROPERTIES}, ["memory1_id", "memory2_id", "type", "strength"])},
})
ASSOCIATE_OUTPUT = _object({
    "success": {"type": "boolean", "description": "Every requested association was made (false for a partial batch)."},
    "message": STRING, "created_count": {"type": "integer"}, "failed_count": {"type": "integer"},
    "succeeded": {"type": "array", "items": OBJECT}, "failed": {"type": "array", "items": OBJECT}, "summary": STRING,
}, ["success", "message"])
ASSOCIATE_DESCRIPTION = "Link two memories with a typed relationship (or up to 500 with `associations`); recall follows these edges.\n\nTypes:\n" + "\n".join(
    f"- {name}" + (f" (properties: {', '.join(props)})" if props else "") for name, props in AUTHORABLE_TYPES.items()
) + '\n\nExample: associate_memories({ memory1_id: "old-decision", memory2_id: "new-decision", type: "EVOLVED_INTO", strength: 0.9 })'

# --- update / delete / health -----------------------------------------------------------------------------
UPDATE_INPUT = _object({
    "memory_id": _described(STRING, "The memory to update."),
    "content": _described(STRING, "New content (replaces it; the memory is re-embedded)."),
    "tags": _described(STRINGS, "New tags (replace the stored ones)."),
    "importance": _described(UNIT, "New importance."),
    "metadata": _described(OBJECT, "New metadata (replaces the stored metadata)."),
    "timestamp": _described(STRING, "New creation time."),
    "t_valid": _described(STRING, "ISO 8601: when the memory becomes valid."),
    "t_invalid": _described(STRING, "ISO 8601: when the memory expires or was superseded."),
    "updated_at": _described(STRING, "Explicit update time."),
    "last_accessed": _described(STRING, "Last access time."),
    "type": _described(TYPES, "Memory type."),
    "confidence": _described(UNIT, "Confidence."),
}, ["memory_id"])
ID_MESSAGE_OUTPUT = _object({"memory_id": STRING, "message": STRING}, ["memory_id", "message"])
DELETE_INPUT = _object({
    "memory_id": _described(STRING, "Single mode (XOR with tags): the memory to delete, with its relationships."),
    "tags": _described(STRINGS, "Bulk mode (XOR with memory_id): delete EVERY memory carrying any of these tags (exact, case-insensitive). No dry run: check with recall_memory({ tags, exhaustive: true }) first."),
})
DELETE_OUTPUT = _object({
    "memory_id": STRING, "deleted_count": {"type": "integer"}, "tags": STRINGS, "message": STRING,
}, ["message"])
HEALTH_OUTPUT = _object({
    "status": {"type": "string", "enum": ["healthy", "degraded", "error"]},
    "backend": _described(STRING, "engram"),
    "statistics": _described(OBJECT, "What the service reports: memory and edge counts, OpenSearch, the embedding model."),
    "error": STRING,
}, ["status", "backend"])

_ALWAYS_LOAD = {"anthropic/alwaysLoad": True}


def _tool(name: str, title: str, description: str, input_schema: dict, output_schema: dict, *, read_only: bool,
          destructive: bool, idempotent: bool, always_load: bool = False) -> types.Tool:
    return types.Tool(
        name=name, title=title, description=description, input_schema=input_schema, output_schema=output_schema,
        annotations=types.ToolAnnotations(title=title, read_only_hint=read_only, destructive_hint=destructive,
                                          idempotent_hint=idempotent, open_world_hint=False),
        _meta=_ALWAYS_LOAD if always_load else None,
    )


TOOLS: tuple[types.Tool, ...] = (
    _tool("store_memory", "Store Memory", STORE_DESCRIPTION, STORE_INPUT, STORE_OUTPUT,
          read_only=False, destructive=False, idempotent=False, always_load=True),
    _tool("recall_memory", "Recall Memory", RECALL_DESCRIPTION, RECALL_INPUT, RECALL_OUTPUT,
          read_only=True, destructive=False, idempotent=True, always_load=True),
    _tool("associate_memories", "Associate Memories", ASSOCIATE_DESCRIPTION, ASSOCIATE_INPUT, ASSOCIATE_OUTPUT,
          read_only=False, destructive=False, idempotent=True, always_load=True),
    _tool("update_memory", "Update Memory", "Edit a memory in place (content, tags, importance, metadata, type, validity) instead of storing a duplicate.\n\nExample: update_memory({ memory_id: \"abc123\", importance: 0.95 })",
          UPDATE_INPUT, ID_MESSAGE_OUTPUT, read_only=False, destructive=False, idempotent=True),
    _tool("delete_memory", "Delete Memory", "Delete one memory by `memory_id`, or every memory carrying any of `tags`. Prefer update_memory when a memory is only outdated. A missing id is an error.\n\nExamples: delete_memory({ memory_id: \"abc123\" }); delete_memory({ tags: [\"benchmark-test\"] })",
          DELETE_INPUT, DELETE_OUTPUT, read_only=False, destructive=True, idempotent=False),
    _tool("check_database_health", "Check Database Health", "Check that the Engram service and its OpenSearch are up, with memory and edge counts. Use it when memory calls fail.",
          _object({}), HEALTH_OUTPUT, read_only=True, destructive=False, idempotent=True),
)
TOOLS_BY_NAME = {tool.name: tool for tool in TOOLS}
