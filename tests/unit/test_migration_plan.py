"""What start-up does with the index behind an alias: a table of (index state, template, model) -> plan."""

from __future__ import annotations

import pytest

from service.storage.migrations import IndexState, Plan, generation, plan, read_state


@pytest.mark.parametrize(
    "state, version, dimension, expected",
    [
        (None, 1, 384, Plan("create")),
        (IndexState("m-v1", 1, 384), 1, 384, Plan("update_mapping")),
        (IndexState("e-v1", 1, None), 1, None, Plan("update_mapping")),
        (IndexState("m-v1", 1, 384), 2, 384, Plan("migrate", "template version 1 -> 2")),
        (IndexState("m-v1", 1, 384), 1, 768, Plan("migrate", "vector size 384 -> 768 (a new embedding model)", reembed=True)),
        (IndexState("m-v1", 1, 384), 2, 768, Plan("migrate", "template version 1 -> 2", reembed=True)),
        (IndexState("m-v3", 3, 384), 2, 384, Plan("newer", "m-v3 was made by template version 3, newer than this code's 2")),
    ],
)
def test_plan(state, version, dimension, expected):
    assert plan(state, version, dimension) == expected


def test_generation_of_names():
    assert generation("engram-memories-v12", "engram-memories") == 12
    assert generation("engram-memories-v1x", "engram-memories") is None
    assert generation("other-memories-v1", "engram-memories") is None


def test_version_from_meta_else_from_name():
    mapping = {"_meta": {"engram": {"template": "memories", "version": 4}}, "properties": {"embedding": {"dimension": 8}}}
    assert read_state("p-memories-v2", "p-memories", mapping) == IndexState("p-memories-v2", 4, 8)
    assert read_state("p-memories-v2", "p-memories", {"properties": {}}) == IndexState("p-memories-v2", 2, None)
