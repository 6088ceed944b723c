"""Restore an Engram or AutoMem backup archive: memory records and edge records for the importer.

Memory stays bounded by a page whatever the archive's size: members are parsed as streams (ijson),
and what must be joined — each memory's vector from the Qdrant member, each relationship's ends
from the FalkorDB nodes — waits in a scratch SQLite file next to the extracted members, not in
Python objects. Order: the points (vectors) into the scratch file, then one record per Memory
node, then the points that had no node (a `include=qdrant` backup), then one edge record per
relationship between two memories of a type the store knows.

What does not map onto memories and edges — AutoMem's Entity, Pattern and MetaMemory nodes and
their REFERENCED_IN, SUMMARIZES, ... relationships, node properties with no field of ours — is
counted in the report, by label, type and property name. (Entities are already there: they are
read from `entity:<type>:<name>` tags and metadata.entities.)

A vector is reused when its size is the configured model's, else the memory is re-embedded. An
Engram archive names the model of its vectors (kept); an AutoMem one does not, so its vectors are
recorded with no model and `POST /admin/reembed` can replace them by the configured model's.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import sqlite3
import tarfile
from array import array
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import ijson

from service.admin import archive
from service.errors import BadRequest
from service.graph.registry import ALL_TYPES

# A legitimate archive barely expands (its members are gzip already); a tar bomb does.
MAX_EXPANSION = 4
EXPANSION_SLACK = 64 * 1024 * 1024
SQL_CHUNK = 500


class ArchiveError(BadRequest):
    pass


@dataclass
class RestoreReport:
    source: str = "automem"  # "engram" when the archive has our manifest
    archive_timestamp: str | None = None
    memory_nodes: int = 0
    points: int = 0
    points_without_node: int = 0
    relationships: int = 0
    vectors_reused: int = 0
    reembedded: int = 0
    skipped_nodes: Counter = field(default_factory=Counter)  # label -> count
    skipped_relationships: Counter = field(default_factory=Counter)  # type -> count
    unmapped_properties: Counter = field(default_factory=Counter)  # property -> memories that had it

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source, "archive_timestamp": self.archive_timestamp, "memory_nodes": self.memory_nodes,
            "points": self.points, "points_without_node": self.points_without_node, "relationships": self.relationships,
            "vectors_reused": self.vectors_reused, "reembedded": self.reembedded,
            "skipped": {"nodes": dict(self.skipped_nodes), "relationships": dict(self.skipped_relationships)},
            "unmapped_properties": dict(self.unmapped_properties),
        }


# --- the archive on disk ----------------------------------------------------------------------------
def extract(path: Path, folder: Path) -> dict[str, Path]:
    """The regular-file members of a tar.gz, written under `folder`; links, devices, absolute paths,
    `..` and archives that expand far beyond their size are refused."""
    budget = path.stat().st_size * MAX_EXPANSION + EXPANSION_SLACK
    out: dict[str, Path] = {}
    try:
        with tarfile.open(path, "r:gz") as tar:
            for member in tar:
                name = PurePosixPath(member.name)
                if member.isdir():
                    continue
                if not member.isfile():
                    raise ArchiveError(f"the archive holds a link or special file ({member.name}); refused")
                if name.is_absolute() or ".." in name.parts or not name.parts:
                    raise ArchiveError(f"unsafe path in the archive: {member.name}")
                budget -= member.size
                if budget < 0:
                    raise ArchiveError("the archive expands to far more than its size; refused")
                target = folder.joinpath(*name.parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(member)
                with source, open(target, "wb") as fh:  # type: ignore[union-attr]
                    shutil.copyfileobj(source, fh, 1 << 20)
                out[str(name)] = target
    except (tarfile.TarError, EOFError, OSError, gzip.BadGzipFile) as exc:
        raise ArchiveError(f"not a readable .tar.gz backup archive: {exc}") from exc
    return out


def from_directory(folder: Path) -> dict[str, Path]:
    """An AutoMem backup folder (scripts/backup_automem.py): falkordb/*.json.gz, qdrant/*.json.gz."""
    return {str(p.relative_to(folder)): p for p in folder.rglob("*") if p.is_file()}


def _latest(members: dict[str, Path], service: str) -> Path | None:
    names = sorted(n for n in members if n.startswith(f"{service}/{service}_") and n.endswith(".json.gz"))
    return members[names[-1]] if names else None


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify(members: dict[str, Path]) -> dict | None:
    """Our manifest, with every member's checksum checked; None for an archive without one (AutoMem's)."""
    if archive.MANIFEST not in members:
        return None
    try:
        manifest = json.loads(members[archive.MANIFEST].read_text())
    except (ValueError, OSError) as exc:
        raise ArchiveError(f"unreadable {archive.MANIFEST}: {exc}") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != archive.FORMAT:
        return None
    for name, info in (manifest.get("members") or {}).items():
        if name not in members:
            raise ArchiveError(f"the archive lacks {name}, which its manifest lists")
        if sha256(members[name]) != info.get("sha256"):
            raise ArchiveError(f"{name} does not match its checksum in the manifest: the archive is damaged")
    return manifest


def _items(path: Path, prefix: str) -> Iterator[Any]:
    try:
        with gzip.open(path, "rb") as fh:
            yield from ijson.items(fh, prefix, use_float=True)
    except (ijson.JSONError, OSError, EOFError, gzip.BadGzipFile) as exc:
        raise ArchiveError(f"{path.name} is not valid gzip JSON: {exc}") from exc


def _count(path: Path, prefix: str) -> int:
    n = 0
    try:
        with gzip.open(path, "rb") as fh:
            for p, event, _ in ijson.parse(fh):
                if p == prefix and event in ("start_map", "start_array", "string", "number", "null", "boolean"):
                    n += 1
    except (ijson.JSONError, OSError, EOFError, gzip.BadGzipFile) as exc:
        raise ArchiveError(f"{path.name} is not valid gzip JSON: {exc}") from exc
    return n


def _header(path: Path, key: str) -> Any:
    """A top-level scalar (timestamp) without reading the rest."""
    try:
        with gzip.open(path, "rb") as fh:
            for p, event, value in ijson.parse(fh):
                if p == key and event in ("string", "number"):
                    return value
                if p in ("nodes", "points", "relationships"):
                    return None
    except (ijson.JSONError, OSError, EOFError, gzip.BadGzipFile):
        return None
    return None


# --- records --------------------------------------------------------------------------------------
class ArchiveReader:
    """The records of one archive (members already on disk), in the importer's (line, record) form."""

    def __init__(self, members: dict[str, Path], scratch: Path, *, fields: frozenset[str], dimension: int):
        self.falkordb = _latest(members, "falkordb")
        self.qdrant = _latest(members, "qdrant")
        if self.falkordb is None and self.qdrant is None:
            raise ArchiveError("no falkordb/falkordb_<timestamp>.json.gz or qdrant/qdrant_<timestamp>.json.gz in the archive")
        self.manifest = verify(members)
        self.fields = fields
        self.dimension = dimension
        self.report = RestoreReport(source="engram" if self.manifest else "automem")
        self.report.archive_timestamp = _header(self.falkordb or self.qdrant, "timestamp")  # type: ignore[arg-type]
        self.db = sqlite3.connect(scratch / "restore.sqlite", check_same_thread=False)
        self.db.executescript(
            "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
            "CREATE TABLE points (id TEXT PRIMARY KEY, vector BLOB, payload TEXT, used INTEGER DEFAULT 0);"
            "CREATE TABLE nodes (n INTEGER PRIMARY KEY, id TEXT);"
        )
        self._load_points()
        self.total = (_count(self.falkordb, "nodes.item") + _count(self.falkordb, "relationships.item")) if self.falkordb else 0
        self.total += self.report.points if not self.falkordb else 0

    def close(self) -> None:
        self.db.close()

    def _load_points(self) -> None:
        if self.qdrant is None:
            return
        rows = []
        for p in _items(self.qdrant, "points.item"):
            if not isinstance(p, dict) or p.get("id") is None:
                continue
            vector = archive.vector_of(p.get("vector"))
            rows.append((str(p["id"]), vector.tobytes() if vector is not None else None, json.dumps(p.get("payload") or {})))
            if len(rows) >= SQL_CHUNK:
                self._insert_points(rows)
        self._insert_points(rows)

    def _insert_points(self, rows: list) -> None:
        self.db.executemany("INSERT OR REPLACE INTO points (id, vector, payload) VALUES (?, ?, ?)", rows)
        self.report.points += len(rows)
        rows.clear()

    def _point(self, memory_id: str) -> tuple[list[float] | None, dict] | None:
        row = self.db.execute("SELECT vector, payload FROM points WHERE id = ?", (memory_id,)).fetchone()
        if row is None:
            return None
        self.db.execute("UPDATE points SET used = 1 WHERE id = ?", (memory_id,))
        return (array("f", row[0]).tolist() if row[0] else None), json.loads(row[1])

    def _with_vector(self, record: dict, vector: list[float] | None) -> dict:
        if vector is not None and len(vector) == self.dimension:
            record["embedding"] = vector
            if self.manifest is None:
                record.pop("embedding_model", None)  # AutoMem does not say which model made it
            self.report.vectors_reused += 1
        else:
            record.pop("embedding", None)
            record.pop("embedding_model", None)
            self.report.reembedded += 1
        return record

    def records(self) -> Iterator[tuple[int, Any]]:
        n = 0
        for n, record in enumerate(self._memory_records(), start=1):
            yield n, record
        for n, record in enumerate(self._edge_records(), start=n + 1):
            yield n, record

    def _memory_records(self) -> Iterator[dict]:
        if self.falkordb is not None:
            nodes = []
            for node in _items(self.falkordb, "nodes.item"):
                if not isinstance(node, dict):
                    continue
                labels = [str(label) for label in node.get("labels") or []]
                props = node.get("properties") if isinstance(node.get("properties"), dict) else {}
                if archive.MEMORY_LABEL not in labels or not props.get("id"):
                    self.report.skipped_nodes[labels[0] if labels else "(no label)"] += 1
                    continue
                self.report.memory_nodes += 1
                memory_id = str(props["id"])
                if isinstance(node.get("id"), int):
                    nodes.append((node["id"], memory_id))
                    if len(nodes) >= SQL_CHUNK:
                        self.db.executemany("INSERT OR REPLACE INTO nodes (n, id) VALUES (?, ?)", nodes)
                        nodes.clear()
                found = self._point(memory_id)
                record, unmapped = archive.memory_record(props, self.fields, found[1] if found else None)
                self.report.unmapped_properties.update(unmapped)
                yield self._with_vector(record, found[0] if found else None)
            self.db.executemany("INSERT OR REPLACE INTO nodes (n, id) VALUES (?, ?)", nodes)
        # Points without a node: a qdrant-only backup, or a graph that lost some memories.
        for memory_id, vector, payload in self.db.execute("SELECT id, vector, payload FROM points WHERE used = 0 ORDER BY id").fetchall():
            self.report.points_without_node += 1
            record, unmapped = archive.memory_record({"id": memory_id}, self.fields, json.loads(payload))
            self.report.unmapped_properties.update(unmapped)
            yield self._with_vector(record, array("f", vector).tolist() if vector else None)

    def _edge_records(self) -> Iterator[dict]:
        if self.falkordb is None:
            return
        pending: list[dict] = []
        for rel in _items(self.falkordb, "relationships.item"):
            if isinstance(rel, dict):
                pending.append(rel)
            if len(pending) >= SQL_CHUNK:
                yield from self._map_ends(pending)
                pending = []
        yield from self._map_ends(pending)

    def _map_ends(self, rels: list[dict]) -> Iterator[dict]:
        ends = {x for r in rels for x in (r.get("source_id"), r.get("target_id")) if isinstance(x, int)}
        known: dict[int, str] = {}
        ends_list = sorted(ends)
        for start in range(0, len(ends_list), SQL_CHUNK):
            chunk = ends_list[start : start + SQL_CHUNK]
            marks = ",".join("?" * len(chunk))
            known.update(self.db.execute(f"SELECT n, id FROM nodes WHERE n IN ({marks})", chunk).fetchall())
        for rel in rels:
            rel_type = str(rel.get("type") or "")
            source, target = known.get(rel.get("source_id")), known.get(rel.get("target_id"))
            if source is None or target is None or rel_type.upper() not in ALL_TYPES:
                self.report.skipped_relationships[rel_type or "(no type)"] += 1
                continue
            self.report.relationships += 1
            yield archive.edge_record(source, target, rel)
