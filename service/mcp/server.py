"""The MCP server (the `mcp` SDK's low-level Server): tools/list and tools/call over Engram's HTTP API.

Every tool call is checked against its input schema, makes its HTTP request(s) through EngramClient
and answers with text plus structuredContent. Every failure — bad arguments, an HTTP error, a
budget too small — is an `isError: true` result, so the calling model sees a tool error it can act
on rather than an empty answer (spec 000 "MCP Response Formatting").
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from jsonschema import Draft202012Validator
from mcp.server import Server

from service import __version__
from service.mcp.budget import BudgetError, build_recall_response
from service.mcp.client import ApiError, EngramClient
from service.mcp.http_auth import caller_token
from service.mcp.recall_request import NORMALIZERS, ArgumentError, lenient_arguments, plan_recall
from service.mcp.settings import McpSettings
from service.mcp.tools import CONTENT_HARD_LIMIT, CONTENT_SOFT_LIMIT, INSTRUCTIONS, TOOLS, TOOLS_BY_NAME

log = logging.getLogger("engram.mcp")

SINGLE_FIELDS = (
    "id", "content", "tags", "importance", "embedding", "metadata", "timestamp", "type", "confidence", "t_valid",
    "t_invalid", "updated_at", "last_accessed",
)
BATCH_FIELDS = ("content", "tags", "importance", "timestamp", "type", "confidence", "metadata")
BATCH_REFUSED = ("id", "embedding", "t_valid", "t_invalid")
UPDATE_FIELDS = tuple(name for name in TOOLS_BY_NAME["update_memory"].input_schema["properties"] if name != "memory_id")
PAIR_FIELDS = ("memory1_id", "memory2_id", "type", "strength")
PROPERTY_FIELDS = ("context", "reason", "pattern_type", "confidence", "resolution", "observations", "timestamp", "transformation", "role")
_VALIDATORS = {tool.name: Draft202012Validator(tool.input_schema) for tool in TOOLS}


@dataclass(frozen=True)
class Reply:
    """A tool's answer before it becomes a CallToolResult."""

    texts: tuple[str, ...]
    structured: dict[str, Any] | None = None
    error: bool = False


class ToolError(Exception):
    """A call the tool refuses; the message is the answer."""


def _given(args: dict[str, Any], name: str) -> bool:
    return args.get(name) is not None


def schema_errors(name: str, args: dict[str, Any]) -> list[str]:
    """Where the arguments break the tool's input schema, one line per problem."""
    found = sorted(_VALIDATORS[name].iter_errors(args), key=lambda e: list(map(str, e.path)))
    return [f"{'.'.join(map(str, e.path)) or 'arguments'}: {e.message}" for e in found[:5]]


# --- the tools ------------------------------------------------------------------------------------------
async def store_memory(client: EngramClient, args: dict[str, Any], settings: McpSettings) -> Reply:
    batch = args.get("memories")
    if batch is not None and _given(args, "content"):
        raise ToolError("pass either content (single mode) or memories (batch mode), not both")
    if batch is not None:
        return await _store_batch(client, batch)
    content = args.get("content")
    if content is None:
        raise ToolError("content is required (or memories: [...] for batch mode)")
    if len(content) > CONTENT_HARD_LIMIT:
        message = f"Content exceeds maximum allowed length of {CONTENT_HARD_LIMIT} characters"
        return Reply(
            (f"Memory rejected: content length ({len(content)} chars) exceeds the hard limit ({CONTENT_HARD_LIMIT} chars). "
             "Split it into smaller, focused memories or summarize it first.",),
            {"error": "content_too_large", "content_length": len(content), "hard_limit": CONTENT_HARD_LIMIT, "message": message},
            error=True,
        )
    body = {k: args[k] for k in SINGLE_FIELDS if _given(args, k)}
    old = args.get("supersedes_memory_id")
    if old:
        body["supersedes"] = old
        body["supersede_type"] = args.get("supersede_relation") or "INVALIDATED_BY"
        if args.get("supersede_reason"):
            # POST /memory takes no reason: it is kept on the new memory (see README, MCP server).
            body["metadata"] = {**(body.get("metadata") or {}), "supersede_reason": args["supersede_reason"]}
    resp = await client.store(body)
    out: dict[str, Any] = {"memory_id": resp["memory_id"], "message": "Memory stored successfully"}
    lines = [f"Memory stored successfully!\n\nMemory ID: {resp['memory_id']}"]
    if old:
        out.update(superseded_memory_id=old, association_created=True)
        lines.append(f"Superseded memory ID: {old} ({body['supersede_type']})\nAssociation created: yes")
    if resp.get("warnings"):
        out["warnings"] = resp["warnings"]
        lines.extend(f"Warning: {w}" for w in resp["warnings"])
    if len(content) > CONTENT_SOFT_LIMIT:
        out.update(content_length=len(content), size_warning=True)
        lines.append(f"Note: content length ({len(content)} chars) exceeds the recommended {CONTENT_SOFT_LIMIT}.")
    return Reply(("\n".join(lines),), out)


async def _store_batch(client: EngramClient, batch: list[dict[str, Any]]) -> Reply:
    if not batch:
        raise ToolError("memories must hold at least one memory")
    refused = [f"memories[{i}].{k}" for i, m in enumerate(batch) for k in BATCH_REFUSED if k in m]
    if refused:
        raise ToolError(f"batch mode does not take {', '.join(refused[:5])}: store those memories in single mode")
    resp = await client.store_batch([{k: m[k] for k in BATCH_FIELDS if _given(m, k)} for m in batch])
    ids = [i for i in resp.get("memory_ids") or [] if i]
    failed = resp.get("failed") or []
    message = f"Stored {len(ids)} of {len(batch)} memories" + (f"; {len(failed)} failed" if failed else "")
    preview = ", ".join(ids[:10]) + (f", …(+{len(ids) - 10})" if len(ids) > 10 else "")
    text = f"Stored {len(ids)} memories." + (f"\nIDs: {preview}" if ids else "") + f"\nMessage: {message}"
    text += "".join(f"\nFailed: memories[{f.get('index')}]: {f.get('reason')}" for f in failed[:10])
    out: dict[str, Any] = {"stored": len(ids), "memory_ids": ids, "message": message}
    if failed:
        out["failed"] = failed
    if resp.get("warnings"):
        out["warnings"] = resp["warnings"]
    return Reply((text,), out)


async def recall_memory(client: EngramClient, args: dict[str, Any], settings: McpSettings) -> Reply:
    plan = plan_recall(args)
    try:
        body = await client.get(plan.path, list(plan.params))
    except ApiError as exc:
        if plan.mode != "id_fetch" or exc.status != 404:
            raise
        body = None  # a missing id is no memory found, not a failed call (mcp-automem)
    response = build_recall_response(NORMALIZERS[plan.mode](body), plan.format, settings.token_budget)
    return Reply(response.texts, response.structured)


async def associate_memories(client: EngramClient, args: dict[str, Any], settings: McpSettings) -> Reply:
    batch = args.get("associations")
    if batch is not None:
        if any(_given(args, k) for k in PAIR_FIELDS):
            raise ToolError("pass either associations (batch mode) or memory1_id/memory2_id/type/strength, not both")
        resp = await client.associate({"associations": batch})
        failed = resp.get("failed") or []
        out = {
            "success": not failed, "message": resp.get("summary") or "", "created_count": resp.get("created_count", 0),
            "failed_count": resp.get("failed_count", len(failed)), "succeeded": resp.get("succeeded") or [],
            "failed": failed, "summary": resp.get("summary") or "",
        }
        head = "Associations created successfully!" if not failed else "Associations completed with failures."
        lines = [f"{head}\n\nMessage: {out['message']}\n\nCreated: {out['created_count']}\nFailed: {out['failed_count']}"]
        lines.extend(f"- associations[{f.get('index')}]: {f.get('reason') or f.get('error')}" for f in failed[:10])
        return Reply(("\n".join(lines),), out)
    if not (_given(args, "memory1_id") and _given(args, "memory2_id")):
        raise ToolError("memory1_id and memory2_id are required (or associations: [...] for batch mode)")
    resp = await client.associate({k: args[k] for k in PAIR_FIELDS + PROPERTY_FIELDS if _given(args, k)})
    message = resp.get("message") or "Association created"
    return Reply((f"Association created successfully!\n\nMessage: {message}",), {"success": True, "message": message})


async def update_memory(client: EngramClient, args: dict[str, Any], settings: McpSettings) -> Reply:
    memory_id = args["memory_id"]
    changes = {k: args[k] for k in UPDATE_FIELDS if _given(args, k)}
    if not changes:
        raise ToolError(f"nothing to update: pass at least one of {', '.join(UPDATE_FIELDS)}")
    resp = await client.update(memory_id, changes)
    message = f"Memory {resp.get('memory_id', memory_id)} updated successfully!"
    return Reply((message,), {"memory_id": resp.get("memory_id", memory_id), "message": message})


async def delete_memory(client: EngramClient, args: dict[str, Any], settings: McpSettings) -> Reply:
    memory_id, tags = args.get("memory_id"), args.get("tags")
    if memory_id is not None and tags is not None:
        raise ToolError("pass either memory_id (one memory) or tags (every memory carrying them), not both")
    if tags is not None:
        clean = [t.strip() for t in tags if t.strip()]
        if not clean:
            raise ToolError("tags must hold at least one non-empty tag")
        resp = await client.delete_by_tags(clean)
        n = resp.get("deleted_count", 0)
        message = f"Bulk delete complete: removed {n} memor{'y' if n == 1 else 'ies'} matching tag(s) {', '.join(clean)}."
        return Reply((message,), {"deleted_count": n, "tags": resp.get("tags") or clean, "message": message})
    if not memory_id:
        raise ToolError("memory_id (one memory) or tags (bulk) is required")
    resp = await client.delete(memory_id)
    message = f"Memory {resp.get('memory_id', memory_id)} deleted successfully!"
    return Reply((message,), {"memory_id": resp.get("memory_id", memory_id), "message": message})


async def check_database_health(client: EngramClient, args: dict[str, Any], settings: McpSettings) -> Reply:
    try:
        body = await client.health()
    except ApiError as exc:
        out = {"status": "error", "backend": "engram", "statistics": {"endpoint": client.endpoint}, "error": exc.message}
        return Reply((f"❌ Engram Health Status\n\nStatus: error\nBackend: engram\nEndpoint: {client.endpoint}\nError: {exc.message}",), out)
    status = body.get("status") if body.get("status") in ("healthy", "degraded") else "error"
    stats = {k: v for k, v in body.items() if k != "status"}
    engine = body.get("opensearch") or {}
    lines = [f"{'✅' if status == 'healthy' else '⚠️' if status == 'degraded' else '❌'} Engram Health Status", "",
             f"Status: {status}", "Backend: engram", f"Endpoint: {client.endpoint}"]
    if engine:
        lines.append(f"OpenSearch: {'connected' if engine.get('connected') else 'not connected'}"
                     + (f" ({engine['cluster_status']})" if engine.get("cluster_status") else ""))
    for key, label in (("memory_count", "Memory count"), ("vector_count", "Vector count"), ("sync_status", "Sync status"), ("edge_count", "Edge count"),
                       ("version", "Version"), ("timestamp", "Timestamp")):
        if body.get(key) is not None:
            lines.append(f"{label}: {body[key]}")
    if (body.get("embedding") or {}).get("model"):
        lines.append(f"Embedding: {body['embedding']['model']} ({body['embedding'].get('vector_size')} dims)")
    out: dict[str, Any] = {"status": status, "backend": "engram", "statistics": stats}
    if engine.get("error"):
        out["error"] = engine["error"]
        lines.append(f"Error: {engine['error']}")
    return Reply(("\n".join(lines),), out)


Handler = Callable[[EngramClient, dict[str, Any], McpSettings], Awaitable[Reply]]
HANDLERS: dict[str, Handler] = {
    "store_memory": store_memory, "recall_memory": recall_memory, "associate_memories": associate_memories,
    "update_memory": update_memory, "delete_memory": delete_memory, "check_database_health": check_database_health,
}


async def run_tool(client: EngramClient, settings: McpSettings, name: str, args: dict[str, Any]) -> Reply:
    """One tool call, every failure turned into an error reply."""
    if name not in HANDLERS:
        return Reply((f"Error: Unknown tool: {name}; the tools are {', '.join(HANDLERS)}",), error=True)
    args, notes = LENIENT[name](args) if name in LENIENT else (args, [])
    problems = schema_errors(name, args)
    if problems:
        return Reply((f"Error: invalid arguments for {name}: " + "; ".join(problems),), error=True)
    try:
        return with_notes(await HANDLERS[name](client, args, settings), notes)
    except (ToolError, ArgumentError, BudgetError) as exc:
        return Reply((f"Error: {exc}",), error=True)
    except ApiError as exc:
        return Reply((f"Error: {exc.message}",), error=True)
    except Exception as exc:  # noqa: BLE001 - a tool answers with an error, it never drops the session
        log.exception("%s failed", name)
        return Reply((f"Error: {type(exc).__name__}: {exc}",), error=True)


def one_tag_string(args: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`tags` given as one string is that one tag (mcp-automem)."""
    return ({**args, "tags": [args["tags"]]} if isinstance(args.get("tags"), str) else args), []


LENIENT: dict[str, Callable[[dict[str, Any]], tuple[dict[str, Any], list[str]]]] = {
    "recall_memory": lenient_arguments, "store_memory": one_tag_string, "update_memory": one_tag_string, "delete_memory": one_tag_string,
}


def with_notes(reply: Reply, notes: list[str]) -> Reply:
    """The reply, with what was changed in the arguments told in its text and as structured `warnings`."""
    if not notes or reply.error:
        return reply
    structured = {**(reply.structured or {}), "warnings": [*((reply.structured or {}).get("warnings") or []), *notes]}
    return Reply((*reply.texts, "Note: " + "; ".join(notes)), structured)


def to_result(reply: Reply) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=t) for t in reply.texts], structured_content=reply.structured, is_error=reply.error,
    )


def create_server(settings: McpSettings, *, client_factory: Callable[[], EngramClient] | None = None) -> Server:
    """The MCP server; its lifespan owns the one HTTP client to Engram."""

    @asynccontextmanager
    async def lifespan(_: Server) -> AsyncIterator[EngramClient]:
        client = client_factory() if client_factory else EngramClient(settings.endpoint, settings.api_key)
        try:
            yield client
        finally:
            await client.aclose()

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(TOOLS))

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        started = time.perf_counter()
        client = ctx.lifespan_context
        token = caller_token(ctx.request)  # over HTTP: a service token the caller sent is the one its calls use
        if token and not (settings.mcp_token and token == settings.mcp_token):
            client = client.with_token(token)
        reply = await run_tool(client, settings, params.name, dict(params.arguments or {}))
        # Never the arguments or the answer: they carry the agent's query text and memories.
        log.info("%s %s in %.1f ms", params.name, "failed" if reply.error else "ok", (time.perf_counter() - started) * 1000)
        return to_result(reply)

    return Server(
        "engram", version=__version__, title="Engram memory", instructions=INSTRUCTIONS, lifespan=lifespan,
        on_list_tools=list_tools, on_call_tool=call_tool,
    )
