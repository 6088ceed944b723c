"""recall_memory over stdio against the real engine, in every mode and format: id fetch, enumeration
(cut by the budget and paged through all 150 bulk memories), ranked (cut by the budget), the mode
rejections, small budgets, and what detailed shows of the graph (relation stubs, metadata keys,
the summary line). Fixtures and helpers are test_mcp_stdio's."""

from __future__ import annotations

import json

from tests.integration.test_mcp_stdio import (  # noqa: F401 - engram and bulk are fixtures
    BULK,
    CHARS_PER_TOKEN,
    bulk,
    engram,
    error,
    ok,
    text,
    wire_chars,
    with_mcp,
)


# --- recall_memory: id fetch --------------------------------------------------------------------------------
def test_id_fetch_returns_the_whole_record_in_every_format(engram):
    content = "Full record. " + "long detail " * 400  # ~4,800 characters: far past the 400-character preview
    with engram.http() as http:
        mid = http.post("/memory", json={"content": content, "tags": ["id-fetch"], "metadata": {"k": "v"},
                                         "t_valid": "2025-01-01T00:00:00+00:00"}).json()["memory_id"]

    async def scenario(session):
        out = {fmt: await session.call_tool("recall_memory", {"memory_id": mid, "format": fmt}) for fmt in ("text", "items", "detailed", "json")}
        # Every other argument is ignored, even ones no mode accepts together.
        out["ignored"] = await session.call_tool("recall_memory", {"memory_id": mid, "exhaustive": True, "query": "x", "offset": 7})
        out["missing"] = await session.call_tool("recall_memory", {"memory_id": "no-such-memory"})
        return out

    out = with_mcp(engram, scenario, AUTOMEM_RECALL_TOKEN_BUDGET="300")  # a budget the record could never fit
    for fmt in ("text", "items", "detailed", "json", "ignored"):
        structured = ok(out[fmt]).structured_content
        assert structured["mode"] == "id_fetch" and structured["count"] == 1 and "truncation" not in structured
        (record,) = structured["results"]
        assert record["memory_id"] == mid and record["content"] == content and "content_truncated" not in record
        assert record["metadata"] == {"k": "v"} and record["t_valid"].startswith("2025-01-01T00:00:00")
        assert record["archived"] is False
    assert text(out["text"]).startswith(f"Found 1 memories:\n\n1. {content} [id-fetch] (importance: 0.5) score=1.000 [direct]\n   ID: {mid}\n   Created: ")
    assert text(out["items"]) == f"[{mid}] {content}"
    assert text(out["detailed"]).startswith(f"Found 1 memories:\n\n{content}\n  ID: {mid}\n  Type: ")
    assert json.loads(out["json"].content[0].text) == out["json"].structured_content
    # A missing id is no memory found, not a tool error (mcp-automem), and records read by id carry a
    # `direct` match at score 1.
    missing = ok(out["missing"])
    assert text(missing) == "No memories found matching your query." and missing.structured_content["count"] == 0
    assert (structured["results"][0]["final_score"], structured["results"][0]["match_type"]) == (1, "direct")


# --- recall_memory: enumeration -------------------------------------------------------------------------------
def test_enumeration_is_cut_by_the_budget_and_pages_through_every_record(engram, bulk):
    async def scenario(session):
        first = await session.call_tool("recall_memory", {"tags": ["bulk"], "exhaustive": True, "limit": 200})
        pages, offset = [], 0
        while True:
            page = await session.call_tool("recall_memory", {"tags": ["bulk"], "exhaustive": True, "limit": 200, "offset": offset})
            pages.append(page)
            if not page.structured_content.get("has_more"):
                return first, pages
            offset = page.structured_content["next_offset"]

    first, pages = with_mcp(engram, scenario)
    s = ok(first).structured_content
    kept = s["count"]
    assert 20 < kept < BULK and len(s["results"]) == kept
    assert (s["mode"], s["has_more"], s["limit"], s["offset"], s["next_offset"]) == ("enumeration", True, kept, 0, kept)
    assert s["truncation"] == {"applied": True, "omitted_results": BULK - kept, "reason": "response_token_budget"}
    assert wire_chars(first) <= 18_000 * CHARS_PER_TOKEN
    assert [r["memory_id"] for r in s["results"]] == bulk[:kept]
    record = s["results"][0]
    assert record["content_truncated"] is True and len(record["content"]) == 401 and record["content_chars"] > 1500
    assert record["tags"] == ["bulk", "bulk:2"] and record["final_score"] == 1 and record["match_type"] == "direct"
    body = text(first)
    assert body.startswith(f"Found {BULK} memories (showing {kept}) (enumeration page: offset 0, limit {kept} — more pages available, "
                           f"next offset {kept}):\n\n1. Bulk memory 149 about the release train")
    assert body.endswith(f"[Response budget: showing {kept} of {BULK} results; {BULK - kept} omitted. Content shown as previews — "
                         'fetch full records with recall_memory({ memory_id: "<id>" }).]')
    # Following next_offset visits every record once, in the service's order.
    seen = [r["memory_id"] for p in pages for r in ok(p).structured_content["results"]]
    assert seen == bulk and len(pages) >= 4
    assert all(wire_chars(p) <= 18_000 * CHARS_PER_TOKEN for p in pages)
    assert pages[-1].structured_content["has_more"] is False and "next_offset" not in pages[-1].structured_content


def test_enumeration_formats(engram, bulk):
    async def scenario(session):
        return {fmt: await session.call_tool("recall_memory", {"tags": ["bulk"], "exhaustive": True, "limit": 5, "offset": 10, "format": fmt})
                for fmt in ("text", "items", "detailed", "json")}

    out = with_mcp(engram, scenario)
    for fmt, result in out.items():
        s = ok(result).structured_content
        assert [r["memory_id"] for r in s["results"]] == bulk[10:15], fmt
        assert (s["count"], s["limit"], s["offset"], s["has_more"], s["next_offset"]) == (5, 5, 10, True, 15)
    items = out["items"].content
    assert [c.text.split("]")[0] for c in items[:5]] == [f"[{mid}" for mid in bulk[10:15]]
    assert len(items) == 6 and items[5].text == (
        "[Notes: enumeration page: offset 10, limit 5 — more pages available, next offset 15. "
        'Content shown as previews — fetch full records with recall_memory({ memory_id: "<id>" }).]'
    )
    detailed = out["detailed"].structured_content["results"][0]
    assert detailed["metadata_keys"] == ["batch", "index"] and detailed["type"] and "metadata" not in detailed
    assert "\n  Tags: bulk, bulk:" in text(out["detailed"])
    raw = out["json"].structured_content["results"][0]
    assert raw["metadata"] == {"index": 139, "batch": "bulk"} and len(raw["content"]) > 1500 and "content_truncated" not in raw
    assert {"t_valid", "t_invalid", "archived"} & set(raw) == {"archived"}  # t_valid / t_invalid unset on these memories
    assert json.loads(out["json"].content[0].text) == out["json"].structured_content


def test_enumeration_rejects_ranked_parameters_and_arguments_are_taken_leniently(engram, bulk):
    from service.mcp.recall_request import RANKED_ONLY
    from tests.unit.test_mcp_recall_request import SAMPLE

    async def scenario(session):
        out = {name: await session.call_tool("recall_memory", {"tags": ["bulk"], "exhaustive": True, name: SAMPLE[name]})
               for name in RANKED_ONLY}
        out["tag_mode"] = await session.call_tool("recall_memory", {"tags": ["bulk"], "exhaustive": True, "tag_mode": "all"})
        out["tag_match"] = await session.call_tool("recall_memory", {"tags": ["bulk"], "exhaustive": True, "tag_match": "prefix"})
        out["no_tags"] = await session.call_tool("recall_memory", {"exhaustive": True, "limit": 5})
        out["whole"] = await session.call_tool("recall_memory", {"query": "release train", "limit": 8, "format": "json"})
        out["offset"] = await session.call_tool("recall_memory", {"query": "release train", "limit": 3, "offset": 5, "format": "json"})
        out["clamped"] = await session.call_tool("recall_memory", {"query": "x", "limit": 500})
        out["format"] = await session.call_tool("recall_memory", {"query": "x", "limit": 1, "format": "xml"})
        out["one_tag"] = await session.call_tool("recall_memory", {"tags": "bulk", "exhaustive": True, "limit": 1})
        return out

    out = with_mcp(engram, scenario)
    for name in RANKED_ONLY:
        error(out[name], f"does not accept {name};", 'it accepts only tags, limit, offset, tag_mode: "any", tag_match: "exact" and format')
    error(out["tag_mode"], 'does not accept tag_mode: "all"')
    error(out["tag_match"], 'does not accept tag_match: "prefix"')
    error(out["no_tags"], "exhaustive: true needs a non-empty tags list")
    # Ranked recall pages with offset: the same ranking, then the slice.
    ranked = [r["memory_id"] for r in ok(out["whole"]).structured_content["results"]]
    assert [r["memory_id"] for r in ok(out["offset"]).structured_content["results"]] == ranked[5:8]
    assert ok(out["clamped"]).structured_content["warnings"] == ["limit 500 is outside 1..200: used 200"]
    assert "Note: limit 500 is outside 1..200: used 200" in text(out["clamped"])
    assert ok(out["format"]).structured_content["warnings"] == ["format 'xml' is not one of text, items, detailed, json: used text"]
    assert ok(out["one_tag"]).structured_content["count"] == 1  # tags as one string is that one tag


# --- recall_memory: ranked ------------------------------------------------------------------------------------
def test_ranked_recall_is_cut_by_the_budget_in_every_format(engram, bulk):
    args = {"query": "release train deploy checklist", "tags": ["bulk"], "limit": 100}

    async def scenario(session):
        return {fmt: await session.call_tool("recall_memory", {**args, "format": fmt}) for fmt in ("text", "items", "detailed", "json")}

    out = with_mcp(engram, scenario)
    with engram.http() as http:
        direct = [r["id"] for r in http.get("/recall", params=args).json()["results"]]
    assert len(direct) == 100
    for fmt, result in out.items():
        s = ok(result).structured_content
        kept = len(s["results"])
        assert 5 < kept < 100, fmt
        assert s["mode"] == "ranked" and s["count"] == 100 and s["query"] == args["query"]
        assert s["truncation"] == {"applied": True, "omitted_results": 100 - kept, "reason": "response_token_budget"}
        assert [r["memory_id"] for r in s["results"]] == direct[:kept], fmt  # the service's rank order, from the top
        assert wire_chars(result) <= 18_000 * CHARS_PER_TOKEN, fmt
        assert all(r["match_type"] and isinstance(r["final_score"], float) for r in s["results"])
        assert "has_more" not in s and "next_offset" not in s
    body = text(out["text"])
    kept = len(out["text"].structured_content["results"])
    assert body.startswith(f"Found 100 memories (showing {kept}):\n\n1. Bulk memory ")
    first_line = body.split("\n")[2]
    top = out["text"].structured_content["results"][0]
    assert first_line.endswith(f"… [{', '.join(top['tags'])}] (importance: 0.5) score={top['final_score']:.3f} [{top['match_type']}]")
    assert f"[Response budget: showing {kept} of 100 results; {100 - kept} omitted." in body
    assert len(out["items"].content) == len(out["items"].structured_content["results"]) + 1
    raw = out["json"].structured_content["results"][0]
    assert len(raw["content"]) > 1500 and raw["score_components"]["vector"] >= 0 and raw["source"] == "opensearch"
    assert len(out["json"].structured_content["results"]) < len(out["detailed"].structured_content["results"])


def test_small_budgets_page_in_smaller_steps_and_refuse_what_cannot_fit(engram, bulk):
    async def pager(session):
        seen, offset, pages = [], 0, 0
        while True:
            page = ok(await session.call_tool("recall_memory", {"tags": ["bulk"], "exhaustive": True, "limit": 50, "offset": offset}))
            assert wire_chars(page) <= 3_000 * CHARS_PER_TOKEN
            seen.extend(r["memory_id"] for r in page.structured_content["results"])
            pages += 1
            if not page.structured_content["has_more"]:
                return seen, pages
            offset = page.structured_content["next_offset"]

    seen, pages = with_mcp(engram, pager, AUTOMEM_RECALL_TOKEN_BUDGET="3000")
    assert seen == bulk and pages > BULK // 6

    async def tiny(session):
        return (await session.call_tool("recall_memory", {"tags": ["bulk"], "exhaustive": True, "offset": 3}),
                await session.call_tool("recall_memory", {"query": "release train", "tags": ["bulk"]}),
                await session.call_tool("recall_memory", {"memory_id": bulk[3]}))

    enumerated, ranked, fetched = with_mcp(engram, tiny, AUTOMEM_RECALL_TOKEN_BUDGET="300")
    error(enumerated, "the record at offset 3 does not fit the response budget (AUTOMEM_RECALL_TOKEN_BUDGET=300)",
          f'recall_memory({{ memory_id: "{bulk[3]}" }})')
    error(ranked, "does not fit the response budget (AUTOMEM_RECALL_TOKEN_BUDGET=300)")
    assert len(ok(fetched).structured_content["results"][0]["content"]) > 1500  # id fetches are never cut


# --- associate_memories, and what recall shows of the graph ------------------------------------------------
def test_associations_relation_stubs_and_the_summary_line(engram):
    with engram.http() as http:
        def store(content, **fields):
            return http.post("/memory", json={"content": content, "tags": ["graph"], **fields}).json()["memory_id"]

        hub = store("The deploy pipeline runs on Buildkite with canary stages.", importance=0.9,
                    metadata={"owner": "infra", "runbook": "deploy.md"})
        spokes = [store(f"Spoke {i}: a note on topic {word}.", importance=0.8)
                  for i, word in enumerate(["pagers", "budgets", "offsites", "laptops"])]

    async def scenario(session):
        out = {"single": await session.call_tool("associate_memories", {
            "memory1_id": hub, "memory2_id": spokes[0], "type": "RELATES_TO", "strength": 0.9})}
        out["batch"] = await session.call_tool("associate_memories", {"associations": [
            {"memory1_id": hub, "memory2_id": s, "type": "LEADS_TO", "strength": 0.8} for s in spokes[1:]]})
        out["partial"] = await session.call_tool("associate_memories", {"associations": [
            {"memory1_id": hub, "memory2_id": spokes[0], "type": "PART_OF", "strength": 0.5, "role": "member"},
            {"memory1_id": hub, "memory2_id": "missing-memory", "type": "RELATES_TO", "strength": 0.5}]})
        out["both"] = await session.call_tool("associate_memories", {"memory1_id": hub, "associations": [
            {"memory1_id": hub, "memory2_id": spokes[0], "type": "RELATES_TO", "strength": 0.5}]})
        out["missing"] = await session.call_tool("associate_memories", {"memory1_id": hub, "memory2_id": "missing-memory", "type": "RELATES_TO", "strength": 0.5})
        args = {"query": "deploy pipeline Buildkite canary", "tags": ["graph"], "limit": 1, "expand_relations": True}
        out["detailed"] = await session.call_tool("recall_memory", {**args, "format": "detailed"})
        out["text"] = await session.call_tool("recall_memory", {**args, "format": "text"})
        out["json"] = await session.call_tool("recall_memory", {**args, "format": "json"})
        return out

    out = with_mcp(engram, scenario)
    assert ok(out["single"]).structured_content == {"success": True, "message": f"Association created between {hub} and {spokes[0]}"}
    batch = ok(out["batch"]).structured_content
    assert (batch["success"], batch["created_count"], batch["failed_count"]) == (True, 3, 0)
    partial = ok(out["partial"]).structured_content
    assert (partial["success"], partial["created_count"], partial["failed_count"]) == (False, 1, 1)
    assert partial["failed"][0]["index"] == 1 and text(out["partial"]).startswith("Associations completed with failures.")
    error(out["both"], "not both")
    error(out["missing"], "missing-memory", "(HTTP 404)")

    detailed = ok(out["detailed"]).structured_content
    seed = detailed["results"][0]
    assert seed["memory_id"] == hub and seed["metadata_keys"] == ["owner", "runbook"] and "metadata" not in seed
    assert seed["relations_total"] == 5 and len(seed["relations"]) == 3  # 5 edges: RELATES_TO, 3 LEADS_TO, PART_OF
    assert all(set(stub) <= {"id", "from", "type", "strength", "kind", "summary"} and stub["type"] for stub in seed["relations"])
    assert {stub["id"] for stub in seed["relations"]} <= set(spokes)
    expanded = detailed["results"][1:]
    assert sorted(r["memory_id"] for r in expanded) == sorted(spokes) and detailed["expansion"]["expanded_count"] == 4
    assert all(r["match_type"] == "relation" and r["relations"][0]["from"] == hub for r in expanded)
    assert text(out["detailed"]).startswith("Found 5 memories (4 via relation expansion):\n\nThe deploy pipeline runs on Buildkite")
    lines = text(out["text"]).split("\n")
    assert lines[0] == "Found 5 memories (4 via relation expansion):"
    assert lines[2].startswith("1. The deploy pipeline runs on Buildkite with canary stages. [graph] (importance: 0.9) score=")
    assert lines[2].endswith(f"[{seed['match_type']}] relations=5")
    raw = ok(out["json"]).structured_content["results"][0]
    assert len(raw["relations"]) == 5 and raw["metadata"] == {"owner": "infra", "runbook": "deploy.md"}
