"""Portable records, pure: stored document <-> export line, edge records, supersession summaries."""

from __future__ import annotations

import pytest

from service.admin.records import EdgeRecord, check_supersessions, dumps, edge_line, edge_record, is_edge_line, memory_line, supersession_summary
from service.graph.registry import AssociationError
from service.memory.models import valid_id

STORED = {
    "id": "m1", "bank": "default", "content": "c", "tags": ["a:b"], "tags_norm": ["a:b"], "tag_prefixes": ["a", "a:b"],
    "metadata_terms": [], "entities": [], "type": "Decision", "importance": 0.5, "confidence": 0.9, "metadata": {"k": 1},
    "timestamp": "2024-01-01T00:00:00+00:00", "updated_at": "2024-01-01T00:00:00+00:00", "last_accessed": None, "t_valid": None,
    "t_invalid": None, "archived": False, "embedding_model": "all-MiniLM-L6-v2",
    "supersessions": [{"by": "m2", "type": "EVOLVED_INTO", "at": "2024-02-01T00:00:00.000000+00:00", "strength": 1.0}],
    "superseded_at": "2024-02-01T00:00:00.000000+00:00", "superseded_by": "m2", "supersede_type": "EVOLVED_INTO", "future_field": "kept",
}


def test_memory_line_drops_derived_and_empty_fields():
    assert memory_line("m1", STORED) == {
        "id": "m1", "content": "c", "tags": ["a:b"], "type": "Decision", "importance": 0.5, "confidence": 0.9, "metadata": {"k": 1},
        "timestamp": "2024-01-01T00:00:00+00:00", "updated_at": "2024-01-01T00:00:00+00:00", "archived": False,
        "embedding_model": "all-MiniLM-L6-v2", "supersessions": STORED["supersessions"], "future_field": "kept",
    }
    assert memory_line("m1", {"content": "x"}, [0.5, 0.25]) == {"id": "m1", "content": "x", "embedding": [0.5, 0.25]}


def test_lines_have_sorted_fields_and_objects_keep_their_key_order():
    assert dumps({"b": 1, "a": {"d": 2, "c": 3}}) == b'{"a":{"d":2,"c":3},"b":1}\n'


def test_edge_line_and_back():
    stored = {"bank": "default", "source_id": "a", "target_id": "b", "type": "EVOLVED_INTO", "strength": 0.9,
              "created_at": "2024-01-01T00:00:00+00:00", "updated_at": "2024-01-02T00:00:00+00:00", "properties": {"reason": "r"}}
    line = edge_line(stored)
    assert line == {"memory1_id": "a", "memory2_id": "b", "type": "EVOLVED_INTO", "strength": 0.9, "reason": "r",
                    "created_at": "2024-01-01T00:00:00+00:00", "updated_at": "2024-01-02T00:00:00+00:00"}
    assert is_edge_line(line) and not is_edge_line({"content": "x", "memory1_id": "a", "memory2_id": "b"})
    assert edge_record(line, id_ok=valid_id) == EdgeRecord("a", "b", "EVOLVED_INTO", 0.9, {"reason": "r"},
                                                            "2024-01-01T00:00:00+00:00", "2024-01-02T00:00:00+00:00")


@pytest.mark.parametrize("item, this_id, expected", [
    ({"memory2_id": "b"}, "a", EdgeRecord("a", "b", "RELATES_TO", 0.5)),
    ({"target_id": "b", "type": "similar_to", "strength": 1}, "a", EdgeRecord("a", "b", "SIMILAR_TO", 1.0)),
    ({"memory1_id": "old", "type": "EVOLVED_INTO"}, "new", EdgeRecord("old", "new", "EVOLVED_INTO", 0.5)),
    ({"memory2_id": "b", "type": "INVALIDATED_BY", "timestamp": "2024-05-01"}, "a",
     EdgeRecord("a", "b", "INVALIDATED_BY", 0.5, {"timestamp": "2024-05-01T00:00:00+00:00"})),
])
def test_edge_records(item, this_id, expected):
    assert edge_record(item, id_ok=valid_id, this_id=this_id) == expected


@pytest.mark.parametrize("item, message", [
    ({"memory2_id": "a"}, "itself"),
    ({"memory2_id": "b", "type": "NOPE"}, "unknown relationship type"),
    ({"memory2_id": "b", "strength": 1.5}, "between 0 and 1"),
    ({"memory2_id": "b", "strength": float("nan")}, "between 0 and 1"),
    ({"memory2_id": "b", "strength": True}, "between 0 and 1"),
    ({"memory2_id": "b", "strength": 10**400}, "between 0 and 1"),  # too large for a float: was an OverflowError
    ({"memory2_id": "bad id"}, "not a valid memory id"),
    ({"memory2_id": "b", "created_at": "yesterday-ish"}, "created_at"),
    ({"memory2_id": "b", "created_at": 5}, "created_at"),
    ("not an object", "must be an object"),
])
def test_bad_edge_records(item, message):
    with pytest.raises(AssociationError, match=message):
        edge_record(item, id_ok=valid_id, this_id="a")


def test_supersession_summary_as_the_painless_script():
    entries = [{"by": "x", "type": "EVOLVED_INTO", "at": "2024-03-01T00:00:00.000000+00:00"},
               {"by": "y", "type": "INVALIDATED_BY", "at": "2024-02-01T00:00:00.000000+00:00"}]
    assert supersession_summary(entries) == {"supersessions": entries, "superseded_at": "2024-02-01T00:00:00.000000+00:00",
                                             "superseded_by": "y", "supersede_type": "INVALIDATED_BY"}
    assert supersession_summary([]) == {"supersessions": None, "superseded_at": None, "superseded_by": None, "supersede_type": None}


@pytest.mark.parametrize("value", [{"by": "x"}, [{"by": "x", "type": "RELATES_TO", "at": "2024-01-01"}], [{"type": "EVOLVED_INTO", "at": "2024"}],
                                   [{"by": "x", "type": "EVOLVED_INTO", "at": "soon"}], [{"by": "x", "type": "EVOLVED_INTO", "at": "2024-01-01", "strength": 3}],
                                   [{"by": "x", "type": "EVOLVED_INTO", "at": "2024-01-01", "strength": -10**400}]])
def test_bad_supersessions(value):
    with pytest.raises(ValueError):
        check_supersessions(value)
