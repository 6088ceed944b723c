"""The global token budget of recall_memory (service/mcp/budget.py): it bounds the WHOLE serialized
response (structuredContent plus every text block) in every format; trimmed enumeration pages keep
paging; a record that cannot fit is an error; id fetches are never cut (spec 000)."""

from __future__ import annotations

import json

import pytest

from service.mcp import budget as B
from service.mcp.formatting import FORMATS, wire_chars


def item(i: int, content_chars: int = 1200, **extra) -> dict:
    mid = f"mem-{i:03d}"
    return {
        "id": mid, "final_score": round(1 - i / 1000, 6), "match_type": "vector",
        "relations": extra.pop("relations", []), "score_components": {"vector": 0.5},
        "memory": {"memory_id": mid, "content": f"Memory {i}. " + "x" * content_chars, "tags": ["bulk", f"n{i}"],
                   "importance": 0.5, "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-02T00:00:00Z",
                   "metadata": {"index": i, "source": "test"}, "type": "Context", "confidence": 0.6,
                   "t_valid": None, "t_invalid": None, "archived": False},
        **extra,
    }


def ranked(n: int, **extra) -> dict:
    return {"mode": "ranked", "results": [item(i, **extra) for i in range(n)], "count": n, "query": "q",
            "state_filter": {"current_only": True, "suppressed_count": 0, "replacement_count": 0}}


def enumeration(n: int, offset: int = 0, has_more: bool = True, content_chars: int = 1200) -> dict:
    return {"mode": "enumeration", "results": [item(offset + i, content_chars) for i in range(n)], "count": n,
            "limit": n, "offset": offset, "has_more": has_more, "tags": ["bulk"]}


@pytest.mark.parametrize(("raw", "expected"), [
    (None, 18_000), ("", 18_000), ("1200", 1200), (" 1200 ", 1200), ("1200foo", 18_000), ("12.5", 18_000),
    ("0", 18_000), ("-5", 18_000), ("abc", 18_000),
])
def test_budget_env_is_parsed_strictly(raw, expected):
    assert B.resolve_token_budget(raw) == expected


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_whole_response_stays_under_the_budget_in_every_format(fmt):
    response = B.build_recall_response(ranked(100), fmt, 18_000)
    assert wire_chars(response) <= 18_000 * 2.5
    structured = response.structured
    kept = len(structured["results"])
    assert 0 < kept < 100
    assert structured["truncation"] == {"applied": True, "omitted_results": 100 - kept, "reason": "response_token_budget"}
    assert [r["memory_id"] for r in structured["results"]] == [f"mem-{i:03d}" for i in range(kept)]  # rank order, from the top
    # Tight: one more result would not have fitted.
    assert wire_chars(B.render(ranked(100), fmt, [B.item_output(item(i), i, fmt, rich=fmt in ("detailed", "json"),
                      budgeted=fmt != "json", keep_components=fmt == "json") for i in range(kept + 1)], B.Cuts())) > 18_000 * 2.5


def test_text_format_header_trailer_and_previews():
    response = B.build_recall_response(ranked(100), "text", 18_000)
    (text,) = response.texts
    kept = len(response.structured["results"])
    assert text.startswith(f"Found 100 memories (showing {kept}):\n\n1. Memory 0. ")
    assert text.endswith(f"[Response budget: showing {kept} of 100 results; {100 - kept} omitted. {B.PREVIEW_HINT}]")
    first = response.structured["results"][0]
    assert first["content_truncated"] is True and first["content_chars"] == len("Memory 0. ") + 1200
    assert len(first["content"]) == 401


def test_items_format_is_one_block_per_memory_plus_a_trailer():
    response = B.build_recall_response(ranked(3, content_chars=10), "items", 18_000)
    assert response.texts == ("[mem-000] Memory 0. xxxxxxxxxx", "[mem-001] Memory 1. xxxxxxxxxx", "[mem-002] Memory 2. xxxxxxxxxx")
    page = B.build_recall_response(enumeration(2, offset=4, content_chars=10), "items", 18_000)
    assert page.texts[-1] == "[Notes: enumeration page: offset 4, limit 2 — more pages available, next offset 6.]"


def test_json_format_repeats_the_structured_content_pretty_printed():
    response = B.build_recall_response(ranked(2, content_chars=700), "json", 18_000)
    assert json.loads(response.texts[0]) == response.structured
    first = response.structured["results"][0]
    assert first["content"].endswith("x" * 700) and "content_truncated" not in first
    assert first["metadata"] == {"index": 0, "source": "test"} and first["archived"] is False
    assert "truncation" not in response.structured


def test_nothing_found():
    response = B.build_recall_response({"mode": "ranked", "results": [], "count": 0}, "text", 18_000)
    assert response.texts == (B.NO_RESULTS,) and response.structured == {"results": [], "count": 0, "mode": "ranked"}


def test_trimmed_enumeration_pages_still_page_through_every_record():
    total, offset, seen = 200, 0, []
    while offset < total:
        size = min(50, total - offset)
        page = enumeration(size, offset=offset, has_more=offset + size < total)
        structured = B.build_recall_response(page, "text", 3_000).structured
        assert wire_chars(B.build_recall_response(page, "text", 3_000)) <= 3_000 * 2.5
        got = [r["memory_id"] for r in structured["results"]]
        seen.extend(got)
        if len(got) < size:
            assert structured["has_more"] is True and structured["limit"] == len(got) == structured["count"]
            assert structured["truncation"]["omitted_results"] == size - len(got)
        if not structured.get("has_more"):
            break
        assert structured["next_offset"] == offset + len(got)
        offset = structured["next_offset"]
    assert seen == [f"mem-{i:03d}" for i in range(total)]


@pytest.mark.parametrize("mode", ["enumeration", "ranked"])
def test_a_record_too_large_for_the_budget_is_an_error(mode):
    result = enumeration(3, offset=10) if mode == "enumeration" else ranked(3)
    with pytest.raises(B.BudgetError) as err:
        B.build_recall_response(result, "text", 300)
    message = str(err.value)
    assert "AUTOMEM_RECALL_TOKEN_BUDGET=300" in message
    first = "mem-010" if mode == "enumeration" else "mem-000"
    assert f'fetch it with recall_memory({{ memory_id: "{first}" }})' in message
    assert ("at offset 10" in message) == (mode == "enumeration")


def test_json_falls_back_to_the_compact_shape_before_giving_up():
    result = ranked(2, content_chars=6000)
    response = B.build_recall_response(result, "json", 2_000)
    structured = response.structured
    assert len(structured["results"]) == 1 and structured["results"][0]["content_truncated"] is True
    assert structured["truncation"] == {"applied": True, "omitted_results": 1, "compacted_results": 1, "reason": "response_token_budget"}
    assert wire_chars(response) <= 2_000 * 2.5


def test_diagnostics_are_dropped_in_order_when_they_alone_do_not_fit():
    result = ranked(2, content_chars=50)
    result["state_filter"] = {"current_only": True, "suppressed_count": 400, "replacement_count": 0,
                              "suppressed": [{"id": f"s-{i:04d}", "reason": "superseded"} for i in range(400)]}
    result["keywords"] = ["k" * 20] * 10
    response = B.build_recall_response(result, "text", 3_000)
    structured = response.structured
    assert structured["truncation"]["omitted_fields"] == ["state_filter.suppressed"]
    assert structured["state_filter"] == {"current_only": True, "suppressed_count": 400, "replacement_count": 0}
    assert structured["keywords"] == ["k" * 20] * 10 and len(structured["results"]) == 2
    assert "Response budget: omitted state_filter.suppressed." in response.texts[0]
    assert "state filter suppressed 400, replacements 0" in response.texts[0]


def test_a_budget_too_small_for_the_envelope_is_an_error():
    with pytest.raises(B.BudgetError, match="even without results"):
        B.build_recall_response(ranked(1), "text", 10)


def test_id_fetch_is_never_truncated():
    record = item(7, content_chars=20_000, relations=[{"type": "RELATES_TO", "id": f"r{i}"} for i in range(5)])
    result = {"mode": "id_fetch", "results": [record], "count": 1}
    for fmt in FORMATS:
        response = B.build_recall_response(result, fmt, 100)
        got = response.structured["results"][0]
        assert got["content"] == record["memory"]["content"] and "content_truncated" not in got
        assert len(got["relations"]) == 5 and got["metadata"] == {"index": 7, "source": "test"}
        assert got["archived"] is False and got["score_components"] == {"vector": 0.5}
        assert "truncation" not in response.structured and wire_chars(response) > 100 * 2.5
    assert B.build_recall_response(result, "text", 100).texts[0].startswith("Found 1 memories:\n\n1. Memory 7. xxx")
