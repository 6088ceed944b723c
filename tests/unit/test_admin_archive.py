"""AutoMem's archive layout, pure: include parsing, node / point / relationship shapes both ways, the tar stream."""

from __future__ import annotations

import gzip
import io
import json
import tarfile

import pytest

from service.admin import archive
from service.admin.backup import Member, tar_gz
from service.admin.reembed import stale_query
from service.errors import BadRequest


@pytest.mark.parametrize("raw, expected", [(None, ("falkordb", "qdrant")), ("qdrant", ("qdrant",)), ("QDRANT, falkordb", ("falkordb", "qdrant"))])
def test_include(raw, expected):
    assert archive.parse_include(raw) == expected


@pytest.mark.parametrize("raw", ["", " ", "neo4j", "falkordb,", ",qdrant", "falkordb,,qdrant", "falkordb,neo4j"])
def test_bad_include(raw):
    with pytest.raises(BadRequest, match="include must be a comma-separated subset of: falkordb,qdrant"):
        archive.parse_include(raw)


SOURCE = {"bank": "b", "content": "c", "tags": ["x"], "tag_prefixes": ["x"], "tags_norm": ["x"], "metadata": {"k": [1, {"z": None}]},
          "importance": 0.7, "t_invalid": None, "archived": False, "supersessions": [{"by": "m2", "type": "EVOLVED_INTO", "at": "t"}],
          "superseded_by": "m2", "entities": [], "metadata_terms": []}


def test_node_properties_are_what_falkordb_holds():
    props = archive.node_properties("m1", SOURCE)
    assert props == {"id": "m1", "content": "c", "tags": ["x"], "tag_prefixes": ["x"], "metadata": '{"k": [1, {"z": null}]}',
                     "importance": 0.7, "archived": False, "supersessions": '[{"by": "m2", "type": "EVOLVED_INTO", "at": "t"}]'}


def test_point_payload_and_relationship():
    assert archive.point("m1", SOURCE, [0.5]) == {"id": "m1", "vector": [0.5], "payload": {
        "content": "c", "tags": ["x"], "tag_prefixes": ["x"], "importance": 0.7, "metadata": {"k": [1, {"z": None}]}, "archived": False}}
    edge = {"type": "RELATES_TO", "strength": 0.4, "created_at": "c", "updated_at": "u", "properties": {"reason": "r"}}
    assert archive.relationship(3, 5, edge) == {"source_id": 3, "type": "RELATES_TO", "target_id": 5,
                                                "properties": {"reason": "r", "strength": 0.4, "created_at": "c", "updated_at": "u"}}


def test_memory_record_from_an_automem_node():
    fields = frozenset({"content", "tags", "importance", "metadata", "timestamp", "supersessions", "type"})
    props = {"id": "m1", "content": "c", "tags": '["a", "b"]', "metadata": '{"k": 1}', "processed": True, "tag_prefixes": ["a"],
             "supersessions": '[{"by": "m2"}]', "t_valid": None}
    record, unmapped = archive.memory_record(props, fields, payload={"content": "older", "importance": 0.2, "type": "Insight"})
    assert record == {"id": "m1", "content": "c", "tags": ["a", "b"], "metadata": {"k": 1}, "supersessions": [{"by": "m2"}],
                      "importance": 0.2, "type": "Insight"}
    assert unmapped == ["processed"]
    assert archive.memory_record({"id": "m1", "metadata": "{oops"}, fields) == ({"id": "m1"}, ["metadata"])


@pytest.mark.parametrize("raw, expected", [([1, 0.5], [1.0, 0.5]), ({"default": [0.25]}, [0.25]), ([], None), (None, None),
                                           (["x"], None), ([True], None), ([[1.0], [2.0]], None), ([1.0, [2.0]], None),
                                           ([float("nan")], None), ({"sparse": {"indices": []}}, None)])
def test_vector_of(raw, expected):
    vector = archive.vector_of(raw)
    assert (None if vector is None else vector.tolist()) == expected
    assert vector is None or vector.dtype == "float32"


def test_tar_stream_reads_back(tmp_path):
    one, two = tmp_path / "a", tmp_path / "b"
    one.write_bytes(gzip.compress(b'{"nodes": []}'))
    two.write_bytes(b"x" * 1025)  # not a multiple of 512: padded
    data = b"".join(tar_gz([Member("falkordb/falkordb_1.json.gz", one), Member("manifest.json", two)], mtime=0))
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        names = tar.getnames()
        assert names == ["falkordb/falkordb_1.json.gz", "manifest.json"]
        assert json.loads(gzip.decompress(tar.extractfile(names[0]).read())) == {"nodes": []}
        assert tar.extractfile(names[1]).read() == b"x" * 1025


def test_stale_query():
    assert stale_query("b", "m", force=False) == {"bool": {
        "filter": [{"term": {"bank": "b"}}],
        "should": [{"bool": {"must_not": [{"term": {"embedding_model": "m"}}]}}, {"bool": {"must_not": [{"exists": {"field": "embedding"}}]}}],
        "minimum_should_match": 1,
    }}
    assert stale_query("b", "m", force=True) == {"bool": {"filter": [{"term": {"bank": "b"}}]}}
    # The drift repair's: no vector only, whatever the model, internal types left out.
    assert stale_query("b", "m", force=False, only_missing=True, excluded_types=["MetaPattern"]) == {"bool": {
        "filter": [{"term": {"bank": "b"}}],
        "must_not": [{"exists": {"field": "embedding"}}, {"terms": {"type": ["MetaPattern"]}}],
    }}
    assert stale_query("b", "m", force=False, only_missing=True) == {"bool": {
        "filter": [{"term": {"bank": "b"}}], "must_not": [{"exists": {"field": "embedding"}}]}}
