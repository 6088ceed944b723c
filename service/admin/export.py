"""Export a bank as JSONL: one memory per line (oldest first, id as the tie-break), then its edges.

Lines are service/admin/records.py's: the `POST /memory` body with id and timestamps, keys
sorted, so the same store always exports the same bytes (that is how a restore is checked), and
`engram import` reads them back. Memory stays bounded by a page: memories and edges are read from
a point in time with `search_after`.

With `tags` only the memories carrying one of them (prefix match, as recall's default) are
written, and only the edges between two of those; such edges are collected in a scratch file
while the memories stream, then appended after them.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from opensearchpy import OpenSearch

from service.admin.records import dumps, edge_line, memory_line
from service.filters.clauses import tag_clauses
from service.storage import transfer

MEMORY_ORDER: list[dict] = [{"timestamp": {"order": "asc", "missing": "_first"}}, {"id": "asc"}]
TERMS_CHUNK = 1000


@dataclass
class ExportCounts:
    memories: int = 0
    edges: int = 0


def memory_query(bank: str, tags: Sequence[str] = ()) -> dict:
    return {"bool": {"filter": [{"term": {"bank": bank}}, *tag_clauses(list(tags), "any", "prefix")]}}


def export_lines(
    client: OpenSearch, *, memories_alias: str, edges_alias: str, bank: str, tags: Sequence[str] = (), vectors: bool = False,
    counts: ExportCounts | None = None,
) -> Iterator[bytes]:
    counts = counts if counts is not None else ExportCounts()
    query = memory_query(bank, tags)
    bank_only = {"bool": {"filter": [{"term": {"bank": bank}}]}}
    if not tags:
        for page in transfer.scan(client, memories_alias, query=query, sort=MEMORY_ORDER, vectors=vectors):
            for doc in page:
                counts.memories += 1
                yield dumps(memory_line(doc.id, doc.source, doc.vector))
        for page in transfer.scan(client, edges_alias, query=bank_only, sort=transfer.EDGE_ORDER):
            for doc in page:
                counts.edges += 1
                yield dumps(edge_line(doc.source))
        return
    with tempfile.TemporaryFile(prefix="engram-export-edges-") as edges:
        for page in transfer.scan(client, memories_alias, query=query, sort=MEMORY_ORDER, vectors=vectors):
            for doc in page:
                counts.memories += 1
                yield dumps(memory_line(doc.id, doc.source, doc.vector))
            for line in _edges_within(client, memories_alias, edges_alias, bank, query, [d.id for d in page]):
                edges.write(line)
                counts.edges += 1
        edges.seek(0)
        yield from edges


def _edges_within(client: OpenSearch, memories_alias: str, edges_alias: str, bank: str, query: dict, sources: list[str]) -> Iterator[bytes]:
    """Edges leaving `sources` whose target also matches the export's query."""
    edge_query = {"bool": {"filter": [{"term": {"bank": bank}}, {"terms": {"source_id": sources}}]}}
    for page in transfer.scan(client, edges_alias, query=edge_query, sort=transfer.EDGE_ORDER):
        targets = sorted({d.source["target_id"] for d in page})
        inside: set[str] = set()
        for start in range(0, len(targets), TERMS_CHUNK):
            inside |= transfer.matching_ids(client, memories_alias, query, targets[start : start + TERMS_CHUNK])
        for doc in page:
            if doc.source["target_id"] in inside:
                yield dumps(edge_line(doc.source))
