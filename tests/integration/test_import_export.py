"""engram export / engram import: the same recall after moving a store, idempotent re-runs that never
re-date anything, resume after an interruption, failures kept with their line, live writes unhindered."""

from __future__ import annotations

import gzip
import json
from datetime import datetime, timezone

import orjson
import pytest

from bench.corpus import CorpusGenerator
from service.admin import sources
from service.admin.jobs import import_file
from service.cli.main import main
from tests.integration.admin_support import export_bytes, populate
from tests.integration.support import fast_api, recall

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)


@pytest.fixture
def api(make_client):
    return fast_api(make_client)


def corpus(n: int, seed: int = 3) -> list[dict]:
    """Realistic records (tags, metadata, edges, a few supersessions), no vectors: the importer embeds them."""
    return [record for record, _ in CorpusGenerator(n, seed=seed, now=NOW).records()]


def write_jsonl(path, records, *, gz: bool = False):
    data = b"".join(orjson.dumps(r) + b"\n" for r in records)
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def cli(*args: str) -> int:
    return main(list(args))


def engine_args(api) -> list[str]:
    s = api.app.state.settings
    return ["--url", s.opensearch_url, "--prefix", s.index_prefix]


QUERIES = [dict(query="database migration decision"), dict(query="who owns the billing webhooks", limit=5),
           dict(query="incident on the search cluster", tags="project", expand_relations="true"),
           dict(query="deploy schedule", state_mode="history")]


def ranked(api) -> list[list[tuple[str, float]]]:
    return [[(r["id"], round(r["final_score"], 5)) for r in recall(api, **q)["results"]] for q in QUERIES]


def test_export_then_import_into_an_empty_store_gives_the_same_recall(api, make_client, tmp_path):
    source = write_jsonl(tmp_path / "corpus.jsonl", corpus(80))
    assert cli("import", str(source), *engine_args(api), "--no-progress") == 0
    ids = populate(api)
    # A memory stored with a client's vector is re-embedded by the new store when the export has no
    # vectors (test_export_with_vectors_moves_them_as_they_are keeps it): leave it out here.
    assert api.delete(f"/memory/{ids['vec']}").status_code == 200
    exported = tmp_path / "memories.jsonl"
    assert cli("export", *engine_args(api), "--output", str(exported), "--no-progress") == 0
    lines = exported.read_bytes().splitlines()
    records = [json.loads(line) for line in lines]
    memories = [r for r in records if "content" in r]
    edges = [r for r in records if "memory1_id" in r]
    assert len(memories) == 85 and len(edges) == len(records) - 85 and records[: len(memories)] == memories  # memories first
    assert [m["timestamp"] for m in memories] == sorted(m["timestamp"] for m in memories)  # oldest first
    assert all("embedding" not in m and "bank" not in m and "tag_prefixes" not in m for m in memories)
    assert {"created_at", "updated_at", "strength", "type"} <= set(edges[0])

    empty = fast_api(make_client)
    assert cli("import", str(exported), *engine_args(empty), "--no-progress") == 0
    assert export_bytes(empty) == exported.read_bytes()  # the same store, byte for byte
    assert ranked(empty) == ranked(api)


def test_export_with_vectors_moves_them_as_they_are(api, make_client, tmp_path):
    populate(api)
    out = tmp_path / "with-vectors.jsonl"
    assert cli("export", *engine_args(api), "--vectors", "-o", str(out), "--no-progress") == 0
    other = fast_api(make_client)
    assert cli("import", str(out), *engine_args(other), "--no-progress", "--json") == 0
    ids = [json.loads(line)["id"] for line in out.read_bytes().splitlines() if b'"content"' in line]
    a, b = api.app.state.memories.vectors("default", ids), other.app.state.memories.vectors("default", ids)
    assert all(a[i][0] == pytest.approx(b[i][0]) for i in ids)
    assert export_bytes(other, vectors=True) == out.read_bytes()


def test_export_by_tags_keeps_only_edges_between_exported_memories(api, tmp_path):
    ids = populate(api)
    lines = [json.loads(x) for x in export_bytes(api, tags=["ops", "project:alpha"]).splitlines()]
    assert {r["id"] for r in lines if "content" in r} == {ids["old"], ids["new"], ids["pg"]}
    assert [(r["memory1_id"], r["type"], r["memory2_id"]) for r in lines if "memory1_id" in r] == [(ids["old"], "EVOLVED_INTO", ids["new"])]


def test_rerun_changes_nothing_and_never_redates(api, tmp_path, capsys):
    records = [{"id": f"m{i}", "content": f"Release note {i}: the {['api', 'db', 'search'][i % 3]} service was upgraded."} for i in range(30)]
    records.append({"id": "m-old", "content": "The office is on floor 3.", "associations": [{"memory2_id": "m-new", "type": "EVOLVED_INTO"}]})
    records.append({"id": "m-new", "content": "The office moved to floor 5."})
    source = write_jsonl(tmp_path / "notes.jsonl", records)
    assert cli("import", str(source), *engine_args(api), "--no-progress", "--json") == 0
    first = json.loads(capsys.readouterr().out)
    assert (first["stored"], first["embedded"], first["edges_stored"]) == (32, 32, 1)
    before = export_bytes(api)
    # A client touches two of them in between: its changes are not the file's to undo.
    assert api.patch("/memory/m3", json={"importance": 0.9}).status_code == 200
    api.app.state.memories.refresh_now()
    touched = export_bytes(api)

    assert cli("import", str(source), *engine_args(api), "--no-progress", "--json") == 0
    again = json.loads(capsys.readouterr().out)
    assert (again["stored"], again["embedded"], again["reused_vectors"], again["edges_stored"]) == (32, 0, 32, 1)
    after = export_bytes(api)
    by_id = lambda data: {r["id"]: r for r in map(json.loads, data.splitlines()) if "content" in r}  # noqa: E731
    for mid, row in by_id(after).items():
        for name in ("timestamp", "updated_at", "supersessions"):
            assert row.get(name) == by_id(touched)[mid].get(name), (mid, name)
    assert by_id(after)["m3"]["importance"] == 0.5  # the file says 0.5 (the default), and the file wins on what it gives
    assert after.count(b"\n") == before.count(b"\n") and api.app.state.memories.count() == 32
    assert api.get("/memory/m-old").json()["memory"]["superseded_by"] == "m-new"


def test_resume_after_an_interrupted_import(api, tmp_path, monkeypatch):
    records = corpus(1000, seed=5)
    first, later = records[10]["id"], records[900]["id"]
    records[10]["associations"] = [{"memory2_id": later, "type": "LEADS_TO", "strength": 0.6}]  # an end that comes later
    records.insert(300, "{broken line")
    source = tmp_path / "big.jsonl"
    source.write_bytes(b"".join((r.encode() if isinstance(r, str) else orjson.dumps(r)) + b"\n" for r in records))
    settings = api.app.state.settings
    embedder = api.app.state.embedder
    real = sources.read_lines

    def interrupted(stream, **kw):
        for line, raw in real(stream, **kw):
            if line == 655:
                raise KeyboardInterrupt
            yield line, raw

    monkeypatch.setattr(sources, "read_lines", interrupted)
    with pytest.raises(KeyboardInterrupt):
        import_file(settings, source, embedder=embedder, batch_size=100, progress=False)
    state = sources.ResumeState.load(tmp_path / "big.jsonl.import-state.json")
    assert state.line == 600  # six batches of 100 confirmed; the seventh was never sent
    assert [d["edge"]["target_id"] for d in state.deferred] == [later]
    api.app.state.memories.refresh_now()
    assert api.app.state.memories.count() == 599  # line 301 is the broken one
    monkeypatch.setattr(sources, "read_lines", real)

    report, failed = import_file(settings, source, embedder=embedder, batch_size=100, progress=False, resume=True)
    assert (report.skipped, report.read, report.stored, report.failed) == (600, 401, 401, 0)
    assert api.app.state.memories.count() == 1000
    assert api.app.state.edges.count("default") >= 1 and api.app.state.client.exists(index=settings.edges_alias, id=f"{first}|LEADS_TO|{later}")
    entries = [json.loads(x) for x in failed.read_text().splitlines()]
    assert [(e["line"], e["stage"]) for e in entries] == [(301, "parse")]  # kept from the first run, nothing new
    assert not (tmp_path / "big.jsonl.import-state.json").exists()  # complete: nothing left to resume
    again, _ = import_file(settings, source, embedder=embedder, batch_size=100, progress=False)
    assert again.stored == 1000 and api.app.state.memories.count() == 1000  # a full re-run: no duplicate


def test_resume_refuses_a_changed_file(api, tmp_path):
    from service.errors import BadRequest

    source = write_jsonl(tmp_path / "a.jsonl", [{"id": "x1", "content": "first"}])
    settings, embedder = api.app.state.settings, api.app.state.embedder
    with pytest.raises(BadRequest, match="nothing was interrupted"):
        import_file(settings, source, embedder=embedder, resume=True, progress=False)
    import_file(settings, source, embedder=embedder, progress=False)
    with pytest.raises(BadRequest, match="nothing was interrupted"):  # complete: its state is gone
        import_file(settings, source, embedder=embedder, resume=True, progress=False)
    sources.ResumeState(str(source), sources.fingerprint(source), line=1).save(tmp_path / "a.jsonl.import-state.json")  # as an interrupted run leaves it
    source.write_bytes(b'{"id": "x2", "content": "other"}\n')
    with pytest.raises(BadRequest, match="changed since"):
        import_file(settings, source, embedder=embedder, resume=True, progress=False)


def test_formats_and_hostile_lines(api, tmp_path, monkeypatch):
    monkeypatch.setattr(sources, "MAX_LINE_BYTES", 4096)
    lines = [
        b'{"id": "g1", "content": "gzip and CRLF line endings"}\r\n', b"\n", b"   \n",
        b'{"id": "g2", "content": "a lone surrogate \\ud800"}\n',
        b'{"id": "g3", "content": "nan", "importance": NaN}\n',
        b'{"id": "g4", "content": "deep", "metadata": ' + b'{"a": ' * 1100 + b"1" + b"}" * 1101 + b"\n",
        b'{"id": "g5", "content": "' + b"x" * 5000 + b'"}\n',
        b'[1, 2, 3]\n',
        b'{"id": "g6", "content": "edge targets", "associations": [{"memory2_id": "g1", "type": "SIMILAR_TO", "strength": 0.5}, {"memory2_id": "g6"}, {"memory2_id": "g1", "type": "NOPE"}]}\n',
        b'{"memory1_id": "g6", "memory2_id": "g1", "type": "PART_OF", "strength": 2}\n',
        b'{"id": "g7", "content": "bad supersessions", "supersessions": [{"by": "g1"}]}\n',
        b'{"id": "bad id!", "content": "x"}\n',
    ]
    source = tmp_path / "mixed.ndjson.gz"
    source.write_bytes(gzip.compress(b"".join(lines)))
    report, failed = import_file(api.app.state.settings, source, embedder=api.app.state.embedder, progress=False)
    entries = [json.loads(x) for x in failed.read_text().splitlines()]
    got = [(e["line"], e["stage"]) for e in entries]
    assert got == [(4, "parse"), (5, "parse"), (6, "parse"), (7, "parse"), (8, "parse"), (9, "associate"), (9, "associate"),
                   (10, "associate"), (11, "validate"), (12, "validate")]
    reasons = {(e["line"], e["reason"].split(":")[0]) for e in entries}
    assert (7, "line is longer than 4,096 bytes") in reasons
    assert (report.read, report.stored, report.edges_stored) == (10, 2, 1)  # g1, g6 and g6 -SIMILAR_TO-> g1 (a system type, accepted)


def test_live_writes_are_not_held_up_by_an_import(api, tmp_path, monkeypatch):
    # The importer never turns refresh off (a live `refresh=wait_for` write would wait for the import);
    # --pause-refresh does, for offline loads, and puts it back.
    settings = api.app.state.settings
    index = next(iter(api.app.state.client.indices.get_alias(name=settings.memories_alias)))
    seen: list[str] = []
    from service.admin import importing

    real_write = importing.Importer._write

    def watching(self, batch):
        seen.append(api.app.state.client.indices.get_settings(index=index, name="index.refresh_interval", flat_settings=True)[index]["settings"].get("index.refresh_interval"))
        assert api.post("/memory", json={"content": f"a live write during batch {batch.seq}"}).status_code == 201
        return real_write(self, batch)

    monkeypatch.setattr(importing.Importer, "_write", watching)
    source = write_jsonl(tmp_path / "c.jsonl", corpus(300, seed=9))
    import_file(settings, source, embedder=api.app.state.embedder, batch_size=100, progress=False)
    assert seen == ["1s", "1s", "1s"]
    seen.clear()
    import_file(settings, source, embedder=api.app.state.embedder, batch_size=100, progress=False, pause_refresh=True)
    assert seen == ["-1", "-1", "-1"]
    assert api.app.state.client.indices.get_settings(index=index, name="index.refresh_interval", flat_settings=True)[index]["settings"]["index.refresh_interval"] == "1s"
    assert api.app.state.memories.count() == 306
