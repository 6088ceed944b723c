"""The MCP server against the real engine: a real Engram app (uvicorn, real OpenSearch) and the `mcp`
SDK's own stdio client spawning `python -m service.mcp`. Here: the tool list, health, tokens,
store_memory in every mode, update and delete, hostile lines on the wire; recall_memory is in
test_mcp_recall.py, with the budget cut and paging checked on the `bulk` store below (150 memories
of ~1,550 characters), large enough to need them.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from service.storage.bootstrap import drop_prefix
from tests.integration.live_server import serve

PROJECT_ROOT = Path(__file__).resolve().parents[2]
TOKEN = "mcp-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
BULK = 150
CHARS_PER_TOKEN = 2.5


@dataclass(frozen=True)
class Engram:
    url: str
    dimension: int

    def http(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=AUTH, timeout=60)


@pytest.fixture(scope="module")
def engram(engine_url, embedder, os_client):
    """A real Engram service on a free loopback port, its own indices, removed afterwards."""
    from service.config import Settings
    from service.main import create_app

    prefix = f"t{uuid.uuid4().hex[:10]}"
    settings = Settings(opensearch_url=engine_url, index_prefix=prefix, automem_api_token=TOKEN, write_refresh="true", enrichment_enabled=False)
    with serve(create_app(settings, embedder=embedder)) as url:
        yield Engram(url, embedder.dimension)
    drop_prefix(os_client, prefix)


def vector(seed: int, dimension: int) -> list[float]:
    import numpy as np

    v = np.random.default_rng(seed).normal(size=dimension)
    return [round(float(x), 6) for x in v / np.linalg.norm(v)]


@pytest.fixture(scope="module")
def bulk(engram) -> list[str]:
    """150 memories tagged `bulk`, stored with POST /memory/batch; the ids in GET /memory/by-tag order
    (importance desc, then newest first)."""
    memories = [
        {
            "id": f"bulk-{i:03d}",
            "content": f"Bulk memory {i:03d} about the release train and its deploy checklist. " + f"filler{i % 7} words " * 110,
            "tags": ["bulk", f"bulk:{i % 3}"], "importance": 0.5, "metadata": {"index": i, "batch": "bulk"},
            "timestamp": f"2025-01-{1 + i // 24:02d}T{i % 24:02d}:00:00+00:00", "embedding": vector(i, engram.dimension),
        }
        for i in range(BULK)
    ]
    with engram.http() as http:
        resp = http.post("/memory/batch", json={"memories": memories})
        assert resp.status_code == 201, resp.text
        listed = http.get("/memory/by-tag", params={"tags": "bulk", "limit": 200}).json()
    order = [m["id"] for m in listed["memories"]]
    assert order == [f"bulk-{i:03d}" for i in reversed(range(BULK))]
    return order


# --- the MCP client ---------------------------------------------------------------------------------------
def mcp_params(engram: Engram, **env: str) -> StdioServerParameters:
    values = {"AUTOMEM_ENDPOINT": engram.url, "AUTOMEM_API_KEY": TOKEN, **env}
    values = {k: v for k, v in values.items() if v is not None}
    return StdioServerParameters(command=sys.executable, args=["-m", "service.mcp", "--log-level", "warning"],
                                 cwd=str(PROJECT_ROOT), env=values)


def with_mcp(engram: Engram, scenario: Callable[[ClientSession], Awaitable[Any]], **env: str) -> Any:
    """Spawn the MCP server over stdio, run `scenario` in one session, return what it returns."""

    async def main():
        async with stdio_client(mcp_params(engram, **env), errlog=sys.stderr) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await scenario(session)

    return anyio.run(main)


def wire(result) -> dict:
    """The serialized response the budget bounds: every text block plus structuredContent."""
    return {"content": [{"type": "text", "text": c.text} for c in result.content], "structuredContent": result.structured_content}


def wire_chars(result) -> int:
    text = json.dumps(wire(result), ensure_ascii=False, separators=(",", ":"))
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def text(result) -> str:
    return "\n".join(c.text for c in result.content)


def ok(result):
    assert not result.is_error, text(result)
    return result


def error(result, *fragments: str) -> str:
    assert result.is_error, result
    message = text(result)
    for fragment in fragments:
        assert fragment in message, message
    return message


# --- the tool surface -------------------------------------------------------------------------------------
def test_initialize_and_list_tools(engram):
    async def scenario(session):
        tools = {t.name: t for t in (await session.list_tools()).tools}
        return tools

    tools = with_mcp(engram, scenario)
    assert list(tools) == ["store_memory", "recall_memory", "associate_memories", "update_memory", "delete_memory", "check_database_health"]
    recall = tools["recall_memory"]
    assert recall.annotations.read_only_hint is True and recall.annotations.idempotent_hint is True
    assert tools["delete_memory"].annotations.destructive_hint is True
    assert {"memory_id", "exhaustive", "offset", "format", "query", "tags"} <= set(recall.input_schema["properties"])
    assert recall.output_schema["required"] == ["count", "results"]


def test_health(engram):
    result = with_mcp(engram, lambda s: s.call_tool("check_database_health", {}))
    ok(result)
    assert result.structured_content["status"] == "healthy" and result.structured_content["backend"] == "engram"
    assert result.structured_content["statistics"]["opensearch"]["connected"] is True
    assert text(result).startswith("✅ Engram Health Status\n\nStatus: healthy\nBackend: engram")
    assert result.structured_content["statistics"]["sync_status"] == "synced" and "\nSync status: synced\n" in text(result)
    down = with_mcp(engram, lambda s: s.call_tool("check_database_health", {}), AUTOMEM_ENDPOINT="http://127.0.0.1:9")
    assert not down.is_error and down.structured_content["status"] == "error"
    assert "cannot reach Engram at http://127.0.0.1:9" in down.structured_content["error"]


def test_token_errors_and_the_service_token_fallback(engram, tmp_path):
    missing = str(tmp_path / "no-token-file")
    wrong = with_mcp(engram, lambda s: s.call_tool("recall_memory", {"query": "x"}), AUTOMEM_API_KEY="nope")
    error(wrong, "HTTP 401", "set AUTOMEM_API_KEY")
    fallback = with_mcp(engram, lambda s: s.call_tool("recall_memory", {"query": "x"}), AUTOMEM_API_KEY=None, AUTOMEM_API_TOKEN=TOKEN,
                        ENGRAM_TOKEN_FILE=missing)
    ok(fallback)
    # Neither variable: the token file a local install (`make run`, `engram serve`) writes.
    (tmp_path / "token").write_text(TOKEN + "\n")
    from_file = with_mcp(engram, lambda s: s.call_tool("recall_memory", {"query": "x"}), AUTOMEM_API_KEY=None,
                         ENGRAM_TOKEN_FILE=str(tmp_path / "token"))
    ok(from_file)
    nothing = with_mcp(engram, lambda s: s.call_tool("recall_memory", {"query": "x"}), AUTOMEM_API_KEY=None, ENGRAM_TOKEN_FILE=missing)
    error(nothing, "HTTP 401", "set AUTOMEM_API_KEY")
    unreachable = with_mcp(engram, lambda s: s.call_tool("recall_memory", {"query": "x"}), AUTOMEM_ENDPOINT="http://127.0.0.1:9")
    error(unreachable, "cannot reach Engram at http://127.0.0.1:9", "check AUTOMEM_API_URL")


# --- store_memory -------------------------------------------------------------------------------------------
def test_store_memory_single_embedding_supersede_and_batch(engram):
    emb = vector(999, engram.dimension)

    async def scenario(session):
        out = {}
        out["single"] = await session.call_tool("store_memory", {
            "content": "Chose PostgreSQL over MongoDB for the user service.", "tags": ["store-test", "database"],
            "importance": 0.9, "metadata": {"files": ["db.py"]}, "type": "Decision"})
        out["embedded"] = await session.call_tool("store_memory", {"content": "Embedded memory.", "tags": ["store-test"], "embedding": emb})
        out["bad_dims"] = await session.call_tool("store_memory", {"content": "Wrong size.", "embedding": [0.1, 0.2]})
        old = out["single"].structured_content["memory_id"]
        out["supersede"] = await session.call_tool("store_memory", {
            "content": "Moved the user service to SQLite.", "tags": ["store-test"], "supersedes_memory_id": old,
            "supersede_reason": "Correction from user"})
        out["batch"] = await session.call_tool("store_memory", {"memories": [
            {"content": "Batch one.", "tags": ["store-batch"]}, {"content": "Batch two.", "tags": ["store-batch"], "importance": 0.7},
            {"content": "Batch three.", "tags": ["store-batch"], "type": "Insight"}]})
        out["batch_embedding"] = await session.call_tool("store_memory", {"memories": [{"content": "x", "embedding": emb}]})
        out["both"] = await session.call_tool("store_memory", {"content": "x", "memories": [{"content": "y"}]})
        out["neither"] = await session.call_tool("store_memory", {"tags": ["x"]})
        out["too_long"] = await session.call_tool("store_memory", {"content": "z" * 2001})
        out["long"] = await session.call_tool("store_memory", {"content": "w" * 600, "tags": ["store-test"]})
        out["bad_type"] = await session.call_tool("store_memory", {"content": "x", "type": "Diary"})
        return out

    out = with_mcp(engram, scenario)
    single = ok(out["single"]).structured_content
    assert single == {"memory_id": single["memory_id"], "message": "Memory stored successfully"}
    assert text(out["single"]) == f"Memory stored successfully!\n\nMemory ID: {single['memory_id']}"
    error(out["bad_dims"], "embedding", "HTTP 400")
    sup = ok(out["supersede"]).structured_content
    assert sup["superseded_memory_id"] == single["memory_id"] and sup["association_created"] is True
    batch = ok(out["batch"]).structured_content
    assert batch["stored"] == 3 and len(batch["memory_ids"]) == 3 and batch["message"] == "Stored 3 of 3 memories"
    error(out["batch_embedding"], "batch mode does not take memories[0].embedding")
    error(out["both"], "not both")
    error(out["neither"], "content is required")
    too_long = out["too_long"]
    error(too_long, "exceeds the hard limit (2000 chars)")
    assert too_long.structured_content == {"error": "content_too_large", "content_length": 2001, "hard_limit": 2000,
                                           "message": "Content exceeds maximum allowed length of 2000 characters"}
    long = ok(out["long"]).structured_content
    assert long["size_warning"] is True and long["content_length"] == 600
    error(out["bad_type"], "type: 'Diary' is not one of")

    with engram.http() as http:
        stored = http.get(f"/memory/{single['memory_id']}").json()["memory"]
        assert stored["content"] == "Chose PostgreSQL over MongoDB for the user service." and stored["metadata"] == {"files": ["db.py"]}
        assert stored["t_invalid"] is not None and stored["supersede_type"] == "INVALIDATED_BY"
        new = http.get(f"/memory/{sup['memory_id']}").json()["memory"]
        assert new["metadata"] == {"supersede_reason": "Correction from user"}
        related = http.get(f"/memories/{single['memory_id']}/related", params={"relationship_types": "INVALIDATED_BY"}).json()
        assert [r["id"] for r in related["related_memories"]] == [sup["memory_id"]]
        batch_page = http.get("/memory/by-tag", params={"tags": "store-batch"}).json()
        assert sorted(m["content"] for m in batch_page["memories"]) == ["Batch one.", "Batch three.", "Batch two."]
        embedded = out["embedded"].structured_content["memory_id"]
        similar = http.get("/recall", params={"embedding": ",".join(map(str, emb)), "tags": "store-test", "limit": 1}).json()
        assert [r["id"] for r in similar["results"]] == [embedded]


# --- update_memory and delete_memory -----------------------------------------------------------------------
def test_update_and_delete(engram):
    with engram.http() as http:
        ids = [http.post("/memory", json={"content": f"Disposable {i}.", "tags": ["disposable"]}).json()["memory_id"] for i in range(4)]

    async def scenario(session):
        out = {"update": await session.call_tool("update_memory", {"memory_id": ids[0], "importance": 0.95, "tags": ["disposable", "edited"],
                                                                    "metadata": {"reviewed": True}})}
        out["fetched"] = await session.call_tool("recall_memory", {"memory_id": ids[0], "format": "json"})
        out["update_missing"] = await session.call_tool("update_memory", {"memory_id": "missing-memory", "importance": 0.1})
        out["update_nothing"] = await session.call_tool("update_memory", {"memory_id": ids[0]})
        out["delete"] = await session.call_tool("delete_memory", {"memory_id": ids[1]})
        out["delete_again"] = await session.call_tool("delete_memory", {"memory_id": ids[1]})
        out["delete_both"] = await session.call_tool("delete_memory", {"memory_id": ids[2], "tags": ["disposable"]})
        out["delete_neither"] = await session.call_tool("delete_memory", {})
        out["delete_tags"] = await session.call_tool("delete_memory", {"tags": ["disposable"]})
        out["after"] = await session.call_tool("recall_memory", {"tags": ["disposable"], "exhaustive": True})
        return out

    out = with_mcp(engram, scenario)
    assert ok(out["update"]).structured_content == {"memory_id": ids[0], "message": f"Memory {ids[0]} updated successfully!"}
    fetched = ok(out["fetched"]).structured_content["results"][0]
    assert (fetched["importance"], fetched["tags"], fetched["metadata"]) == (0.95, ["disposable", "edited"], {"reviewed": True})
    error(out["update_missing"], "Memory missing-memory not found (HTTP 404)")
    error(out["update_nothing"], "nothing to update")
    assert ok(out["delete"]).structured_content == {"memory_id": ids[1], "message": f"Memory {ids[1]} deleted successfully!"}
    error(out["delete_again"], f"Memory {ids[1]} not found (HTTP 404)")
    error(out["delete_both"], "not both")
    error(out["delete_neither"], "memory_id (one memory) or tags (bulk) is required")
    bulk_delete = ok(out["delete_tags"]).structured_content
    assert bulk_delete == {"deleted_count": 3, "tags": ["disposable"],
                           "message": "Bulk delete complete: removed 3 memories matching tag(s) disposable."}
    after = ok(out["after"])
    assert after.structured_content["results"] == [] and text(after) == "No memories found matching your query."


# --- hostile input on the wire ------------------------------------------------------------------------------
def test_hostile_lines_get_errors_and_the_server_survives_them(engram):
    """Raw JSON-RPC, since the SDK's own client cannot even send these: NaN, a lone surrogate, 300 levels
    of nesting, arguments that are not an object, an unknown tool; then a normal call still works."""
    import queue
    import subprocess

    deep: Any = "x"
    for _ in range(300):
        deep = {"a": deep}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
    lines = [json.dumps(init), json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})]
    call = '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":%s}}'
    lines += [
        call % (2, "store_memory", '{"content":"nan","importance":NaN}'),
        call % (3, "store_memory", '{"content":"bad \\ud800 text","tags":["hostile"]}'),
        call % (4, "store_memory", json.dumps({"content": "deep", "metadata": deep})),
        call % (5, "recall_memory", "[1]"),
        call % (6, "no_such_tool", "{}"),
    ]
    env = {**os.environ, "AUTOMEM_ENDPOINT": engram.url, "AUTOMEM_API_KEY": TOKEN}
    proc = subprocess.Popen([sys.executable, "-m", "service.mcp", "--log-level", "error"], cwd=PROJECT_ROOT, env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    replies: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [replies.put(line) for line in proc.stdout], daemon=True).start()
    answers: dict[int, dict] = {}

    def until(answer_id: int) -> None:
        while answer_id not in answers:
            message = json.loads(replies.get(timeout=60))  # queue.Empty fails the test instead of hanging it
            answers[message.get("id")] = message

    try:
        proc.stdin.write("\n".join(lines) + "\n")
        proc.stdin.flush()
        until(6)
        proc.stdin.write(call % (7, "check_database_health", "{}") + "\n")
        proc.stdin.flush()
        until(7)
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    assert answers[2]["result"]["isError"] is True
    assert "NaN and Infinity are not JSON numbers" in answers[2]["result"]["content"][0]["text"]
    assert answers[5]["error"]["code"] == -32602
    assert answers[6]["result"]["isError"] is True and "Unknown tool: no_such_tool" in answers[6]["result"]["content"][0]["text"]
    assert answers[7]["result"]["structuredContent"]["status"] == "healthy"
    with engram.http() as http:  # nothing half-written from the lines that could not be read
        assert http.get("/memory/by-tag", params={"tags": "hostile"}).json()["count"] == 0


def test_store_memory_forwards_a_callers_id(engram):
    """mcp-automem's store_memory schema has `id` and forwards it: the memory is then fetched by it."""
    mid = "bdb22724-0000-4000-8000-000000000001"

    async def scenario(session):
        stored = await session.call_tool("store_memory", {"content": "Stored under the caller's own id.", "id": mid})
        fetched = await session.call_tool("recall_memory", {"memory_id": mid})
        batch = await session.call_tool("store_memory", {"memories": [{"content": "x", "id": "no-ids-in-batches"}]})
        return stored, fetched, batch

    stored, fetched, batch = with_mcp(engram, scenario)
    assert ok(stored).structured_content["memory_id"] == mid
    assert ok(fetched).structured_content["results"][0]["memory_id"] == mid
    error(batch, "batch mode does not take memories[0].id")
