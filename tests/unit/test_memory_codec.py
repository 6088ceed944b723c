"""service/memory/codec.py: one table of the stored fields (the template's, every one), and every
view and record made from it: AutoMem's public memory and recall detail, Hindsight's and Signet's
tags, export lines, backup nodes and back."""

from __future__ import annotations

import json

import pytest

from scoring.rerank import Candidate, ScoredCandidate
from service.admin import archive
from service.admin.records import memory_line
from service.api.hindsight.views import list_item, recall_result
from service.api.responses import public_memory
from service.api.signet.shaping import legacy_row, row, similar_row
from service.memory import codec
from service.memory.codec import RANKING_FIELDS, Kind
from service.recall.shaping import shape_result
from service.storage.bootstrap import load_template
from service.threads import FIELDS as THREAD_FIELDS

PROPERTIES = load_template("memories")["template"]["mappings"]["properties"]
ENRICHMENT = {"status": "done", "derived_tags": ["entity:people:sarah", "entity:places:oslo"], "input_hash": "h", "preceded_by": "m0"}
STORED = {
    "id": "m1", "bank": "b", "content": "Sarah went to Oslo", "tags": ["trip", "Entity:People:Sarah", "entity:places:oslo", "entity:people:rachel"],
    "tags_norm": ["trip"], "tag_prefixes": ["trip"], "metadata_terms": ["x"], "entities": ["sarah"], "metadata": {"b": 1, "a": {"d": 2, "c": 3}},
    "enrichment": ENRICHMENT, "supersessions": [{"by": "m2", "type": "EVOLVED_INTO", "at": "t"}], "superseded_by": "m2",
    "thread_key": "session:s", "thread_at": 1, "thread_seq": 2, "thread_prev": "m0", "thread_context": "What did you do?",
    "date_terms": ["d:2024-03-01"], "embedding": [0.1], "importance": 0.5, "timestamp": "2024-03-01T00:00:00+00:00", "t_valid": None,
}


def test_the_table_is_the_template():
    assert set(codec.FIELDS) == set(PROPERTIES)
    structured = {n for n, f in codec.FIELDS.items() if f.kind in (Kind.STRUCTURED, Kind.PRIVATE)}
    assert structured == {n for n, p in PROPERTIES.items() if p.get("type") in (None, "object") and n != "supersessions"} | {"supersessions"}
    assert not codec.FIELDS["curation"].shown and codec.FIELDS["curation"].portable  # Hindsight's own record: travels, shown by Hindsight alone
    assert set(RANKING_FIELDS) == {n for n, f in codec.FIELDS.items() if f.kind is Kind.INDEX_ONLY} and set(THREAD_FIELDS) <= set(RANKING_FIELDS)
    assert set(codec.COPY_TARGETS) == {n for p in PROPERTIES.values() for n in ([p["copy_to"]] if "copy_to" in p else [])}


def test_every_view_of_automem_shows_the_same_fields():
    scored = ScoredCandidate(candidate=Candidate(id="m1", content="Sarah went to Oslo"), final_score=0.5, components={})
    public = public_memory("m1", STORED)
    detailed = shape_result(scored, STORED, temporal_weight=0.0, arms=["keyword"])["memory"]
    assert set(public) - {"id"} == set(detailed) - {"id"} == {k for k in STORED if codec.FIELDS[k].shown} - {"id"}
    assert not {"embedding", "bank", "tags_norm", "metadata_terms", *RANKING_FIELDS} & set(public)
    assert public["tags"] == STORED["tags"]  # AutoMem's enrichment merges its tags into the memory's (spec 003)


def test_derived_tags_are_shown_by_no_other_surface():
    caller = ["trip", "entity:people:rachel"]
    assert codec.caller_tags(STORED) == caller
    assert recall_result("m1", STORED)["tags"] == list_item("m1", STORED)["tags"] == caller
    assert legacy_row("m1", STORED, None)["tags"] == "trip,entity:people:rachel" == row({"id": "m1", "memory": STORED})["tags"]
    assert similar_row("m1", STORED, 0.9)["tags"] == caller
    assert codec.caller_tags({"tags": ["a"], "enrichment": "not an object"}) == ["a"]


def test_export_line_and_backup_node_carry_the_portable_fields():
    line = memory_line("m1", STORED)
    assert set(line) == {"id", "content", "tags", "metadata", "enrichment", "supersessions", "thread_seq", "thread_prev", "thread_context",
                         "importance", "timestamp"}
    props = archive.node_properties("m1", STORED)
    assert set(props) == set(line) | {"tag_prefixes"}  # AutoMem's nodes hold tag_prefixes; restore rebuilds it
    assert json.loads(props["enrichment"]) == ENRICHMENT and props["metadata"] == '{"b": 1, "a": {"d": 2, "c": 3}}'  # stored key order


def test_a_node_decodes_back_to_the_record_released_and_current_encodings_alike():
    fields = frozenset(PROPERTIES) - codec.NOT_PORTABLE
    props = archive.node_properties("m1", STORED)
    record, unmapped = archive.memory_record(props, fields)
    assert record == memory_line("m1", STORED) and unmapped == []
    released = {**props, "metadata": json.dumps(STORED["metadata"], sort_keys=True), "enrichment": json.dumps(ENRICHMENT, sort_keys=True)}
    assert archive.memory_record(released, fields)[0]["enrichment"] == ENRICHMENT
    native = {**props, "enrichment": ENRICHMENT}  # a node writer that kept maps (the Qdrant payload does)
    assert archive.memory_record(native, fields)[0]["enrichment"] == ENRICHMENT
    assert archive.memory_record({**props, "enrichment": "[1]"}, fields)[1] == ["enrichment"]  # no object: counted, left out


@pytest.mark.parametrize("name, value, message", [
    ("metadata", "{oops", "metadata is neither an object nor a JSON string of one"),
    ("metadata", "[1]", "metadata must be an object, got list"),
    ("supersessions", {"by": "x"}, "supersessions must be a list, got dict"),
])
def test_undecodable(name, value, message):
    with pytest.raises(codec.Undecodable, match=message):
        codec.decode(name, value)


def test_remap_ids_rewrites_every_memory_id_a_record_holds():
    summary = {"id": "p", "type": "MetaPattern", "metadata": {"consolidation": {"member_ids": ["m1", "m2"]}, "k": "m1"}}
    new = lambda old: f"new-{old}"  # noqa: E731
    out = codec.remap_ids({**STORED, "enrichment": ENRICHMENT}, new)
    assert (out["id"], out["thread_prev"], out["supersessions"][0]["by"], out["enrichment"]["preceded_by"]) == ("new-m1", "new-m0", "new-m2", "new-m0")
    assert STORED["id"] == "m1" and ENRICHMENT["preceded_by"] == "m0"  # inputs untouched
    assert codec.remap_ids(summary, new)["metadata"] == {"consolidation": {"member_ids": ["new-m1", "new-m2"]}, "k": "m1"}
    assert codec.remap_ids({**summary, "type": "Insight"}, new)["metadata"] == summary["metadata"]  # only a summary's


@pytest.mark.parametrize("value, expected", [
    ({"content": "fine 🙂"}, None),
    ({"content": "x\udc00"}, "m.content (U+DC00 at character 1)"),
    ({"metadata": {"a": [1, {"b": "\ud800"}]}}, "m.metadata.a[1].b (U+D800 at character 0)"),
    ({"metadata": {"\ud800": 1}}, "m.metadata key (U+D800 at character 0)"),
])
def test_lone_surrogate(value, expected):
    assert codec.lone_surrogate(value, "m") == expected


RUN = {"status": "done", "source_updated_at": "2026-12-01T00:00:00Z"}


@pytest.mark.parametrize("source, changed, record", [
    ({"enrichment": {"status": "done", "rules": 3}}, {"content", "updated_at"}, {"status": "pending", "rules": 3}),
    ({"enrichment": {"status": "failed", "attempts": 3}}, {"tags"}, {"status": "pending", "attempts": 3}),  # new inputs, a new try
    ({"enrichment": {"status": "pending", "forced": True}}, {"metadata"}, {"status": "pending", "forced": True}),
    ({"enrichment": {"status": "done"}}, {"timestamp"}, {"status": "pending"}),
    ({"enrichment": {"status": "done"}}, {"importance", "pinned", "updated_at"}, None),  # nothing enrichment reads, no run recorded
    ({}, {"content"}, None),  # never enriched: pending already, by having no status
    ({"enrichment": "garbage"}, {"content"}, None),
    # Another field, of a memory enriched as it stood: the run's record moves along (no restart finds it).
    ({"updated_at": RUN["source_updated_at"], "enrichment": RUN}, {"importance", "updated_at"}, {**RUN, "source_updated_at": "NOW"}),
    ({"updated_at": RUN["source_updated_at"], "enrichment": RUN}, {"content"}, {**RUN, "status": "pending"}),
    # Edited since its run, in a store written before edits marked their memory: the start scan's to find.
    ({"updated_at": "2026-12-02T00:00:00Z", "enrichment": RUN}, {"importance"}, None),
    ({"updated_at": RUN["source_updated_at"], "enrichment": {**RUN, "status": "pending"}}, {"importance"}, None),
    ({"updated_at": RUN["source_updated_at"], "enrichment": {**RUN, "status": "failed"}}, {"pinned"}, None),
])
def test_the_enrichment_record_an_edit_writes(source, changed, record):
    assert codec.enrichment_after_edit(source, changed, "NOW") == record
