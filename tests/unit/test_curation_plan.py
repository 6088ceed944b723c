"""Hindsight's curation on the one store, the pure parts (service/api/hindsight/curation.py): the
request's plan, the stored changes and the curation record, the history's entries."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest

from service.api.hindsight import curation as CU
from service.api.hindsight import views
from service.errors import BadRequest, Conflict

NOW = datetime(2026, 5, 20, 12, tzinfo=timezone.utc)
FACT = {"content": "Alice visited Paris", "timestamp": "2023-05-01T10:00:00+00:00", "fact_type": "world", "context": "travel",
        "metadata": {"entities": {"location": ["Paris"]}, "source": "chat"}, "tags": ["user_a"]}


def plan(**body):
    return CU.plan_of(CU.UpdateMemoryBody.model_validate(body), NOW)


def changes(source, **body):
    p, _ = plan(**body)
    auto = {"content": p.text} if p.text is not None else {}
    return CU.curation_changes(p, source, auto, "m1")


@pytest.mark.parametrize(("body", "message"), [
    ({}, "Nothing to update"),
    ({"reason": "why"}, "Nothing to update"),
    ({"resolve_entities": False}, "Nothing to update"),
    ({"text": " "}, "non-empty"),
    ({"state": "gone"}, "Invalid state 'gone'"),
    ({"fact_type": "observation"}, "observations are derived"),
    ({"fact_type": "opinion"}, "Invalid fact_type 'opinion'"),
    ({"mentioned_at": "soon"}, "Invalid mentioned_at"),
    ({"entities": ["x" * 257]}, "entities[0]"),
])
def test_bad_requests_are_400(body, message):
    with pytest.raises(BadRequest, match=re.escape(message)):
        plan(**body)


def test_one_date_is_kept_and_the_others_named():
    p, warnings = plan(occurred_start="2024-02-01", occurred_end="2024-02-03T00:00:00Z", mentioned_at="2024-02-01T00:00:00Z")
    assert p.timestamp == datetime(2024, 2, 1, tzinfo=timezone.utc)
    assert len(warnings) == 1 and warnings[0].startswith("occurred_end 2024-02-03T00:00:00+00:00 not kept")
    p, warnings = plan(mentioned_at="2024-03-01")  # mentioned_at alone is the date too
    assert p.timestamp == datetime(2024, 3, 1, tzinfo=timezone.utc) and warnings == []
    p, _ = plan(occurred_start=None)
    assert p.clear_date and p.timestamp is None
    p, warnings = plan(occurred_end="", context="x")
    assert not p.clear_date and "occurred_end not cleared" in warnings[0]
    with pytest.raises(BadRequest, match="Nothing to update"):
        plan(occurred_end="")


def test_an_edit_records_what_changed_from_what():
    out = changes(FACT, text="Alice visited Rome", context="", fact_type="experience", entities=["Alice", "paris", "Alice"], reason="typo")
    record = out["curation"]
    assert (out["context"], out["fact_type"], record["edited_at"], record["entities"]) == (None, "experience", "2026-05-20T12:00:00+00:00", ["Alice", "paris"])
    assert out["metadata"] == {"entities": {"concept": ["Alice"], "location": ["paris"]}, "source": "chat"}  # known names keep their category
    assert "alice" in out["entities"] and out["tags"] == ["user_a"]  # derived fields follow the metadata
    [rev] = record["revisions"]
    assert rev == {"at": "2026-05-20T12:00:00+00:00", "change": "edited", "fields": ["context", "entities", "fact_type", "text"], "reason": "typo",
                   "before": {"text": "Alice visited Paris", "context": "travel", "fact_type": "world", "entities": ["Paris"]}}
    assert "t_invalid" not in out and "invalidated_at" not in record
    assert views.entity_names({**FACT, **out}) == ["Alice", "paris"]  # exactly the set given, whatever enrichment adds later


def test_unchanged_values_record_nothing():
    out = changes(FACT, text="Alice visited Paris", fact_type="world", entities=["Paris"])
    assert out == {"curation": {}}


def test_invalidate_then_restore():
    out = changes(FACT, state="invalidated", reason="cancelled")
    assert (out["t_invalid"], out["curation"]["invalidated_at"], out["curation"]["invalidation_reason"]) == (
        "2026-05-20T12:00:00+00:00", "2026-05-20T12:00:00+00:00", "cancelled")
    gone = {**FACT, **out}
    assert views.invalidated(gone, NOW) and not views.invalidated(gone, NOW - timedelta(seconds=1))
    item = views.list_item("m1", gone, NOW)
    assert (item["state"], item["invalidated_at"], item["invalidation_reason"]) == ("invalidated", "2026-05-20T12:00:00+00:00", "cancelled")
    again = changes(gone, state="invalidated", reason="cancelled for good")  # a new reason only
    assert "t_invalid" not in again and again["curation"]["revisions"][-1]["before"] == {"invalidation_reason": "cancelled"}
    back = CU.curation_changes(CU.plan_of(CU.UpdateMemoryBody(state="valid"), NOW + timedelta(hours=1))[0], gone, {}, "m1")
    assert back["t_invalid"] is None and "invalidated_at" not in back["curation"] and "invalidation_reason" not in back["curation"]
    assert [r["change"] for r in back["curation"]["revisions"]] == ["invalidated", "restored"]
    assert views.list_item("m1", {**gone, **back}, NOW + timedelta(hours=1))["state"] == "valid"
    # an archived memory (AutoMem's) is restored too; a valid one restored records nothing
    assert changes({**FACT, "archived": True}, state="valid")["archived"] is False
    assert changes(FACT, state="valid") == {"curation": {}}


def test_what_cannot_be_curated():
    with pytest.raises(BadRequest, match="observation"):
        changes({**FACT, "type": "MetaPattern"}, text="x")
    with pytest.raises(Conflict, match="superseded by memory m2"):
        changes({**FACT, "superseded_by": "m2", "superseded_at": "2026-01-01T00:00:00+00:00"}, state="valid")
    with pytest.raises(Conflict, match="valid only from"):
        changes({**FACT, "t_valid": "2027-01-01T00:00:00+00:00"}, state="invalidated")


def test_revisions_are_bounded():
    long = {"at": "2026-01-01T00:00:00+00:00", "change": "edited", "fields": ["text"], "reason": None, "before": {"text": "x" * 30_000}}
    record = {"revisions": [long] * 10}
    out = changes({**FACT, "curation": record}, text="new")
    assert len(out["curation"]["revisions"]) == 4  # three long texts and the new revision fit the 100,000 characters
    many = {"revisions": [{**long, "before": {"context": "c"}}] * CU.MAX_REVISIONS}
    assert len(changes({**FACT, "curation": many}, context="d")["curation"]["revisions"]) == CU.MAX_REVISIONS


def test_the_history_of_a_memory():
    edited = {**FACT, **changes(FACT, text="Alice visited Rome", reason="typo")}
    edited["content"] = "Alice visited Rome"
    later = CU.plan_of(CU.UpdateMemoryBody(state="invalidated"), NOW + timedelta(days=1))[0]
    gone = {**edited, **CU.curation_changes(later, edited, {}, "m1")}
    old = {"content": "Alice lives in Lyon", "timestamp": "2022-01-01T00:00:00+00:00",
           "supersessions": [{"by": "m1", "type": "EVOLVED_INTO", "at": "2023-01-01T00:00:00+00:00"}]}
    entries = CU.history("m1", gone, {"m1": gone, "m0": old}, {}, NOW + timedelta(days=2))
    assert [(e["change"], e["memory_id"]) for e in entries] == [("invalidated", "m1"), ("edited", "m1"), ("superseded", "m0")]
    assert (entries[1]["previous_text"], entries[1]["text"], entries[1]["reason"]) == ("Alice visited Paris", "Alice visited Rome", "typo")
    assert (entries[0]["previous"], entries[0]["current"]) == ({"state": "valid"}, {"state": "invalidated"})
    assert (entries[2]["superseded_by"], entries[2]["relation"], entries[2]["previous_text"], entries[2]["text"]) == (
        "m1", "EVOLVED_INTO", "Alice lives in Lyon", "Alice visited Rome")
    assert CU.history("m2", FACT, {"m2": FACT}, {}, NOW) == []


def test_an_observations_history_names_its_sources():
    obs = {"content": "Alice travels often", "type": "MetaPattern", "timestamp": "2026-01-01T00:00:00+00:00",
           "metadata": {"consolidation": {"member_ids": ["f1", "f2", "gone"]}}}
    facts = {"f1": {**FACT}, "f2": {"content": "I booked a flight", "fact_type": "experience"}}
    [entry] = CU.history("o1", obs, {"o1": obs}, facts, NOW)
    assert entry["change"] == "created" and entry["text"] == "Alice travels often"
    # the sources resolved to their text; one deleted since is left out
    assert [(f["id"], f["text"], f["type"]) for f in entry["source_facts"]] == [("f1", "Alice visited Paris", "world"), ("f2", "I booked a flight", "experience")]


def test_predecessors_query():
    body = CU.predecessors_body("b", ["m1"], 10)
    assert body["size"] == 10 and {"term": {"bank": "b"}} in body["query"]["bool"]["filter"]
