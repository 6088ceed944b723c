"""GET /backup writes AutoMem's archive layout; POST /admin/restore reads it back (ours and AutoMem's).

Backup -> wipe -> restore gives a byte-identical export; restoring twice changes nothing.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.integration.admin_support import ADMIN_HEADERS, export_bytes, member_json, members, populate, post_archive, stored_state, unit, wipe
from tests.integration.support import assert_error, fast_api, recall, settle_accesses


@pytest.fixture
def api(make_client):
    return fast_api(make_client)


def restore(api, archive: bytes, **params):
    resp = api.post("/admin/restore", files={"file": ("backup.tar.gz", archive, "application/gzip")}, headers=ADMIN_HEADERS, params=params)
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_backup_is_automem_layout_and_restores_to_an_identical_export(api, os_client):
    ids = populate(api)
    # Recall first: it records access (last_accessed), which the export then includes.
    before_recall = [r["id"] for r in recall(api, query="deployments database backup", state_mode="history", limit=10)["results"]]
    settle_accesses(api)  # written off the request path: the export must not be read before them
    api.app.state.memories.refresh_now()
    before = export_bytes(api)

    resp = api.get("/backup", headers=ADMIN_HEADERS)
    assert resp.status_code == 200 and resp.headers["content-type"] == "application/gzip"
    assert re.fullmatch(r'attachment; filename="automem-backup-\d{8}_\d{6}\.tar\.gz"', resp.headers["content-disposition"])
    found = members(resp.content)
    ts = re.search(r"(\d{8}_\d{6})", resp.headers["content-disposition"]).group(1)
    assert sorted(found) == [f"falkordb/falkordb_{ts}.json.gz", "manifest.json", f"qdrant/qdrant_{ts}.json.gz"]

    graph = member_json(found, "falkordb/")
    assert graph["timestamp"] == ts and graph["stats"] == {"node_count": 6, "relationship_count": 3}
    nodes = {n["id"]: n for n in graph["nodes"]}
    assert all(isinstance(k, int) and n["labels"] == ["Memory"] for k, n in nodes.items())
    by_memory = {n["properties"]["id"]: n["properties"] for n in nodes.values()}
    pg = by_memory[ids["pg"]]
    assert pg["content"].startswith("Chose PostgreSQL") and pg["tags"] == ["project:alpha:db", "decision"]
    assert isinstance(pg["metadata"], str) and '"source": "slack"' in pg["metadata"]  # a JSON string, as AutoMem stores it
    assert pg["timestamp"] == "2024-03-01T10:00:00+00:00" and pg["importance"] == 0.9 and pg["type"] == "Decision"
    assert isinstance(by_memory[ids["old"]]["supersessions"], str)
    rels = {(nodes[r["source_id"]]["properties"]["id"], r["type"], nodes[r["target_id"]]["properties"]["id"]): r["properties"] for r in graph["relationships"]}
    assert set(rels) == {(ids["pg"], "RELATES_TO", ids["backup"]), (ids["old"], "EVOLVED_INTO", ids["new"]), (ids["vec"], "DERIVED_FROM", ids["pg"])}
    assert rels[(ids["old"], "EVOLVED_INTO", ids["new"])]["reason"] == "schedule changed"
    assert rels[(ids["old"], "EVOLVED_INTO", ids["new"])]["strength"] == 0.9

    vectors = member_json(found, "qdrant/")
    assert vectors["stats"] == {"points_count": 6, "vector_size": 384} and vectors["timestamp"] == ts
    points = {p["id"]: p for p in vectors["points"]}
    assert points[ids["vec"]]["vector"] == pytest.approx(unit(3))
    assert points[ids["pg"]]["payload"]["metadata"] == {"source": "slack", "entities": {"tools": ["PostgreSQL"]}}


    manifest = json.loads(found["manifest.json"])
    assert manifest["format"] == "engram-backup" and manifest["bank"] == "default" and manifest["vector_size"] == 384
    assert manifest["counts"]["memories"] == 6 and manifest["model"] == api.app.state.embedder.short_name

    wipe(api, os_client)
    assert export_bytes(api) == b""
    body = restore(api, resp.content)
    assert body["status"] == "success" and body["memories"] == {"restored": 6, "failed": 0, "vectors_reused": 6, "reembedded": 0,
                                                                "duplicates": 0, "vectors_unusable": 0}
    assert body["edges"] == {"restored": 3, "failed": 0, "duplicates": 0} and body["archive"]["source"] == "engram"
    assert export_bytes(api) == before
    assert [r["id"] for r in recall(api, query="deployments database backup", state_mode="history", limit=10)["results"]] == before_recall
    assert api.app.state.memories.vectors("default", [ids["vec"]])[ids["vec"]][0] == pytest.approx(unit(3))

    again = restore(api, resp.content)  # idempotent: the same ids, nothing doubled, nothing re-dated
    assert again["memories"]["restored"] == 6 and export_bytes(api) == before
    assert os_client.count(index=api.app.state.settings.memories_alias)["count"] == 6


def test_partial_backups(api):
    populate(api)
    only_graph = members(api.get("/backup", params={"include": "falkordb"}, headers=ADMIN_HEADERS).content)
    assert [n.split("/")[0] for n in sorted(only_graph)] == ["falkordb", "manifest.json"]
    only_vectors = api.get("/backup", params={"include": "qdrant"}, headers=ADMIN_HEADERS)
    assert [n.split("/")[0] for n in sorted(members(only_vectors.content))] == ["manifest.json", "qdrant"]
    for bad in ("", "neo4j", "falkordb,", "falkordb,,qdrant"):
        assert_error(api.get("/backup", params={"include": bad}, headers=ADMIN_HEADERS), 400, "include must be a comma-separated subset of: falkordb,qdrant")


def test_vectors_only_backup_restores_memories_from_the_payload(api, os_client):
    ids = populate(api)
    archive = api.get("/backup", params={"include": "qdrant"}, headers=ADMIN_HEADERS).content
    wipe(api, os_client)
    body = restore(api, archive)
    assert body["memories"]["restored"] == 6 and body["archive"]["points_without_node"] == 6
    got = api.get(f"/memory/{ids['pg']}").json()["memory"]
    assert got["content"].startswith("Chose PostgreSQL") and got["metadata"]["source"] == "slack" and got["importance"] == 0.9


def test_restore_never_moves_a_memory_out_of_another_bank(api):
    # Memory ids are unique in the index, not per bank: restoring a bank's archive into another bank
    # of the same store would move its memories. Each is refused instead, and the first bank is intact.
    # The answer names neither that bank nor anything of it, and says how to copy instead.
    populate(api)
    before = export_bytes(api)
    resp = api.post("/admin/restore", files={"file": ("b.tar.gz", api.get("/backup", headers=ADMIN_HEADERS).content)},
                    headers=ADMIN_HEADERS, params={"bank": "copy"})
    body = resp.json()
    assert resp.status_code == 200 and body["status"] == "partial_success" and body["bank"] == "copy"
    assert body["memories"]["restored"] == 0 and body["memories"]["failed"] == 6
    assert body["edges"] == {"restored": 0, "failed": 3, "duplicates": 0}
    reasons = {f["reason"] for f in body["failures"]}
    assert reasons >= {"this id is already used by a memory of another bank; restore with new ids to copy it "
                       "(POST /admin/restore?new_ids=true, engram restore --new-ids)"}
    assert not any("team" in f["reason"] or "default" in f["reason"] for f in body["failures"])  # no other bank named
    assert "default" not in resp.text
    assert export_bytes(api) == before and export_bytes(api, bank="copy") == b""
    assert_error(api.post("/admin/restore", content=b"x", headers=ADMIN_HEADERS, params={"bank": "no spaces"}), 400, "Invalid bank")


def test_hostile_archives_are_400(api):
    def bad(content: bytes, *fragments: str):
        resp = api.post("/admin/restore", content=content, headers={**ADMIN_HEADERS, "Content-Type": "application/gzip"})
        assert_error(resp, 400, *fragments)

    bad(b"", "no archive")
    bad(b"not a gzip file at all", "not a readable .tar.gz")
    import gzip
    import io
    import tarfile

    def tar(*entries) -> bytes:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as t:
            for info, data in entries:
                t.addfile(info, io.BytesIO(data) if data is not None else None)
        return buf.getvalue()

    link = tarfile.TarInfo("falkordb/link.json.gz")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    bad(tar((link, None)), "link or special file")
    escape = tarfile.TarInfo("../../escape.json.gz")
    escape.size = 2
    bad(tar((escape, b"{}")), "unsafe path")
    empty = tarfile.TarInfo("readme.txt")
    empty.size = 2
    bad(tar((empty, b"hi")), "no falkordb/falkordb_<timestamp>.json.gz")
    broken = tarfile.TarInfo("falkordb/falkordb_20240101_000000.json.gz")
    payload = gzip.compress(b'{"nodes": [{"id": 1, "labels": ["Memory"], "properties": {')
    broken.size = len(payload)
    bad(tar((broken, payload)), "not valid gzip JSON")
    bomb = tarfile.TarInfo("falkordb/falkordb_20240101_000000.json.gz")
    zeros = b"\0" * (80 * 1024 * 1024)
    bomb.size = len(zeros)
    bad(tar((bomb, zeros)), "more than 100 times its", "ratio limit")
    # A damaged member of our own archive: its checksum no longer matches the manifest.
    populate(api)
    found = members(api.get("/backup", headers=ADMIN_HEADERS).content)
    entries = []
    for name, data in found.items():
        if name.startswith("qdrant/"):
            data = gzip.compress(gzip.decompress(data).replace(b"nightly", b"daily!!"))
        info = tarfile.TarInfo(name)
        info.size = len(data)
        entries.append((info, data))
    bad(tar(*entries), "does not match its checksum")


def test_backup_and_restore_act_on_the_bank_of_x_bank(api):
    populate(api)  # the default bank
    team = {"X-Bank": "team-b"}
    resp = api.post("/memory", json={"content": "Team B ships on Thursdays.", "tags": ["team-b"]}, headers=team)
    assert resp.status_code == 201
    mine = resp.json()["memory_id"]
    found = members(api.get("/backup", headers={**ADMIN_HEADERS, **team}).content)
    manifest = json.loads(found["manifest.json"])
    assert manifest["bank"] == "team-b" and manifest["counts"]["memories"] == 1
    assert [n["properties"]["id"] for n in member_json(found, "falkordb/")["nodes"]] == [mine]
    # ?bank= still works, and X-Bank wins as on every other route.
    assert json.loads(members(api.get("/backup", params={"bank": "team-b"}, headers=ADMIN_HEADERS).content)["manifest.json"])["bank"] == "team-b"
    # A restore with X-Bank lands in that bank (new ids: the ids are team-b's already).
    body = api.post("/admin/restore", content=api.get("/backup", headers={**ADMIN_HEADERS, **team}).content, params={"new_ids": "true"},
                    headers={**ADMIN_HEADERS, "X-Bank": "team-c", "Content-Type": "application/gzip"}).json()
    assert body["bank"] == "team-c" and body["memories"]["restored"] == 1, body


def test_restore_with_new_ids_copies_a_bank_in_the_same_store(api, os_client):
    ids = populate(api)
    archive = api.get("/backup", headers=ADMIN_HEADERS).content
    before = stored_state(api, os_client)
    body = post_archive(api, archive, bank="copy", new_ids="true").json()
    assert body["status"] == "success" and body["memories"]["restored"] == 6 and body["edges"]["restored"] == 3, body
    assert body["archive"]["new_ids"] is True
    docs, vectors, edges = stored_state(api, os_client, bank="copy")
    assert not set(docs) & set(before[0]) and len(docs) == 6  # new ids, the original bank untouched
    assert stored_state(api, os_client) == before
    by_content = {d["content"]: (mid, d) for mid, d in docs.items()}
    old_of = {mid: by_content[d["content"]][0] for mid, d in before[0].items()}  # old id -> new id
    # Edges follow their memories; the supersession (old EVOLVED_INTO new) names the new id.
    assert {(e["source_id"], e["type"], e["target_id"]) for e in edges.values()} == {
        (old_of[e["source_id"]], e["type"], old_of[e["target_id"]]) for e in before[2].values()}
    old_copy = docs[old_of[ids["old"]]]
    assert old_copy["superseded_by"] == old_of[ids["new"]] and old_copy["supersessions"][0]["by"] == old_of[ids["new"]]
    assert vectors[old_of[ids["vec"]]] == before[1][ids["vec"]]
    # Each bank answers with its own memories.
    copied = api.get(f"/memory/{old_of[ids['pg']]}", headers={"X-Bank": "copy"})
    assert copied.status_code == 200 and copied.json()["memory"]["content"].startswith("Chose PostgreSQL")
    assert api.get(f"/memory/{old_of[ids['pg']]}").status_code == 404
    # Idempotent: the same archive restored again with new ids writes the same memories.
    again = post_archive(api, archive, bank="copy", new_ids="true").json()
    assert again["memories"]["restored"] == 6 and stored_state(api, os_client, bank="copy")[0].keys() == docs.keys()
