"""An AutoMem backup archive, built here from AutoMem's layout (automem/backup.py, scripts/backup_automem.py:
indent=2 JSON, metadata as a JSON string, FalkorDB integer node ids), restores with every field."""

from __future__ import annotations

import gzip
import io
import json
import tarfile

import pytest

from service.admin.archive import member_name
from tests.integration.admin_support import ADMIN_HEADERS, unit
from tests.integration.support import fast_api, recall

TS = "20251019_085625"
A, B, C, D, E = (f"00000000-0000-4000-8000-00000000000{i}" for i in range(1, 6))


def automem_memory(n: int, memory_id: str, content: str, **props) -> dict:
    base = {
        "id": memory_id, "content": content, "timestamp": "2025-10-01T12:00:00+00:00", "importance": 0.5, "tags": [],
        "tag_prefixes": [], "type": "Context", "confidence": 0.6, "t_valid": "2025-10-01T12:00:00+00:00", "t_invalid": None,
        "updated_at": "2025-10-01T12:00:00+00:00", "last_accessed": "2025-10-02T08:00:00+00:00", "metadata": "{}", "processed": True,
    }
    return {"id": n, "labels": ["Memory"], "properties": {**base, **props}}


def automem_archive() -> bytes:
    nodes = [
        automem_memory(0, A, "Chose PostgreSQL over MongoDB for billing.", tags=["project:billing", "entity:people:dana-smith"],
                       tag_prefixes=["project", "project:billing"], importance=0.9, type="Decision", confidence=0.95,
                       metadata=json.dumps({"source": "slack", "channel": "eng"}), relevance_score=0.8, enriched=True,
                       summary="db choice"),
        automem_memory(1, B, "Deploys happen on Fridays.", tags=["ops"], timestamp="2025-09-01T09:00:00+00:00",
                       updated_at="2025-09-02T09:00:00+00:00"),
        automem_memory(2, C, "Deploys happen on Tuesdays now.", tags=["ops"], timestamp="2025-10-03T09:00:00+00:00",
                       t_invalid="2099-10-03T09:00:00+00:00"),
        automem_memory(3, D, "A memory whose vector came from a 768-dimensional model.", metadata="not json"),
        {"id": 4, "labels": ["Entity"], "properties": {"id": "entity:people:dana-smith", "slug": "dana-smith", "category": "people", "name": "Dana Smith"}},
        {"id": 5, "labels": ["Pattern"], "properties": {"id": "pattern-1", "description": "database decisions"}},
        {"id": 6, "labels": ["MetaMemory"], "properties": {"id": "meta-1", "content": "A summary of ops memories"}},
    ]
    relationships = [
        {"source_id": 0, "type": "RELATES_TO", "target_id": 1, "properties": {"strength": 0.4, "updated_at": "2025-10-05T10:00:00+00:00"}},
        {"source_id": 1, "type": "EVOLVED_INTO", "target_id": 2, "properties": {"strength": 0.9, "updated_at": "2025-10-03T09:30:00+00:00", "reason": "new schedule"}},
        {"source_id": 4, "type": "REFERENCED_IN", "target_id": 0, "properties": {}},
        {"source_id": 6, "type": "SUMMARIZES", "target_id": 1, "properties": {}},
        {"source_id": 6, "type": "SUMMARIZES", "target_id": 2, "properties": {}},
        {"source_id": 0, "type": "EXEMPLIFIES", "target_id": 5, "properties": {"strength": 0.7}},
        {"source_id": 0, "type": "SIMILAR_TO", "target_id": 3, "properties": {"strength": 0.55, "updated_at": "2025-10-06T00:00:00+00:00"}},
    ]
    graph = {"timestamp": TS, "graph_name": "memories", "nodes": nodes, "relationships": relationships,
             "stats": {"node_count": len(nodes), "relationship_count": len(relationships)}}
    points = [
        {"id": A, "vector": unit(7), "payload": {"content": "Chose PostgreSQL over MongoDB for billing.", "tags": ["project:billing"],
                                                "metadata": {"source": "slack", "channel": "eng"}}},
        {"id": B, "vector": unit(8), "payload": {"content": "Deploys happen on Fridays."}},
        {"id": D, "vector": [0.01] * 768, "payload": {"content": "A memory whose vector came from a 768-dimensional model."}},
        {"id": E, "vector": unit(9), "payload": {"content": "Only in Qdrant: the graph lost this one.", "tags": ["orphan"],
                                                "importance": 0.3, "timestamp": "2025-08-08T08:08:08+00:00", "type": "Insight",
                                                "confidence": 0.7, "metadata": {"k": "v"}}},
    ]
    vectors = {"timestamp": TS, "collection_name": "memories", "points": points, "stats": {"points_count": len(points), "vector_size": 384}}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for service, data in (("falkordb", graph), ("qdrant", vectors)):
            raw = gzip.compress(json.dumps(data, indent=2, default=str).encode())
            info = tarfile.TarInfo(member_name(service, TS))
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))
    return buf.getvalue()


def test_automem_archive_restores_with_every_field(make_client, embedder):
    api = fast_api(make_client)
    resp = api.post("/admin/restore", files={"file": ("automem-backup.tar.gz", automem_archive())}, headers=ADMIN_HEADERS)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["status"] == "success"
    # D's 768 floats and C, which has no point, are re-embedded.
    assert body["memories"] == {"restored": 5, "failed": 0, "vectors_reused": 3, "reembedded": 2, "duplicates": 0, "vectors_unusable": 0}
    assert body["edges"] == {"restored": 3, "failed": 0, "duplicates": 0}
    about = body["archive"]
    assert about["source"] == "automem" and about["archive_timestamp"] == TS and about["points_without_node"] == 1
    assert about["skipped"] == {"nodes": {"Entity": 1, "Pattern": 1, "MetaMemory": 1},
                                "relationships": {"REFERENCED_IN": 1, "SUMMARIZES": 2, "EXEMPLIFIES": 1}}
    assert about["unmapped_properties"] == {"processed": 4, "enriched": 1, "summary": 1, "metadata": 1}

    a = api.get(f"/memory/{A}").json()["memory"]
    assert {k: a[k] for k in ("content", "tags", "importance", "type", "confidence", "timestamp", "updated_at", "last_accessed",
                              "t_valid", "metadata", "relevance_score", "archived")} == {
        "content": "Chose PostgreSQL over MongoDB for billing.", "tags": ["project:billing", "entity:people:dana-smith"],
        "importance": 0.9, "type": "Decision", "confidence": 0.95, "timestamp": "2025-10-01T12:00:00+00:00",
        "updated_at": "2025-10-01T12:00:00+00:00", "last_accessed": "2025-10-02T08:00:00+00:00",
        "t_valid": "2025-10-01T12:00:00+00:00", "metadata": {"source": "slack", "channel": "eng"}, "relevance_score": 0.8, "archived": False,
    }
    assert a["tag_prefixes"] == ["project", "project:billing", "entity", "entity:people", "entity:people:dana-smith"]
    assert a["embedding_model"] is None  # AutoMem does not say which model made its vectors: reembed will replace them
    c = api.get(f"/memory/{C}").json()["memory"]
    assert c["t_invalid"] == "2099-10-03T09:00:00+00:00" and c["embedding_model"] == api.app.state.embedder.short_name
    assert api.get(f"/memory/{D}").json()["memory"]["metadata"] == {}  # unparseable metadata, counted above
    e = api.get(f"/memory/{E}").json()["memory"]
    assert (e["content"], e["tags"], e["importance"], e["type"], e["metadata"]) == ("Only in Qdrant: the graph lost this one.", ["orphan"], 0.3, "Insight", {"k": "v"})

    store = api.app.state.memories
    vectors = store.vectors("default", [A, B, C, D])
    assert vectors[A][0] == pytest.approx(unit(7)) and vectors[B][0] == pytest.approx(unit(8))
    assert vectors[D][0] == pytest.approx(embedder.embed_query("A memory whose vector came from a 768-dimensional model."), abs=1e-5)
    # The supersession (B EVOLVED_INTO C) is recorded on B, so current-state recall resolves to C.
    b = api.get(f"/memory/{B}").json()["memory"]
    assert b["superseded_by"] == C and b["supersede_type"] == "EVOLVED_INTO"
    top = recall(api, query="which day do deploys happen", limit=3)
    assert C in [r["id"] for r in top["results"]] and B not in [r["id"] for r in top["results"]]
    related = api.get(f"/memories/{A}/related", params={"relationship_types": "RELATES_TO,SIMILAR_TO"}).json()["related_memories"]
    assert {r["id"] for r in related} == {B, D}

    # Idempotent; and POST /admin/reembed then gives AutoMem's vectors the configured model.
    again = api.post("/admin/restore", files={"file": ("a.tar.gz", automem_archive())}, headers=ADMIN_HEADERS).json()
    assert again["memories"]["restored"] == 5 and store.count() == 5
    reembedded = api.post("/admin/reembed", json={}, headers=ADMIN_HEADERS).json()
    assert reembedded["processed"] == 3  # A, B, E: vectors of an unknown model
    assert store.vectors("default", [A])[A][0] == pytest.approx(embedder.embed_query("Chose PostgreSQL over MongoDB for billing."), abs=1e-5)


def test_an_automem_backup_folder_restores_from_the_command_line(make_client, engine_url, tmp_path, capsys):
    from service.cli.main import main

    api = make_client()
    folder = tmp_path / "backups"
    with tarfile.open(fileobj=io.BytesIO(automem_archive()), mode="r:gz") as tar:
        tar.extractall(folder)
    prefix = api.app.state.settings.index_prefix
    code = main(["restore", str(folder), "--url", engine_url, "--prefix", prefix, "--json", "--no-progress"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["memories"]["restored"] == 5 and out["archive"]["source"] == "automem"
    assert api.get(f"/memory/{E}").status_code == 200
