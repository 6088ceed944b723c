"""Helpers of the admin and data-lifecycle tests: a second embedding model, a populated store, exports."""

from __future__ import annotations

import hashlib
import re

import numpy as np

from tests.conftest import ADMIN
from tests.integration.support import link, mem

ADMIN_HEADERS = {"X-Admin-Token": ADMIN}


class HashEmbedder:
    """A small deterministic embedding model of another vector size: word hashes into `dimension`
    buckets, unit length. Only what the service needs (no model files, no language model)."""

    backend = "hash"

    def __init__(self, dimension: int = 8, name: str = "hash-8"):
        self.dimension = dimension
        self.short_name = self.model_name = name

    def encode(self, texts) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[row, int(hashlib.sha1(word.encode()).hexdigest(), 16) % self.dimension] += 1.0
            out[row, 0] += 1e-3  # never the zero vector
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def embed_documents(self, texts) -> list[list[float]]:
        return self.encode(list(texts)).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def unit(i: int, dimension: int = 384) -> list[float]:
    return [1.0 if j == i else 0.0 for j in range(dimension)]


def populate(api) -> dict[str, str]:
    """Memories (model-embedded and with given vectors, every lifecycle field), edges and a
    supersession chain: the store the lifecycle tests move around."""
    ids = {
        "pg": mem(api, "Chose PostgreSQL over MongoDB for the primary database.", tags=["project:alpha:db", "decision"],
                  importance=0.9, metadata={"source": "slack", "entities": {"tools": ["PostgreSQL"]}}, type="Decision",
                  timestamp="2024-03-01T10:00:00Z"),
        "backup": mem(api, "The nightly backup moved to 03:00 UTC.", tags=["slack:channel:ops"], importance=0.6,
                      timestamp="2024-04-02T08:30:00+00:00", t_valid="2024-04-02T00:00:00Z"),
        "old": mem(api, "Deployments run on Fridays.", tags=["ops:deploy"], timestamp="2024-01-05T09:00:00Z"),
        "new": mem(api, "Deployments run on Tuesdays now.", tags=["ops:deploy"], timestamp="2024-05-05T09:00:00Z"),
        "vec": mem(api, "A memory stored with its own vector.", embedding=unit(3), relevance_score=0.4, confidence=0.7,
                   metadata={"nested": {"deep": [1, 2, {"x": "y"}]}}, last_accessed="2024-06-01T00:00:00Z"),
        "gone": mem(api, "An archived note about the old wiki.", archived=True, t_invalid="2024-02-01T00:00:00Z"),
    }
    link(api, ids["pg"], ids["backup"], "RELATES_TO", 0.4)
    link(api, ids["old"], ids["new"], "EVOLVED_INTO", 0.9, reason="schedule changed")
    link(api, ids["vec"], ids["pg"], "DERIVED_FROM", 0.7, transformation="summary")
    return ids


def export_bytes(api, *, bank: str | None = None, **kwargs) -> bytes:
    from service.admin.export import export_lines

    settings = api.app.state.settings
    return b"".join(export_lines(api.app.state.client, memories_alias=settings.memories_alias, edges_alias=settings.edges_alias,
                                 bank=bank or settings.default_bank, **kwargs))


def wipe(api, os_client) -> None:
    """Delete every memory and edge of the app's bank (the indices stay)."""
    settings = api.app.state.settings
    for alias in (settings.memories_alias, settings.edges_alias):
        os_client.indices.refresh(index=alias)
        os_client.delete_by_query(index=alias, body={"query": {"term": {"bank": settings.default_bank}}}, refresh=True)
        assert os_client.count(index=alias, body={"query": {"term": {"bank": settings.default_bank}}})["count"] == 0


def members(archive: bytes) -> dict[str, bytes]:
    import io
    import tarfile

    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def member_json(found: dict[str, bytes], prefix: str) -> dict:
    import gzip
    import json

    (name,) = [n for n in found if n.startswith(prefix)]
    return json.loads(gzip.decompress(found[name]))


def tar_gz(entries: dict[str, bytes]) -> bytes:
    """A .tar.gz of these members, in this order."""
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in entries.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def automem_layout(nodes: list[dict], relationships: list[dict] = (), points: list[dict] | None = None, ts: str = "20251019_085625",
                   **extra: bytes) -> bytes:
    """An AutoMem archive (no manifest) of these nodes, relationships and points, as Python's json
    writes them (ensure_ascii: a lone surrogate becomes its escape, as in AutoMem's backups)."""
    import gzip
    import json

    graph = {"timestamp": ts, "graph_name": "memories", "nodes": nodes, "relationships": list(relationships),
             "stats": {"node_count": len(nodes), "relationship_count": len(relationships)}}
    entries = {f"falkordb/falkordb_{ts}.json.gz": gzip.compress(json.dumps(graph).encode())}
    if points is not None:
        vectors = {"timestamp": ts, "collection_name": "memories", "points": points, "stats": {"points_count": len(points)}}
        entries[f"qdrant/qdrant_{ts}.json.gz"] = gzip.compress(json.dumps(vectors).encode())
    return tar_gz({**entries, **extra})


def node(n: int, memory_id: str, content: str, **props) -> dict:
    return {"id": n, "labels": ["Memory"], "properties": {"id": memory_id, "content": content, **props}}


def post_archive(api, archive: bytes, **params):
    return api.post("/admin/restore", content=archive, headers={**ADMIN_HEADERS, "Content-Type": "application/gzip"}, params=params)


def stored_state(api, os_client, bank: str | None = None) -> tuple[dict, dict, dict]:
    """Every memory of the bank as stored (whole _source, empty values left out), its vector, and every
    edge: what a round trip must give back."""
    settings = api.app.state.settings
    bank = bank or settings.default_bank
    query = {"term": {"bank": bank}}
    for alias in (settings.memories_alias, settings.edges_alias):
        os_client.indices.refresh(index=alias)
    from service.storage import transfer

    docs, vectors = {}, {}
    for page in transfer.scan(os_client, settings.memories_alias, query=query, vectors=True):
        for doc in page:
            docs[doc.id] = {k: v for k, v in doc.source.items() if v is not None}
            vectors[doc.id] = doc.vector
    edges = os_client.search(index=settings.edges_alias, body={"size": 10_000, "query": query})["hits"]["hits"]
    return docs, vectors, {h["_id"]: h["_source"] for h in edges}
