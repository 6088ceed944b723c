"""Retain's plan (service/api/hindsight/retain.py): chunks, ids, documents, entities, timestamps. Pure."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from service.api.hindsight import retain as R
from service.api.hindsight.models import RetainBody


@pytest.mark.parametrize(
    ("text", "size", "expected"),
    [
        ("short", 10, ["short"]),
        ("One. Two. Three.", 10, ["One. Two.", "Three."]),  # sentences packed while they fit
        ("aaa bbb\n\nccc ddd", 8, ["aaa bbb", "ccc ddd"]),  # paragraphs first
        ("aaaa bbbb cccc", 9, ["aaaa bbbb", "cccc"]),  # a sentence longer than a chunk: words
        ("x" * 25, 10, ["x" * 10, "x" * 10, "x" * 5]),  # one unbroken run: cut
    ],
)
def test_chunk_text(text, size, expected):
    got = R.chunk_text(text, size)
    assert got == expected
    assert all(0 < len(c) <= size for c in got)


def test_chunks_keep_every_word():
    text = " ".join(f"word{i}." for i in range(500))
    chunks = R.chunk_text(text, 200)
    assert " ".join(chunks).split() == text.split()


def body(**values) -> RetainBody:
    return RetainBody.model_validate(values)


def test_plan_stores_items_as_given():
    b = body(items=[{"content": "Alice works at Google", "tags": ["u"], "context": "work", "metadata": {"source": "slack"},
                     "entities": [{"text": "Alice", "type": "PERSON"}, {"text": "Google", "type": "ORG"}, {"text": "Alice", "type": "person"}],
                     "timestamp": "2024-01-15T10:30:00Z"}],
             document_tags=["d"], operation_id="op-1")
    (m,) = R.plan_retain(b, "bank", 1000).memories
    assert (m.content, m.tags, m.context, m.fact_type) == ("Alice works at Google", ["u", "d"], "work", "world")
    assert m.metadata == {"source": "slack", "entities": {"person": ["Alice"], "org": ["Google"]}}
    assert (m.timestamp, m.timeless, m.document_id, m.chunk_id, m.chunk_index) == (datetime(2024, 1, 15, 10, 30, tzinfo=timezone.utc), False, None, None, None)
    assert m.id == R.derived_id("bank", "operation", "op-1", "0", "0")  # an operation_id makes the ids repeatable
    assert m.surface_fields() == {"fact_type": "world", "context": "work"}


def test_long_items_become_chunks_of_a_document():
    text = "First sentence here. " * 20
    plan = R.plan_retain(body(items=[{"content": text}], operation_id="op"), "bank", 120)
    first = plan.memories[0]
    assert len(plan.memories) == len(R.chunk_text(text, 120)) > 1
    assert [m.chunk_index for m in plan.memories] == list(range(len(plan.memories)))
    assert {m.document_id for m in plan.memories} == {first.id}  # the first chunk names the document
    assert [m.chunk_id for m in plan.memories] == [f"{first.id}:{i}" for i in range(len(plan.memories))]
    assert plan.documents == {}  # no caller document: nothing to replace


def test_documents_number_their_chunks_across_items():
    b = body(items=[{"content": "part one", "document_id": "doc"}, {"content": "part two", "document_id": "doc"}, {"content": "other"}])
    plan = R.plan_retain(b, "bank", 1000)
    a, c, other = plan.memories
    assert (a.chunk_id, c.chunk_id, other.chunk_id) == ("doc:0", "doc:1", None)
    assert (a.id, c.id) == (R.derived_id("bank", "document", "doc", "0"), R.derived_id("bank", "document", "doc", "1"))
    assert plan.documents == {"doc": [a.id, c.id]}
    assert R.replaced_documents(plan, b) == {"doc": [a.id, c.id]}
    # another bank, other ids: a client id is never shared between banks
    assert R.plan_retain(b, "other", 1000).memories[0].id != a.id


def test_append_numbers_after_the_stored_chunks():
    b = body(items=[{"content": "more", "document_id": "doc", "update_mode": "append"}])
    (m,) = R.plan_retain(b, "bank", 1000, {"doc": 3}).memories
    assert (m.chunk_index, m.chunk_id) == (3, "doc:3")
    assert R.append_documents(b) == ["doc"] and R.replaced_documents(R.plan_retain(b, "bank", 1000), b) == {}


def test_timestamps():
    assert R.stored_timestamp(None) == (None, False)
    assert R.stored_timestamp("unset") == (None, True)
    assert R.stored_timestamp(datetime(2024, 1, 1)) == ("2024-01-01T00:00:00+00:00", False)
    assert R.stored_timestamp(datetime(2024, 1, 1, tzinfo=timezone.utc)) == ("2024-01-01T00:00:00+00:00", False)
    (m,) = R.plan_retain(body(items=[{"content": "A timeless fact", "timestamp": "unset"}]), "b", 100).memories
    assert m.timeless and m.surface_fields()["timeless"] is True


def test_content_blocks():
    b = body(items=[{"content": [{"type": "text", "text": "click the button"}, {"type": "text", "text": "then wait"}]}])
    assert R.plan_retain(b, "b", 100).memories[0].content == "click the button\nthen wait"
    images = body(items=[{"content": [{"type": "image", "source": {"type": "base64", "data": "x"}}]}])
    from fastapi.exceptions import RequestValidationError
    with pytest.raises(RequestValidationError) as err:
        R.plan_retain(images, "b", 100)
    [error] = err.value.errors()
    assert error["loc"] == ("body", "items", 0, "content", 0) and "only text blocks can be retained" in error["msg"]


def test_blank_content_is_hindsights_422():
    from fastapi.exceptions import RequestValidationError

    with pytest.raises(RequestValidationError) as err:
        R.plan_retain(body(items=[{"content": "ok"}, {"content": "   "}]), "b", 100)
    assert err.value.errors()[0]["loc"][:3] == ("body", "items", 1)


def test_stale_and_max_chunk_queries():
    assert R.stale_chunks_query("b", "doc", ["x"]) == {"bool": {"filter": [{"term": {"bank": "b"}}, {"term": {"document_id": "doc"}}], "must_not": [{"ids": {"values": ["x"]}}]}}
    resp = {"aggregations": {"docs": {"buckets": [{"key": "doc", "top": {"value": 4.0}}, {"key": "e", "top": {"value": None}}]}}}
    assert R.parse_max_chunk(resp) == {"doc": 5, "e": 0}
