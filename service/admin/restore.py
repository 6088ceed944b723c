"""Restore an Engram or AutoMem backup archive: memory records and edge records for the importer.

Memory stays bounded by a page whatever the archive's size: members are parsed as streams (ijson,
within the bounds of service/admin/expansion.py), and what must be joined — each memory's vector
from the Qdrant member, each relationship's ends from the FalkorDB nodes — waits in a scratch SQLite
file next to the extracted members, not in Python objects. Order: the points (vectors) into the
scratch file, then one record per Memory node, then the points that had no node (a `include=qdrant`
backup), then one edge record per relationship between two memories of a type the store knows.

Counts are of what is restored: a memory id (or an edge: ends and type) that the archive holds twice
is restored once, from its first record, and the others are counted as duplicates. A record that
cannot be stored as it is — a string with a lone surrogate — is a failure naming its field; a vector
that is no vector (all zeros, beyond float32, vanishing) is replaced by the configured model's, and
counted.

What does not map onto memories and edges — AutoMem's Entity, Pattern and MetaMemory nodes and
their REFERENCED_IN, SUMMARIZES, ... relationships, node properties with no field of ours — is
counted in the report, by label, type and property name. (Entities are already there: they are
read from `entity:<type>:<name>` tags and metadata.entities.)

With `new_id` (a restore into another bank of the same store, or a copy of a bank) every memory
gets the id `new_id(old)` and every id a record holds is rewritten the same way (service/memory/codec.remap_ids),
edges' ends too.

A vector is reused when its size is the configured model's, else the memory is re-embedded. An
Engram archive names the model of its vectors (kept); an AutoMem one does not, so its vectors are
recorded with no model and `POST /admin/reembed` can replace them by the configured model's.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import tarfile
import uuid
from array import array
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from service.admin import archive
from service.admin.expansion import ArchiveError, Budget, JsonMember, NeedsExact
from service.admin.importing import RecordFailure
from service.graph.registry import ALL_TYPES
from service.memory import codec

SQL_CHUNK = 500
# An uploaded archive may be this large (POST /admin/restore writes it to disk as it arrives; the
# request guard lets this route's body pass MAX_REQUEST_BYTES up to it). A 100k-memory backup is ~133 MB.
MAX_ARCHIVE_BYTES = 16 * 1024**3
# New ids are uuid5(bank, old id): a restore with new ids run twice into one bank writes the same memories.
NEW_ID_NAMESPACE = uuid.UUID("2b7f0c1e-5a43-4e8e-9d61-0c9b3f4a7e25")
# Our manifest is a few hundred bytes; anything far larger is not one.
MAX_MANIFEST_BYTES = 1024 * 1024

__all__ = ["ArchiveError", "ArchiveReader", "RestoreReport", "extract", "from_directory", "new_ids_in", "verify"]


@dataclass
class RestoreReport:
    source: str = "automem"  # "engram" when the archive has our manifest
    archive_timestamp: str | None = None
    memory_nodes: int = 0
    points: int = 0
    points_without_node: int = 0
    relationships: int = 0
    vectors_reused: int = 0  # records that came with a usable vector of the model's size
    reembedded: int = 0  # records whose vector was missing, of another size, or unusable
    vectors_unusable: int = 0  # of those: all zeros, beyond float32 or vanishing (re-embedded)
    new_ids: bool = False
    duplicates: Counter = field(default_factory=Counter)  # memories / points / relationships held twice
    skipped_nodes: Counter = field(default_factory=Counter)  # label -> count
    skipped_relationships: Counter = field(default_factory=Counter)  # type -> count
    unmapped_properties: Counter = field(default_factory=Counter)  # property -> memories that had it

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source, "archive_timestamp": self.archive_timestamp, "memory_nodes": self.memory_nodes,
            "points": self.points, "points_without_node": self.points_without_node, "relationships": self.relationships,
            "vectors_reused": self.vectors_reused, "reembedded": self.reembedded, "vectors_unusable": self.vectors_unusable,
            "new_ids": self.new_ids,
            "duplicates": {k: self.duplicates.get(k, 0) for k in ("memories", "points", "relationships")},
            "skipped": {"nodes": dict(self.skipped_nodes), "relationships": dict(self.skipped_relationships)},
            "unmapped_properties": dict(self.unmapped_properties),
        }


def new_ids_in(bank: str) -> Callable[[str], str]:
    """The id each archived memory gets in `bank` when it is restored with new ids."""
    return lambda old: str(uuid.uuid5(NEW_ID_NAMESPACE, f"{bank}\n{old}"))


# --- the archive on disk ----------------------------------------------------------------------------
def extract(path: Path, folder: Path, budget: Budget | None = None) -> dict[str, Path]:
    """The regular-file members of a tar.gz, written under `folder`; links, devices, absolute paths,
    `..` and archives that expand beyond the budget's bounds are refused."""
    budget = budget or Budget()
    size = path.stat().st_size
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
                budget.extracted(member.name, member.size, size)
                target = folder.joinpath(*name.parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(member)
                with source, open(target, "wb") as fh:  # type: ignore[union-attr]
                    shutil.copyfileobj(source, fh, 1 << 20)
                out[str(name)] = target
    except (tarfile.TarError, EOFError, OSError) as exc:
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
    path = members[archive.MANIFEST]
    if path.stat().st_size > MAX_MANIFEST_BYTES:
        raise ArchiveError(f"{archive.MANIFEST} is larger than {MAX_MANIFEST_BYTES:,} bytes: not a manifest of ours")
    try:
        manifest = json.loads(path.read_text())
    except (ValueError, OSError) as exc:
        raise ArchiveError(f"unreadable {archive.MANIFEST}: {exc}") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != archive.FORMAT:
        return None
    for name, info in (manifest.get("members") or {}).items():
        if name not in members:
            raise ArchiveError(f"the archive lacks {name}, which its manifest lists")
        if sha256(members[name]) != (info or {}).get("sha256"):
            raise ArchiveError(f"{name} does not match its checksum in the manifest: the archive is damaged")
    return manifest


# --- records --------------------------------------------------------------------------------------
class ArchiveReader:
    """The records of one archive (members already on disk), in the importer's (line, record) form;
    a record that cannot be restored as it is comes as a RecordFailure in its place."""

    def __init__(self, members: dict[str, Path], scratch: Path, *, fields: frozenset[str], dimension: int,
                 budget: Budget | None = None, new_id: Callable[[str], str] | None = None):
        self.budget = budget or Budget()
        falkordb, qdrant = _latest(members, "falkordb"), _latest(members, "qdrant")
        if falkordb is None and qdrant is None:
            raise ArchiveError("no falkordb/falkordb_<timestamp>.json.gz or qdrant/qdrant_<timestamp>.json.gz in the archive")
        self.falkordb = JsonMember(falkordb, self.budget) if falkordb else None
        self.qdrant = JsonMember(qdrant, self.budget) if qdrant else None
        self.manifest = verify(members)
        self.fields = fields
        self.dimension = dimension
        self.new_id = new_id
        self.report = RestoreReport(source="engram" if self.manifest else "automem", new_ids=new_id is not None)
        self.report.archive_timestamp = (self.falkordb or self.qdrant).header("timestamp")  # type: ignore[union-attr]
        self.db = sqlite3.connect(scratch / "restore.sqlite", check_same_thread=False)
        self.db.executescript(
            "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
            "CREATE TABLE points (id TEXT PRIMARY KEY, vector BLOB, payload TEXT, used INTEGER DEFAULT 0);"
            "CREATE TABLE nodes (n INTEGER PRIMARY KEY, id TEXT);"
            "CREATE TABLE seen (id TEXT PRIMARY KEY);"
        )
        self._load_points()
        self.total = 0
        if self.falkordb:
            counts = self.falkordb.count("nodes.item", "relationships.item")
            self.total = counts["nodes.item"] + counts["relationships.item"]
        else:
            self.total = self.report.points

    def close(self) -> None:
        self.db.close()

    # --- the points ---------------------------------------------------------------------------------
    def _load_points(self) -> None:
        if self.qdrant is None:
            return
        try:
            self._insert_points(self.qdrant.items("points.item"))
        except NeedsExact:  # strings with a lone surrogate: read exactly, so their memories are told apart
            self.db.execute("DELETE FROM points")
            self.report.points = self.report.duplicates["points"] = 0
            self._insert_points(self.qdrant.items("points.item"))

    def _insert_points(self, points: Iterator[Any]) -> None:
        rows: list[tuple] = []
        for p in points:
            if not isinstance(p, dict) or p.get("id") is None:
                continue
            raw = p.get("vector")
            vector = archive.vector_of(raw)
            unusable = vector is None and raw is not None
            payload = p.get("payload") if isinstance(p.get("payload"), dict) else {}
            rows.append((str(p["id"]), vector.tobytes() if vector is not None else (b"" if unusable else None),
                         json.dumps(payload, ensure_ascii=True)))
            if len(rows) >= SQL_CHUNK:
                self._store_points(rows)
        self._store_points(rows)

    def _store_points(self, rows: list) -> None:
        before = self.db.total_changes
        self.db.executemany("INSERT OR IGNORE INTO points (id, vector, payload) VALUES (?, ?, ?)", rows)
        stored = self.db.total_changes - before
        self.report.points += stored
        self.report.duplicates["points"] += len(rows) - stored
        rows.clear()

    def _point(self, memory_id: str) -> tuple[bytes | None, dict] | None:
        row = self.db.execute("SELECT vector, payload FROM points WHERE id = ?", (memory_id,)).fetchone()
        if row is None:
            return None
        self.db.execute("UPDATE points SET used = 1 WHERE id = ?", (memory_id,))
        return row[0], json.loads(row[1])

    def _with_vector(self, record: dict, blob: bytes | None) -> dict:
        """b"" marks a vector the point had but that is no vector (zeros, beyond float32, vanishing)."""
        vector = array("f", blob).tolist() if blob else None
        if vector is not None and len(vector) == self.dimension:
            record["embedding"] = vector
            if self.manifest is None:
                record.pop("embedding_model", None)  # AutoMem does not say which model made it
            self.report.vectors_reused += 1
        else:
            record.pop("embedding", None)
            record.pop("embedding_model", None)
            self.report.reembedded += 1
            self.report.vectors_unusable += blob == b""
        return record

    # --- records --------------------------------------------------------------------------------------
    def records(self) -> Iterator[tuple[int, Any]]:
        n = 0
        for n, record in enumerate(self._memory_records(), start=1):
            yield n, record
        for n, record in enumerate(self._edge_records(), start=n + 1):
            yield n, record

    def _first_time(self, key: str, kind: str) -> bool:
        """Whether `key` (a memory id or an edge id) is new in this archive; a repeat is counted."""
        if self.db.execute("INSERT OR IGNORE INTO seen (id) VALUES (?)", (key,)).rowcount:
            return True
        self.report.duplicates[kind] += 1
        return False

    def _finish(self, record: dict, unmapped: list[str], blob: bytes | None) -> dict | RecordFailure:
        self.report.unmapped_properties.update(unmapped)
        memory_id = str(record.get("id"))
        bad = codec.lone_surrogate(record, "memory")
        if bad:
            return RecordFailure(memory_id, "validate", f"{bad.removeprefix('memory.')} holds a lone surrogate: not valid Unicode, "
                                 "so the memory cannot be stored; fix it in the archive", record=None)
        if self.new_id is not None:
            record = codec.remap_ids(record, self.new_id)
        return self._with_vector(record, blob)

    def _memory_records(self) -> Iterator[dict | RecordFailure]:
        if self.falkordb is not None:
            nodes = []
            for node in self.falkordb.items("nodes.item"):
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
                if not self._first_time(f"m:{memory_id}", "memories"):
                    continue
                found = self._point(memory_id)
                record, unmapped = archive.memory_record(props, self.fields, found[1] if found else None)
                yield self._finish(record, unmapped, found[0] if found else None)
            self.db.executemany("INSERT OR REPLACE INTO nodes (n, id) VALUES (?, ?)", nodes)
        # Points without a node: a qdrant-only backup, or a graph that lost some memories.
        rows = self.db.execute("SELECT id, vector, payload FROM points WHERE used = 0 ORDER BY id")
        while batch := rows.fetchmany(SQL_CHUNK):
            for memory_id, vector, payload in batch:
                self.report.points_without_node += 1
                record, unmapped = archive.memory_record({"id": memory_id}, self.fields, json.loads(payload))
                yield self._finish(record, unmapped, vector)

    def _edge_records(self) -> Iterator[dict | RecordFailure]:
        if self.falkordb is None:
            return
        pending: list[dict] = []
        for rel in self.falkordb.items("relationships.item"):
            if isinstance(rel, dict):
                pending.append(rel)
            if len(pending) >= SQL_CHUNK:
                yield from self._map_ends(pending)
                pending = []
        yield from self._map_ends(pending)

    def _map_ends(self, rels: list[dict]) -> Iterator[dict | RecordFailure]:
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
            if not self._first_time(f"e:{source}|{rel_type.upper()}|{target}", "relationships"):
                continue
            self.report.relationships += 1
            edge = archive.edge_record(source, target, rel)
            bad = codec.lone_surrogate(edge, "edge")
            if bad:
                yield RecordFailure(source, "associate", f"{bad.removeprefix('edge.')} holds a lone surrogate: not valid Unicode; "
                                    "fix it in the archive", record=None, edge=True)
                continue
            if self.new_id is not None:
                edge = {**edge, "memory1_id": self.new_id(source), "memory2_id": self.new_id(target)}
            yield edge
