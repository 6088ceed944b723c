"""recall_memory's response under a global token budget (spec 000 "MCP Response Formatting").

The budget bounds the whole serialized response — structuredContent plus every text block — so it
stays under MCP clients' tool-response caps (~25k tokens in Claude Code). Pure: a normalized recall
result in (service.mcp.recall_request), a ToolResponse out, or BudgetError when nothing fits.

The order of the cut follows mcp-automem's src/recall-memory.ts: first the diagnostics that do not
fit even without results, then trailing results in rank order; a `json` result too large to show
whole falls back to the compact shape; a page that would show nothing is an error.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from service.mcp.formatting import (
    Cuts,
    ItemOutput,
    ToolResponse,
    envelope,
    item_output,
    notes,
    omit_field,
    pretty_json,
    summary_line,
    wire_chars,
)

# spec 000: "default 18,000 estimated tokens; override with AUTOMEM_RECALL_TOKEN_BUDGET". Dense recall
# JSON tokenizes at ~2.5 characters per token (mcp-automem's measurement: a 64.8k-character response was
# refused by Claude Code's 25k-token cap).
DEFAULT_TOKEN_BUDGET = 18_000
CHARS_PER_TOKEN = 2.5
BUDGET_ENV = "AUTOMEM_RECALL_TOKEN_BUDGET"

# Diagnostics dropped, in this order, while the response does not fit even with no results. Never
# dropped: results, count, mode, the paging fields and truncation; state_filter keeps its counts.
ENVELOPE_DROP_ORDER = (
    "state_filter.suppressed", "state_filter.replacements", "entities", "entity_expansion", "expansion",
    "context_priority", "vector_search", "tag_scope", "score_filter", "keywords", "queries", "query",
    "exclude_tags", "tags", "time_window",
)
NO_RESULTS = "No memories found matching your query."
PREVIEW_HINT = 'Content shown as previews — fetch full records with recall_memory({ memory_id: "<id>" }).'


class BudgetError(ValueError):
    """The response cannot fit the token budget; the message says what to do instead."""


def resolve_token_budget(raw: str | None) -> int:
    """AUTOMEM_RECALL_TOKEN_BUDGET, parsed strictly: a positive whole number, else the default."""
    if raw is not None:
        text = raw.strip()
        if text.isdigit() and int(text) > 0:
            return int(text)
    return DEFAULT_TOKEN_BUDGET


def render(result: dict[str, Any], fmt: str, kept: list[ItemOutput], cuts: Cuts) -> ToolResponse:
    """The response with `kept` results and the given cuts applied."""
    total = len(result.get("results") or [])
    omitted = total - len(kept)
    env = envelope(result, len(kept))
    for name in cuts.omitted_fields:
        omit_field(env, name)
    structured: dict[str, Any] = {"results": [k.structured for k in kept], **env}
    if omitted > 0 or cuts.omitted_fields or cuts.compacted_results:
        truncation: dict[str, Any] = {"applied": True, "omitted_results": omitted}
        if cuts.omitted_fields:
            truncation["omitted_fields"] = list(cuts.omitted_fields)
        if cuts.compacted_results:
            truncation["compacted_results"] = cuts.compacted_results
        truncation["reason"] = "response_token_budget"
        structured["truncation"] = truncation

    if total == 0:
        return ToolResponse((NO_RESULTS,), structured)
    if fmt == "json":
        return ToolResponse((pretty_json(structured),), structured)

    stats = notes(env)
    trailer: list[str] = []
    if omitted > 0:
        trailer.append(f"Response budget: showing {len(kept)} of {total} results; {omitted} omitted.")
    if cuts.omitted_fields:
        trailer.append(f"Response budget: omitted {', '.join(cuts.omitted_fields)}.")
    if any(k.truncated for k in kept):
        trailer.append(PREVIEW_HINT)

    if fmt == "items":
        # items has no header: its notes ride in a last block, after the per-memory blocks, which keep
        # their one-to-one order with `results`.
        tail = ([f"Notes: {'; '.join(stats)}."] if stats else []) + trailer
        blocks = [k.text for k in kept] + ([f"[{' '.join(tail)}]"] if tail else [])
        return ToolResponse(tuple(blocks), structured)

    body = "\n\n".join(k.text for k in kept)
    tail_text = f"\n\n[{' '.join(trailer)}]" if trailer else ""
    return ToolResponse((f"{summary_line(total, len(kept), env)}\n\n{body}{tail_text}",), structured)


def build_recall_response(result: dict[str, Any], fmt: str = "text", budget_tokens: int = DEFAULT_TOKEN_BUDGET) -> ToolResponse:
    """The recall_memory tool result for `result`, cut to `budget_tokens` (id fetches are never cut)."""
    results = result.get("results") or []
    id_fetch = result.get("mode") == "id_fetch"
    # An id fetch is the documented way to read a full record: every field, whole content, any format.
    rich = fmt in ("detailed", "json") or id_fetch
    budgeted = not id_fetch and fmt != "json"
    keep_components = fmt == "json" or id_fetch
    per_item = [
        item_output(item, i, fmt, rich=rich, budgeted=budgeted, keep_components=keep_components)
        for i, item in enumerate(results)
    ]
    if id_fetch:
        return render(result, fmt, per_item, Cuts())

    budget_chars = budget_tokens * CHARS_PER_TOKEN
    cuts = Cuts()

    # 1. Everything but the results must fit on its own: drop diagnostics until it does.
    bare = envelope(result, 0)
    for name in ENVELOPE_DROP_ORDER:
        if wire_chars(render(result, fmt, [], cuts)) <= budget_chars:
            break
        if omit_field(bare, name):
            cuts = dataclasses.replace(cuts, omitted_fields=(*cuts.omitted_fields, name))
    empty = render(result, fmt, [], cuts)
    if wire_chars(empty) > budget_chars:
        raise BudgetError(
            f"recall_memory: the response needs about {round(wire_chars(empty) / CHARS_PER_TOKEN)} tokens even without "
            f"results, more than the budget ({BUDGET_ENV}={budget_tokens}); raise the budget"
        )

    # 2. Results in rank order while the whole response fits. Per-item costs are estimates (headers and
    # counts change with what is kept), so the assembled response is measured and trimmed from the tail.
    kept: list[ItemOutput] = []
    used = wire_chars(empty)
    for entry in per_item:
        if used + entry.cost > budget_chars:
            break
        kept.append(entry)
        used += entry.cost
    response = render(result, fmt, kept, cuts)
    while kept and wire_chars(response) > budget_chars:
        kept.pop()
        response = render(result, fmt, kept, cuts)

    # 3. A json result too large to show whole falls back to the compact shape (preview, metadata keys,
    # relation stubs) rather than leaving nothing: the caller still gets its id.
    if not kept and results and fmt == "json":
        compact = item_output(results[0], 0, fmt, rich=True, budgeted=True, keep_components=False)
        compacted = render(result, fmt, [compact], dataclasses.replace(cuts, compacted_results=1))
        if wire_chars(compacted) <= budget_chars:
            return compacted

    # 4. A page that shows nothing would send a pager back to the same offset forever, and a ranked
    # answer of zero results reads as "nothing found": refuse it with what the caller can do instead.
    if not kept and results:
        where = f"at offset {result.get('offset') or 0}" if result.get("mode") == "enumeration" else "ranked first"
        memory_id = results[0]["memory"]["memory_id"]
        raise BudgetError(
            f"recall_memory: the record {where} does not fit the response budget ({BUDGET_ENV}={budget_tokens}); "
            f'fetch it with recall_memory({{ memory_id: "{memory_id}" }}) or raise the budget'
        )
    return response
