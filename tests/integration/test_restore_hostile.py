"""POST /admin/restore and `engram restore` against archives that are not what they claim: bombs,
lone surrogates, vectors that are no vectors, repeated records; what a failure file is called.

Archives are AutoMem's layout built here (tests/integration/admin_support.automem_layout), written
as Python's json writes them (a lone surrogate becomes its `\\udc00` escape, as in AutoMem's backups).
"""

from __future__ import annotations

import gzip
import io
import json
import tarfile
import zlib

import pytest

from service.cli.main import main
from tests.integration.admin_support import automem_layout, node, post_archive, tar_gz
from tests.integration.support import assert_error, fast_api

A, B, C, D = (f"00000000-0000-4000-8000-0000000000a{i}" for i in range(1, 5))


@pytest.fixture
def api(make_client):
    return fast_api(make_client)


def one_string_bomb(megabytes: int) -> bytes:
    """A tar.gz of a few KB whose FalkorDB member is one node holding a string of `megabytes` MB."""
    inner = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [inner.compress(b'{"timestamp": "20240101_000000", "nodes": [{"id": 0, "labels": ["Memory"], "properties": {"id": "m", "content": "')]
    block = b"a" * (1 << 20)
    parts += [inner.compress(block) for _ in range(megabytes)]
    parts.append(inner.compress(b'"}}], "relationships": []}') + inner.flush())
    return tar_gz({"falkordb/falkordb_20240101_000000.json.gz": b"".join(parts)})


def test_a_decompression_bomb_is_refused_naming_the_limit(api):
    bomb = one_string_bomb(400)
    assert len(bomb) < 4096  # the 1,087-byte archive of issue 23 holds the same 400 MB string
    assert_error(post_archive(api, bomb), 400, "expands to more than 100 times its compressed size", "ratio limit")
    assert api.app.state.memories.count() == 0


def test_lone_surrogates_fail_their_memory_naming_the_field(api):
    archive = automem_layout([
        node(0, A, "a lone low surrogate \udc00 here"),
        node(1, B, "fine content", metadata=json.dumps({"k": "x\ud800"})),  # AutoMem stores metadata as a JSON string
        node(2, C, "an emoji 🙂 as its escaped pair", tags=["ok"]),
        node(3, D, "a tag with one", tags=["t\ud800"]),
    ])
    assert b"\\udc00" in gzip.decompress(tarfile.open(fileobj=io.BytesIO(archive)).extractfile("falkordb/falkordb_20251019_085625.json.gz").read())
    resp = post_archive(api, archive)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["status"] == "partial_success" and body["memories"]["restored"] == 1 and body["memories"]["failed"] == 3
    reasons = {f["id"]: f["reason"] for f in body["failures"]}
    assert reasons[A].startswith("content (U+DC00 at character 21) holds a lone surrogate")
    assert reasons[B].startswith("metadata.k (U+D800 at character 1) holds a lone surrogate")
    assert reasons[D].startswith("tags[0] (U+D800 at character 1) holds a lone surrogate")
    assert api.get(f"/memory/{C}").json()["memory"]["content"] == "an emoji 🙂 as its escaped pair"
    assert api.get(f"/memory/{B}").status_code == 404  # not stored with a "?" in its place


@pytest.mark.parametrize("value", [0.0, 1e39, 1e-40])
def test_a_vector_that_is_no_vector_is_replaced_and_counted(api, embedder, value):
    archive = automem_layout([node(0, A, "Deploys moved to Tuesday."), node(1, B, "The cache is Redis.")],
                             points=[{"id": A, "vector": [value] * 384, "payload": {}}, {"id": B, "vector": [0.5] * 384, "payload": {}}])
    body = post_archive(api, archive).json()
    assert body["status"] == "success", body
    assert body["memories"] == {"restored": 2, "failed": 0, "vectors_reused": 1, "reembedded": 1, "duplicates": 0, "vectors_unusable": 1}
    stored = api.app.state.memories.vectors(api.app.state.settings.default_bank, [A])[A][0]
    assert stored == pytest.approx(embedder.embed_query("Deploys moved to Tuesday."), abs=1e-5)


def test_counts_are_of_what_was_stored(api):
    rel = {"source_id": 0, "type": "RELATES_TO", "target_id": 2, "properties": {"strength": 0.5}}
    archive = automem_layout([node(0, A, "first copy"), node(1, A, "second copy of the same id"), node(2, B, "other")], [rel] * 3000)
    body = post_archive(api, archive).json()
    assert body["status"] == "success", body
    assert body["memories"]["restored"] == 2 and body["memories"]["duplicates"] == 1
    assert body["edges"] == {"restored": 1, "failed": 0, "duplicates": 2999}
    assert api.get(f"/memory/{A}").json()["memory"]["content"] == "first copy"
    assert api.app.state.edges.count(api.app.state.settings.default_bank) == 1


def test_each_restore_keeps_its_own_failure_file(api, engine_url, tmp_path, capsys):
    path = tmp_path / "backup.tar.gz"
    path.write_bytes(automem_layout([node(0, A, "bad \udc00"), node(1, B, "good")]))
    engine = ["--url", engine_url, "--prefix", api.app.state.settings.index_prefix, "--no-progress", "--json"]
    assert main(["restore", str(path), *engine]) == 1
    assert main(["restore", str(path), *engine]) == 1
    files = sorted(tmp_path.glob("backup.tar.gz.failed-*.jsonl"))
    assert len(files) == 2, files
    for f in files:
        (failure,) = [json.loads(line) for line in f.read_text().splitlines()]
        assert failure["id"] == A and "lone surrogate" in failure["reason"]
    assert str(files[0]) in capsys.readouterr().err
