"""Pure builders of the storage layer's own query DSL (recall's are in service/recall/queries.py)."""

from __future__ import annotations

from collections.abc import Sequence

def by_tags_query(bank: str, tags: Sequence[str]) -> dict:
    """GET / DELETE /memory/by-tag: any of `tags`, exact and case-insensitive (AutoMem: toLower(tag) IN $tags)."""
    return {"bool": {"filter": [{"term": {"bank": bank}}, {"terms": {"tags_norm": sorted({t.strip().lower() for t in tags})}}]}}


# The one importance order (AutoMem memories_by_tag and get_related_memories: ORDER BY m.importance
# DESC, m.timestamp DESC); the id makes pages stable. Trending recall, anchors and entity expansion too.
IMPORTANCE_SORT: list[dict] = [
    {"importance": {"order": "desc", "missing": "_last"}},
    {"timestamp": {"order": "desc", "missing": "_last"}},
    {"id": "asc"},
]
BY_TAG_SORT = IMPORTANCE_SORT


def ids_query(bank: str, ids: Sequence[str]) -> dict:
    """These memories of this bank (the bank filter keeps other banks' ids out)."""
    return {"bool": {"filter": [{"term": {"bank": bank}}, {"ids": {"values": list(ids)}}]}}


def count_query(bank: str, excluded_types: Sequence[str] = ()) -> dict:
    """The bank's memories, without internal artifact types (/health's memory_count)."""
    return {"bool": {"filter": [{"term": {"bank": bank}}], "must_not": [{"terms": {"type": list(excluded_types)}}] if excluded_types else []}}
