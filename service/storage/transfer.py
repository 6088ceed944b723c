"""Whole-index transfer: every document of an index in stable pages, and raw documents written back.

Used by index migrations, backups, exports and restores. Pages are read from one point in time (a
consistent view while writes go on) with `search_after`, so memory stays bounded by the page size
whatever the size of the index, and there is no 10,000-hit result window.

Vectors are not in `_source` (the memories mapping excludes them): `scan(vectors=True)` reads them
back through doc values with the memory store's own script field, the only way a copy keeps them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from opensearchpy import OpenSearch

from service.storage.bulk import ItemError, run_bulk
from service.storage.client import engine_errors
from service.filters.scripts import VECTOR_SCRIPT

# Documents per page. 1,000 memories with 384-float vectors is ~3 MB of JSON per response.
PAGE = 1000
# How long the point in time stays open between two pages (renewed by every page).
KEEP_ALIVE = "5m"
# Bulk requests: as the memory store's (500 actions or 50 MB per request).

# Stable orders: the sort ends on a unique key so search_after never skips or repeats a document.
MEMORY_ORDER: list[dict] = [{"id": "asc"}]
EDGE_ORDER: list[dict] = [{"source_id": "asc"}, {"type": "asc"}, {"target_id": "asc"}]
# Any other index (the consolidation history, the recall log, the session ledger): the document id.
DOC_ORDER: list[dict] = [{"_id": "asc"}]


@dataclass(frozen=True)
class Doc:
    id: str
    source: dict[str, Any]
    vector: list[float] | None = None


def _vector(hit: dict) -> list[float] | None:
    values = hit.get("fields", {}).get("embedding")
    if not values or values[0] is None:
        return None
    return values[0] if isinstance(values[0], list) else values


def page_body(query: dict | None, sort: Sequence[dict], size: int, *, vectors: bool, excludes: Sequence[str]) -> dict:
    """One page's request body (without the point in time and search_after)."""
    body: dict[str, Any] = {
        "size": size, "query": query or {"match_all": {}}, "sort": list(sort),
        "track_total_hits": False, "_source": {"excludes": list(excludes)},
    }
    if vectors:
        body["script_fields"] = {"embedding": {"script": {"source": VECTOR_SCRIPT}}}
    return body


def scan(
    client: OpenSearch, index: str, *, query: dict | None = None, sort: Sequence[dict] = MEMORY_ORDER, size: int = PAGE,
    vectors: bool = False, excludes: Sequence[str] = ("embedding",),
) -> Iterator[list[Doc]]:
    """Pages of documents matching `query`, in `sort` order, from one point in time."""
    with engine_errors(f"open a point in time on {index}"):
        pit = client.create_pit(index=index, params={"keep_alive": KEEP_ALIVE})["pit_id"]
    try:
        after = None
        while True:
            body = page_body(query, sort, size, vectors=vectors, excludes=excludes)
            body["pit"] = {"id": pit, "keep_alive": KEEP_ALIVE}
            if after is not None:
                body["search_after"] = after
            with engine_errors(f"read {index}"):
                resp = client.search(body=body)
            pit = resp.get("pit_id", pit)
            hits = resp["hits"]["hits"]
            if hits:
                yield [Doc(h["_id"], h.get("_source", {}), _vector(h) if vectors else None) for h in hits]
            if len(hits) < size:
                return
            after = hits[-1]["sort"]
    finally:
        try:
            client.delete_pit(body={"pit_id": [pit]})
        except Exception:  # noqa: BLE001 - an unclosed point in time expires by itself
            pass


def count(client: OpenSearch, index: str, query: dict | None = None) -> int:
    with engine_errors(f"count {index}"):
        return int(client.count(index=index, body={"query": query or {"match_all": {}}})["count"])


def write(client: OpenSearch, index: str, docs: Iterable[tuple[str, dict]], *, refresh: str = "false") -> list[ItemError | None]:
    """Index raw documents (id, body) as given; one outcome per document, in order."""
    actions = [{"_op_type": "index", "_index": index, "_id": doc_id, "_source": body} for doc_id, body in docs]
    return run_bulk(client, actions, what=f"write {index}", refresh=refresh)


def get_sources(client: OpenSearch, index: str, ids: Sequence[str], *, includes: Sequence[str] = (), excludes: Sequence[str] = ("embedding",)) -> dict[str, dict]:
    """The stored sources of `ids`, whatever their bank (one realtime mget; the caller checks banks)."""
    if not ids:
        return {}
    params = {"_source_includes": ",".join(includes)} if includes else {"_source_excludes": ",".join(excludes)}
    with engine_errors(f"read {index}"):
        resp = client.mget(index=index, body={"ids": list(ids)}, params=params)
    return {d["_id"]: d["_source"] for d in resp["docs"] if d.get("found")}


def matching_ids(client: OpenSearch, index: str, query: dict, ids: Sequence[str]) -> set[str]:
    """Which of `ids` match `query` (one search; at most 10,000 ids at a time)."""
    body = {"size": len(ids), "_source": False, "query": {"bool": {"filter": [query, {"ids": {"values": list(ids)}}]}}}
    with engine_errors(f"read {index}"):
        return {h["_id"] for h in client.search(index=index, body=body)["hits"]["hits"]}


def refresh(client: OpenSearch, indices: Sequence[str]) -> None:
    with engine_errors(f"refresh {', '.join(indices)}"):
        client.indices.refresh(index=list(indices))


@contextmanager
def refresh_paused(client: OpenSearch, aliases: Iterable[str]) -> Iterator[None]:
    """No refresh while loading, restored afterwards: for offline loads (the benchmarks' corpora) only,
    since a live service's `refresh=wait_for` writes then wait until the load ends."""
    saved: dict[str, str | None] = {}
    with engine_errors("pause index refresh"):
        for alias in aliases:
            for index in client.indices.get_alias(name=alias):
                current = client.indices.get_settings(index=index, name="index.refresh_interval", flat_settings=True)
                saved[index] = current.get(index, {}).get("settings", {}).get("index.refresh_interval")
                client.indices.put_settings(index=index, body={"index": {"refresh_interval": "-1"}})
    try:
        yield
    finally:
        with engine_errors("restore index refresh"):
            for index, value in saved.items():
                client.indices.put_settings(index=index, body={"index": {"refresh_interval": value}})
                client.indices.refresh(index=index)
