"""The MCP tool surface (service/mcp/tools.py, server.py): names, annotations, the input schemas of
spec 000 / mcp-automem, argument checking, and the purity of the formatting modules."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from service.mcp.server import schema_errors
from service.mcp.tools import TOOLS, TOOLS_BY_NAME

PROJECT_ROOT = Path(__file__).resolve().parents[2]

# spec 000 "MCP Tool: recall_memory", the full input schema table.
RECALL_PARAMETERS = (
    "memory_id exhaustive query queries embedding limit tags exclude_tags tag_mode tag_match time_query start end "
    "expand_entities expand_relations expansion_limit relation_limit expand_min_importance expand_min_strength "
    "expand_respect_tags context language active_path context_tags context_types priority_ids auto_decompose "
    "per_query_limit state_mode current_only state_debug recency_bias scope_fallback min_score adaptive_floor sort format offset"
).split()


def test_the_six_tools_of_mcp_automem():
    assert [t.name for t in TOOLS] == [
        "store_memory", "recall_memory", "associate_memories", "update_memory", "delete_memory", "check_database_health",
    ]


@pytest.mark.parametrize(("name", "read_only", "destructive", "idempotent"), [
    ("store_memory", False, False, False),
    ("recall_memory", True, False, True),  # spec 000: readOnlyHint: true and idempotentHint: true
    ("associate_memories", False, False, True),
    ("update_memory", False, False, True),
    ("delete_memory", False, True, False),
    ("check_database_health", True, False, True),
])
def test_annotations(name, read_only, destructive, idempotent):
    a = TOOLS_BY_NAME[name].annotations
    assert (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint) == (read_only, destructive, idempotent, False)


def test_recall_schema_is_the_spec_table():
    schema = TOOLS_BY_NAME["recall_memory"].input_schema
    props = schema["properties"]
    assert sorted(props) == sorted(RECALL_PARAMETERS) and "required" not in schema
    assert (props["limit"]["minimum"], props["limit"]["maximum"], props["limit"]["default"]) == (1, 200, 5)
    assert (props["expansion_limit"]["maximum"], props["expansion_limit"]["default"]) == (500, 25)
    assert (props["relation_limit"]["maximum"], props["relation_limit"]["default"]) == (200, 5)
    assert props["per_query_limit"]["maximum"] == 50 and props["offset"]["minimum"] == 0
    assert props["format"]["enum"] == ["text", "items", "detailed", "json"] and props["format"]["default"] == "text"
    assert props["sort"]["enum"] == ["score", "time_desc", "time_asc", "updated_desc", "updated_asc"]
    assert props["current_only"]["default"] is True and props["state_debug"]["default"] is False
    assert TOOLS_BY_NAME["recall_memory"].output_schema["required"] == ["count", "results"]


def test_write_tool_schemas_carry_mcp_automems_names():
    store = TOOLS_BY_NAME["store_memory"].input_schema["properties"]
    assert {"content", "memories", "embedding", "supersedes_memory_id", "supersede_relation", "supersede_reason", "t_valid"} <= set(store)
    assert store["supersede_relation"]["enum"] == ["INVALIDATED_BY", "EVOLVED_INTO"] and store["memories"]["maxItems"] == 500
    assoc = TOOLS_BY_NAME["associate_memories"].input_schema["properties"]
    assert len(assoc["type"]["enum"]) == 11 and assoc["associations"]["items"]["required"] == ["memory1_id", "memory2_id", "type", "strength"]
    assert TOOLS_BY_NAME["update_memory"].input_schema["required"] == ["memory_id"]
    assert set(TOOLS_BY_NAME["delete_memory"].input_schema["properties"]) == {"memory_id", "tags"}
    assert TOOLS_BY_NAME["check_database_health"].input_schema == {"type": "object", "properties": {}}


@pytest.mark.parametrize(("name", "args", "problem"), [
    ("recall_memory", {"limit": 0}, "limit: 0 is less than the minimum of 1"),
    ("recall_memory", {"limit": 201}, "limit: 201 is greater than the maximum of 200"),
    ("recall_memory", {"format": "xml"}, "format: 'xml' is not one of ['text', 'items', 'detailed', 'json']"),
    ("recall_memory", {"offset": -1}, "offset: -1 is less than the minimum of 0"),
    ("recall_memory", {"tags": "a,b"}, "tags: 'a,b' is not of type 'array'"),
    ("recall_memory", {"expand_relations": "yes"}, "expand_relations: 'yes' is not of type 'boolean'"),
    ("store_memory", {"content": "x", "importance": 1.5}, "importance: 1.5 is greater than the maximum of 1"),
    ("store_memory", {"memories": [{"tags": ["a"]}]}, "memories.0: 'content' is a required property"),
    ("associate_memories", {"memory1_id": "a", "memory2_id": "b", "type": "LIKES"}, "type: 'LIKES' is not one of"),
    ("update_memory", {"importance": 0.5}, "arguments: 'memory_id' is a required property"),
])
def test_arguments_are_checked_against_the_schema(name, args, problem):
    errors = schema_errors(name, args)
    assert any(problem in e for e in errors), errors


def test_valid_arguments_pass():
    assert schema_errors("recall_memory", {"query": "x", "limit": 5, "tags": ["a"], "format": "detailed"}) == []
    assert schema_errors("check_database_health", {}) == []


PROBE = """
import sys
import service.mcp.formatting, service.mcp.budget, service.mcp.recall_request
print('\\n'.join(sorted({name.split('.')[0] for name in sys.modules})))
"""


def test_formatting_and_routing_are_pure():
    result = subprocess.run([sys.executable, "-c", PROBE], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True)
    roots = set(result.stdout.split())
    assert roots.isdisjoint({"httpx", "mcp", "mcp_types", "opensearchpy", "fastapi", "pydantic", "anyio"}), sorted(roots)


@pytest.mark.parametrize(
    ("env", "endpoint"),
    [
        ({}, "http://127.0.0.1:8001"),
        ({"AUTOMEM_ENDPOINT": "http://old:1/"}, "http://old:1"),
        ({"AUTOMEM_API_URL": "http://new:2"}, "http://new:2"),  # mcp-automem 0.15's name
        ({"AUTOMEM_API_URL": "http://new:2", "AUTOMEM_ENDPOINT": "http://old:1"}, "http://new:2"),  # the new one first
        ({"AUTOMEM_API_URL": " ", "AUTOMEM_ENDPOINT": "http://old:1"}, "http://old:1"),
    ],
)
def test_the_endpoint_reads_both_names(monkeypatch, env, endpoint):
    from service.mcp.settings import McpSettings

    for name in ("AUTOMEM_API_URL", "AUTOMEM_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert McpSettings().endpoint == endpoint
