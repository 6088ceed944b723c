"""recall_memory's formatting (service/mcp/formatting.py): previews, relation stubs, metadata keys,
the numbered text, the detailed block, the envelope and the summary line — spec 000's examples word
for word ("MCP Response Formatting")."""

from __future__ import annotations

import copy

import pytest

from service.mcp import formatting as F


def item(mid="mem-abc123", content="Chose PostgreSQL.", **extra):
    memory = {
        "memory_id": mid, "content": content, "summary": extra.pop("summary", None), "tags": extra.pop("tags", ["db"]),
        "importance": extra.pop("importance", 0.9), "created_at": extra.pop("created_at", "2025-01-15T10:30:00Z"),
        "updated_at": extra.pop("updated_at", None), "last_accessed": extra.pop("last_accessed", None),
        "metadata": extra.pop("metadata", {}), "type": extra.pop("type", None), "confidence": extra.pop("confidence", None),
        "t_valid": extra.pop("t_valid", None), "t_invalid": extra.pop("t_invalid", None), "archived": extra.pop("archived", None),
    }
    return {"id": mid, "final_score": 0.792, "match_type": "vector", "relations": [], "memory": memory, **extra}


@pytest.mark.parametrize(
    ("content", "budgeted", "expected"),
    [
        ("a" * 400, True, ("a" * 400, False, 400)),
        ("a" * 401, True, ("a" * 400 + "…", True, 401)),
        ("a" * 5000, False, ("a" * 5000, False, 5000)),
        ("", True, ("", False, 0)),
        (None, True, ("", False, 0)),
    ],
)
def test_preview_cuts_at_400_characters(content, budgeted, expected):
    assert F.preview(content, budgeted) == expected


def test_structured_item_flags_truncated_content_with_its_length():
    out, display, truncated = F.structured_item(item(content="x" * 1200), rich=False, budgeted=True, keep_components=False)
    assert truncated and display == "x" * 400 + "…"
    assert out == {
        "memory_id": "mem-abc123", "content": "x" * 400 + "…", "content_truncated": True, "content_chars": 1200,
        "tags": ["db"], "importance": 0.9, "created_at": "2025-01-15T10:30:00Z", "final_score": 0.792, "match_type": "vector",
    }


def test_summary_is_additive_and_stands_in_only_for_empty_content():
    with_content, display, _ = F.structured_item(item(content="body", summary="short"), rich=False, budgeted=True, keep_components=False)
    assert display == "body" and with_content["summary"] == "short" and with_content["content"] == "body"
    empty, display, _ = F.structured_item(item(content="", summary="short"), rich=False, budgeted=True, keep_components=False)
    assert display == "short" and empty["content"] == ""


def test_relation_stubs_keep_three_with_100_character_summaries():
    relations = [
        {"type": "RELATES_TO", "strength": 0.8, "id": "m-1", "direction": "outgoing"},
        {"type": "EVOLVED_INTO", "strength": 0.9, "from": "seed-1", "seed_score": 0.5, "kind": "expansion"},
        {"type": "PART_OF", "strength": 0.4, "memory": {"id": "m-3", "content": "y" * 150}},
        {"type": "LEADS_TO", "strength": 0.1, "id": "m-4"},
    ]
    out = F.compact_relations(relations)
    assert out == {
        "relations": [
            {"id": "m-1", "type": "RELATES_TO", "strength": 0.8},
            {"from": "seed-1", "type": "EVOLVED_INTO", "strength": 0.9, "kind": "expansion"},
            {"id": "m-3", "type": "PART_OF", "strength": 0.4, "summary": "y" * 100 + "…"},
        ],
        "relations_total": 4,
    }
    assert F.relation_stub({"type": "X", "summary": "s" * 100}) == {"type": "X", "summary": "s" * 100}
    assert F.compact_relations([]) == {} and F.compact_relations(None) == {}


def test_detailed_item_collapses_metadata_to_keys_and_relations_to_stubs():
    it = item(metadata={"files": ["a.py"], "error_type": "timeout"}, type="Decision", confidence=0.9,
              relations=[{"type": "RELATES_TO", "strength": 0.5, "id": f"r{i}"} for i in range(5)],
              score_components={"vector": 0.8}, deduped_from=["d1"], t_invalid="2026-01-01T00:00:00Z")
    out, _, _ = F.structured_item(it, rich=True, budgeted=True, keep_components=False)
    assert out["metadata_keys"] == ["files", "error_type"] and "metadata" not in out
    assert len(out["relations"]) == 3 and out["relations_total"] == 5
    assert out["type"] == "Decision" and out["confidence"] == 0.9 and out["deduped_from"] == ["d1"]
    assert "score_components" not in out and "t_invalid" not in out


def test_json_item_keeps_every_field_and_the_lifecycle_fields():
    it = item(content="z" * 900, metadata={"k": 1}, relations=[{"type": "RELATES_TO", "id": "r"}] * 4,
              score_components={"vector": 0.8}, t_valid="2025-01-01T00:00:00Z", t_invalid="2026-01-01T00:00:00Z",
              archived=False, source="opensearch", match_score=0.8)
    out, _, truncated = F.structured_item(it, rich=True, budgeted=False, keep_components=True)
    assert not truncated and out["content"] == "z" * 900
    assert out["metadata"] == {"k": 1} and len(out["relations"]) == 4 and out["score_components"] == {"vector": 0.8}
    assert (out["t_valid"], out["t_invalid"], out["archived"]) == ("2025-01-01T00:00:00Z", "2026-01-01T00:00:00Z", False)
    assert out["source"] == "opensearch" and out["match_score"] == 0.8


def test_text_block_is_the_numbered_line_of_the_spec():
    it = item(content="Chose PostgreSQL over MongoDB.", tags=["project-alpha", "database"],
              relations=[{"type": "RELATES_TO", "id": "x"}, {"type": "LEADS_TO", "id": "y"}])
    assert F.text_block(it, "Chose PostgreSQL over MongoDB.", 0) == (
        "1. Chose PostgreSQL over MongoDB. [project-alpha, database] (importance: 0.9) score=0.792 [vector] relations=2\n"
        "   ID: mem-abc123\n"
        "   Created: 2025-01-15T10:30:00Z"
    )


def test_text_block_optional_notes():
    it = item(importance=1.0, tags=[], expanded_from_entity="rachel", deduped_from=["a", "b"], outside_tag_scope=True,
              updated_at="2025-02-01T00:00:00Z")
    it["final_score"] = None
    assert F.text_block(it, "p", 4) == (
        "5. p (importance: 1) [vector] [via entity: rachel] (deduped x2) [outside tag scope]\n"
        "   ID: mem-abc123\n   Created: 2025-01-15T10:30:00Z  Updated: 2025-02-01T00:00:00Z"
    )


def test_detailed_block():
    it = item(type="Decision", confidence=0.85, last_accessed="2025-03-01T00:00:00Z")
    assert F.detailed_block(it, "Chose PostgreSQL.") == "\n".join([
        "Chose PostgreSQL.", "  ID: mem-abc123", "  Type: Decision", "  Created: 2025-01-15T10:30:00Z",
        "  Accessed: 2025-03-01T00:00:00Z", "  Importance: 0.900", "  Confidence: 0.850", "  Tags: db", "  Score: 0.792",
        "  Match: vector",
    ])


def test_summary_line_of_the_spec():
    env = {
        "dedup_removed": 3,
        "entity_expansion": {"enabled": True, "expanded_count": 5, "entities_found": ["rachel", "platform team"]},
        "expansion": {"enabled": True, "expanded_count": 2},
        "state_filter": {"current_only": True, "suppressed_count": 0, "replacement_count": 0},
    }
    assert F.summary_line(10, 10, env) == (
        "Found 10 memories (3 duplicates removed; 5 via entity expansion (rachel, platform team); 2 via relation expansion):"
    )
    assert F.summary_line(10, 4, {}) == "Found 10 memories (showing 4):"


def test_notes_report_state_filter_scope_score_and_pages():
    env = {
        "mode": "enumeration", "offset": 40, "limit": 20, "has_more": True, "next_offset": 60, "scope_fallback": True,
        "state_filter": {"suppressed_count": 2, "replacement_count": 1}, "score_filter": {"filtered_count": 4},
        "entity_expansion": {"enabled": True, "expanded_count": 1, "entities_found": []},
    }
    assert F.notes(env) == [
        "1 via entity expansion (entities found)", "state filter suppressed 2, replacements 1",
        "scope fallback included outside-scope results", "score filter removed 4",
        "enumeration page: offset 40, limit 20 — more pages available, next offset 60",
    ]


def test_envelope_of_a_trimmed_enumeration_page_advances_next_offset():
    result = {"mode": "enumeration", "results": [item(f"m{i}") for i in range(20)], "count": 20, "limit": 20,
              "offset": 40, "has_more": False, "tags": ["bulk"]}
    assert F.envelope(result, 7) == {"count": 7, "mode": "enumeration", "has_more": True, "limit": 7, "offset": 40,
                                     "next_offset": 47, "tags": ["bulk"]}
    assert F.envelope(result, 20) == {"count": 20, "mode": "enumeration", "has_more": False, "limit": 20, "offset": 40, "tags": ["bulk"]}


def test_omit_field_drops_top_level_and_nested_keys_without_touching_others():
    env = {"state_filter": {"suppressed": [1], "suppressed_count": 1}, "keywords": ["a"]}
    assert F.omit_field(env, "state_filter.suppressed") and env == {"state_filter": {"suppressed_count": 1}, "keywords": ["a"]}
    assert F.omit_field(env, "keywords") and env == {"state_filter": {"suppressed_count": 1}}
    assert not F.omit_field(env, "entities") and not F.omit_field(env, "state_filter.replacements")


def test_item_output_never_mutates_its_input():
    it = item(content="c" * 600, relations=[{"type": "RELATES_TO", "id": str(i)} for i in range(6)], metadata={"a": 1})
    before = copy.deepcopy(it)
    for fmt in F.FORMATS:
        F.item_output(it, 0, fmt, rich=True, budgeted=fmt != "json", keep_components=True)
    assert it == before


@pytest.mark.parametrize(("value", "text"), [(0.9, "0.9"), (1.0, "1"), (1, "1"), (0.1 + 0.2, "0.30000000000000004"), (1e-7, "1e-7"), (1e21, "1e+21")])
def test_js_number_prints_like_javascript(value, text):
    assert F.js_number(value) == text


def test_sizes_count_utf16_code_units_like_json_stringify():
    assert F.js_length("ab") == 2 and F.js_length("é") == 1 and F.js_length("😀") == 2
    assert F.wire_chars(F.ToolResponse(("hi",), {"a": 1})) == len('{"content":[{"type":"text","text":"hi"}],"structuredContent":{"a":1}}')
