"""Write a backup archive in AutoMem's layout (service/admin/archive.py), memory bounded by a page.

One pass over the bank's memories from a point in time writes both members at once — each memory
as a Memory node into the FalkorDB member and, with its vector, as a point into the Qdrant member
— then one pass over the edges appends the relationships. Members are gzip files in a scratch
folder (a tar header needs the member's size before its bytes); a node's integer id is looked up
from a scratch SQLite table, not a dict, so nothing grows with the store but the disk files.
`tar_gz` then streams the members as one .tar.gz without building it in memory.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import sqlite3
import tarfile
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO

import orjson
from opensearchpy import OpenSearch

from service import __version__
from service.admin import archive
from service.storage import transfer

# The members are gzip JSON already; the outer gzip of the tar only needs to be cheap.
MEMBER_LEVEL = 6
OUTER_LEVEL = 1
CHUNK = 1 << 20
SQL_CHUNK = 500
EDGE_ORDER = transfer.EDGE_ORDER


@dataclass
class Member:
    name: str
    path: Path
    sha256: str = ""
    size: int = 0


@dataclass
class BackupResult:
    timestamp: str
    members: list[Member] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


class _JsonMember:
    """A gzip JSON object written piece by piece: `{head..., "<list>": [item, item, ...], ...}`."""

    def __init__(self, path: Path):
        self.path = path
        self.fh: BinaryIO = gzip.open(path, "wb", compresslevel=MEMBER_LEVEL)  # type: ignore[assignment]
        self._first = True

    def open_object(self, head: dict[str, Any], list_name: str) -> None:
        self.fh.write(orjson.dumps(head)[:-1] + b"," + orjson.dumps(list_name) + b":[")
        self._first = True

    def next_list(self, list_name: str) -> None:
        self.fh.write(b"]," + orjson.dumps(list_name) + b":[")
        self._first = True

    def item(self, value: Any) -> None:
        self.fh.write((b"" if self._first else b",") + orjson.dumps(value))
        self._first = False

    def close_object(self, tail: dict[str, Any]) -> None:
        self.fh.write(b"]," + orjson.dumps(tail)[1:])
        self.fh.close()


def write_backup(
    client: OpenSearch, *, memories_alias: str, edges_alias: str, bank: str, folder: Path, include: tuple[str, ...],
    model: str, vector_size: int, now: datetime | None = None, progress: Callable[[int], None] | None = None,
) -> BackupResult:
    """The members and manifest of one backup of `bank`, written into `folder`."""
    started = time.monotonic()
    ts = archive.timestamp(now or datetime.now(timezone.utc))
    result = BackupResult(ts)
    graph = "falkordb" in include
    vectors = "qdrant" in include
    nodes = _JsonMember(folder / "falkordb.json.gz") if graph else None
    points = _JsonMember(folder / "qdrant.json.gz") if vectors else None
    if nodes:
        nodes.open_object({"timestamp": ts, "graph_name": memories_alias}, "nodes")
    if points:
        points.open_object({"timestamp": ts, "collection_name": memories_alias}, "points")
    ids = sqlite3.connect(folder / "ids.sqlite")
    ids.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; CREATE TABLE ids (id TEXT PRIMARY KEY, n INTEGER);")
    bank_query = {"bool": {"filter": [{"term": {"bank": bank}}]}}
    n_nodes = n_points = n_rels = dangling = 0
    for page in transfer.scan(client, memories_alias, query=bank_query, vectors=vectors):
        if nodes:
            rows = []
            for doc in page:
                nodes.item({"id": n_nodes, "labels": [archive.MEMORY_LABEL], "properties": archive.node_properties(doc.id, doc.source)})
                rows.append((doc.id, n_nodes))
                n_nodes += 1
            ids.executemany("INSERT INTO ids VALUES (?, ?)", rows)
        if points:
            for doc in page:
                if doc.vector is not None:
                    points.item(archive.point(doc.id, doc.source, doc.vector))
                    n_points += 1
        if progress:
            progress(len(page))
    if nodes:
        nodes.next_list("relationships")
        for page in transfer.scan(client, edges_alias, query=bank_query, sort=EDGE_ORDER):
            known = _node_numbers(ids, {x for d in page for x in (d.source["source_id"], d.source["target_id"])})
            for doc in page:
                a, b = known.get(doc.source["source_id"]), known.get(doc.source["target_id"])
                if a is None or b is None:
                    dangling += 1  # an edge whose memory is gone: nothing to attach it to
                    continue
                nodes.item(archive.relationship(a, b, doc.source))
                n_rels += 1
        nodes.close_object({"stats": {"node_count": n_nodes, "relationship_count": n_rels}})
        result.members.append(Member(archive.member_name("falkordb", ts), nodes.path))
    if points:
        points.close_object({"stats": {"points_count": n_points, "vector_size": vector_size}})
        result.members.append(Member(archive.member_name("qdrant", ts), points.path))
    ids.close()
    (folder / "ids.sqlite").unlink(missing_ok=True)
    for member in result.members:
        member.sha256, member.size = _digest(member.path), member.path.stat().st_size
    result.counts = {"memories": n_nodes if graph else n_points, "nodes": n_nodes, "relationships": n_rels, "points": n_points,
                     "dangling_edges": dangling}
    manifest = {
        "format": archive.FORMAT, "format_version": archive.FORMAT_VERSION, "engram_version": __version__, "timestamp": ts,
        "bank": bank, "include": list(include), "model": model, "vector_size": vector_size, "counts": result.counts,
        "members": {m.name: {"sha256": m.sha256, "bytes": m.size} for m in result.members},
    }
    path = folder / archive.MANIFEST
    path.write_text(json.dumps(manifest, indent=2))
    result.members.append(Member(archive.MANIFEST, path, _digest(path), path.stat().st_size))
    result.seconds = time.monotonic() - started
    return result


def _node_numbers(db: sqlite3.Connection, memory_ids: set[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    wanted = sorted(memory_ids)
    for start in range(0, len(wanted), SQL_CHUNK):
        chunk = wanted[start : start + SQL_CHUNK]
        found.update(db.execute(f"SELECT id, n FROM ids WHERE id IN ({','.join('?' * len(chunk))})", chunk).fetchall())
    return found


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def tar_gz(members: list[Member], *, mtime: int | None = None) -> Iterator[bytes]:
    """The members as a .tar.gz stream (ustar headers, 512-byte padding, two zero blocks at the end)."""
    comp = zlib.compressobj(OUTER_LEVEL, zlib.DEFLATED, 16 + zlib.MAX_WBITS)  # 16+: a gzip wrapper
    when = int(time.time()) if mtime is None else mtime
    for member in members:
        info = tarfile.TarInfo(member.name)
        info.size, info.mtime, info.mode = member.path.stat().st_size, when, 0o644
        yield comp.compress(info.tobuf(format=tarfile.USTAR_FORMAT))
        with open(member.path, "rb") as fh:
            for block in iter(lambda: fh.read(CHUNK), b""):
                out = comp.compress(block)
                if out:
                    yield out
        yield comp.compress(b"\0" * (-info.size % tarfile.BLOCKSIZE))
    yield comp.compress(b"\0" * (2 * tarfile.BLOCKSIZE)) + comp.flush()
