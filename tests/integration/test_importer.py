"""python -m service.cli.importer: JSONL through the write path, failures kept, re-runs idempotent."""

from __future__ import annotations

import json
import uuid

import orjson
import pytest

from service.cli import importer as I
from service.config import Settings
from service.storage.memories import MemoryStore
from service.storage.bootstrap import drop_prefix


@pytest.fixture
def settings(engine_url, os_client):
    prefix = f"t{uuid.uuid4().hex[:10]}"
    yield Settings(opensearch_url=engine_url, index_prefix=prefix)
    drop_prefix(os_client, prefix)


def write_jsonl(path, lines):
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    return path


def sample_lines(dimension: int) -> list:
    vector = [0.0] * dimension
    vector[0] = 1.0
    return [
        {"id": "a1", "content": "Chose PostgreSQL over MongoDB for the primary database.", "tags": ["project:alpha:db"],
         "embedding": vector, "associations": [{"memory2_id": "a3", "type": "LEADS_TO", "strength": 0.7}]},  # a3 comes later
        {"id": "a2", "content": "The nightly backup moved to 03:00 UTC.", "tags": ["slack:channel:ops"], "importance": 0.8,
         "associations": [{"memory2_id": "a1"}]},
        "{not json",
        {"id": "a3", "content": "Migrated the billing tables to PostgreSQL 16.", "timestamp": "2024-05-01T10:00:00Z"},
        {"id": "bad", "content": "importance out of range", "importance": 2},
        {"content": "A memory without an id gets one derived from its content.", "type": "Insight"},
        {"id": "a4", "content": "Linked to a memory that does not exist.", "associations": [{"memory2_id": "missing-1"}]},
    ]


def test_import_reports_every_failure_and_reruns_idempotently(settings, embedder, os_client, tmp_path):
    source = write_jsonl(tmp_path / "memories.jsonl", sample_lines(embedder.dimension))
    failed = tmp_path / "failed.jsonl"

    report, failed_file = I.import_file(settings, source, embedder=embedder, failed_path=failed, progress=False)

    assert (report.read, report.stored, report.failed, report.embedded, report.generated_ids) == (7, 5, 2, 4, 1)
    assert (report.edges_stored, report.edges_failed) == (2, 1)
    assert failed_file == failed
    entries = [orjson.loads(line) for line in failed.read_text().splitlines()]
    assert [(e["line"], e["stage"]) for e in entries] == [(3, "parse"), (5, "validate"), (7, "associate")]
    assert entries[0]["record"] == "{not json\n"
    assert entries[1]["record"]["id"] == "bad" and "importance" in entries[1]["reason"]
    assert "missing-1" in entries[2]["reason"]

    memories, edges = settings.memories_alias, settings.edges_alias
    assert os_client.count(index=memories)["count"] == 5  # searchable: the import refreshed at the end
    assert sorted(h["_id"] for h in os_client.search(index=edges, body={"size": 10})["hits"]["hits"]) == ["a1|LEADS_TO|a3", "a2|RELATES_TO|a1"]
    index = next(iter(os_client.indices.get_alias(name=memories)))
    interval = os_client.indices.get_settings(index=index, name="index.refresh_interval", flat_settings=True)
    assert interval[index]["settings"]["index.refresh_interval"] == "1s"  # restored after the load
    stored = os_client.get(index=memories, id="a2")["_source"]
    assert stored["tag_prefixes"] == ["slack", "slack:channel", "slack:channel:ops"] and "embedding" not in stored
    vector, _, _ = MemoryStore(os_client, memories).vectors("default", ["a2"])["a2"]  # the vector lives outside _source
    assert len(vector) == embedder.dimension

    again, _ = I.import_file(settings, source, embedder=embedder, failed_path=tmp_path / "again.jsonl", progress=False)
    assert (again.stored, again.failed, again.edges_stored, again.edges_failed) == (5, 2, 2, 1)
    assert os_client.count(index=memories)["count"] == 5
    assert os_client.count(index=edges)["count"] == 2


def test_cli_exit_status_and_json_summary(settings, engine_url, tmp_path, capsys):
    good = write_jsonl(tmp_path / "good.jsonl", [{"id": f"m{i}", "content": f"memory number {i} about the release"} for i in range(3)])
    code = I.main([str(good), "--url", engine_url, "--prefix", settings.index_prefix, "--json", "--no-progress"])
    summary = json.loads(capsys.readouterr().out)
    assert code == 0 and summary["stored"] == 3 and summary["failed_file"] is None

    bad = write_jsonl(tmp_path / "bad.jsonl", ['{"content": ""}'])
    code = I.main([str(bad), "--url", engine_url, "--prefix", settings.index_prefix, "--json", "--no-progress"])
    summary = json.loads(capsys.readouterr().out)
    assert code == 1 and summary["failed"] == 1 and summary["failed_file"] == f"{bad}.failed.jsonl"
