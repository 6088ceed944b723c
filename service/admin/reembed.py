"""POST /admin/reembed (spec 003: Admin): new vectors for memories the configured model did not make.

Every memory records the model of its vector (`embedding_model`; none for a vector a client sent).
Without `force` only memories whose model differs from the configured one, or that have no vector
(`stale_query`), are re-embedded, so a second call finds nothing to do; with `force` all are. AutoMem's order: newest first, `limit` caps
the number attempted, `batch_size` (at most 100) texts per embedding call and per bulk request.

A re-embedding is an update of the vector and its model only, by a script that does nothing when
the content changed since it was read: a concurrent PATCH (which embeds its new content itself)
always wins. A model with another vector size never gets here: start-up migrates the index
(service/storage/migrations.py) with the new model before the service answers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from service.embedding import EmbeddingError
from service.errors import EngramError
from service.filters import clauses as C
from service.storage import transfer
from service.storage.memories import MemoryStore

log = logging.getLogger("engram.reembed")

MAX_BATCH = 100  # AutoMem: min(batch_size, 100)
ORDER: list[dict] = [{"timestamp": {"order": "desc", "missing": "_last"}}, {"id": "asc"}]
FAILED_IDS_SHOWN = 10  # AutoMem returns the first 10 failed ids
# Runs after the store's carry-vector prefix: the new vector replaces the carried one only if the
# content is still the one that was embedded.
REPLACE_VECTOR = """
if (ctx._source.content != params.content) { ctx.op = 'noop'; return; }
ctx._source.embedding = params.new_embedding;
ctx._source.embedding_model = params.model;
"""


@dataclass
class BatchTally:
    """What a job over a bank's memories did to each (re-embedding, marking for enrichment): done, or
    failed with its id."""

    processed: int = field(default=0, kw_only=True)
    failed: int = field(default=0, kw_only=True)
    total: int = field(default=0, kw_only=True)
    failed_ids: list[str] = field(default_factory=list, kw_only=True)

    def count(self, ids: Sequence[str], errors: Sequence[Any]) -> None:
        """One bulk request's outcomes, in the order of `ids` (a falsy error: done)."""
        for mid, err in zip(ids, errors):
            if err:
                self.failed += 1
                self.failed_ids.append(mid)
            else:
                self.processed += 1


@dataclass
class ReembedResult(BatchTally):
    model: str
    dimension: int
    batch_size: int

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "status": "complete", "processed": self.processed, "failed": self.failed, "total": self.total,
            "batch_size": self.batch_size, "model": self.model, "dimension": self.dimension,
            "metadata_preserved": True,  # AutoMem's flag: only the vector changes
        }
        if not self.total:
            out["message"] = "No memories found to reembed"  # AutoMem's words
        if self.failed_ids:
            out["failed_ids"] = self.failed_ids[:FAILED_IDS_SHOWN]
            if len(self.failed_ids) > FAILED_IDS_SHOWN:
                out["failed_ids_truncated"] = True
        return out


def stale_query(bank: str, model: str, *, force: bool, only_missing: bool = False, excluded_types: Sequence[str] = ()) -> dict:
    """The memories to re-embed: all of the bank with `force`, else those another model (or none) made,
    and those that have no vector at all. The index keeps vectors out of `_source`, so an update made
    in the engine directly (OpenSearch Dashboards, a script) re-indexes the memory without its vector
    and leaves `embedding_model` as it was; recall's vector arm no longer finds it. `only_missing`:
    those without a vector only, not of `excluded_types` (the drift repair's, service/admin/vector_repair.py)."""
    query: dict = {"bool": {"filter": [{"term": {"bank": bank}}]}}
    if only_missing:
        query["bool"]["must_not"] = C.without_vector(excluded_types)
    elif not force:
        query["bool"]["should"] = [
            {"bool": {"must_not": [{"term": {"embedding_model": model}}]}},
            {"bool": {"must_not": [C.HAS_VECTOR]}},
        ]
        query["bool"]["minimum_should_match"] = 1
    return query


def reembed(
    store: MemoryStore, bank: str, embedder, *, batch_size: int = 32, limit: int | None = None, force: bool = False,
    progress: Callable[[int], None] | None = None, only_missing: bool = False, excluded_types: Sequence[str] = (),
) -> ReembedResult:
    """`only_missing`, `excluded_types`: the drift repair's selection (`stale_query`)."""
    batch_size = max(1, min(batch_size, MAX_BATCH))
    model = embedder.short_name
    result = ReembedResult(model, embedder.dimension, batch_size)
    query = stale_query(bank, model, force=force, only_missing=only_missing, excluded_types=excluded_types)
    for page in transfer.scan(store.client, store.alias, query=query, sort=ORDER, excludes=("embedding", "metadata")):
        if limit is not None:
            page = page[: max(0, limit - result.total)]
        for start in range(0, len(page), batch_size):
            _batch(store, bank, embedder, page[start : start + batch_size], result)
            if progress:
                progress(len(page[start : start + batch_size]))
        if limit is not None and result.total >= limit:
            break
    store.refresh_now()
    log.info("re-embedded %d memories with %s (%d failed)", result.processed, model, result.failed)
    return result


def _batch(store: MemoryStore, bank: str, embedder, docs: list[transfer.Doc], result: ReembedResult) -> None:
    result.total += len(docs)
    try:
        vectors = embedder.embed_documents([d.source.get("content") or "" for d in docs])
    except EmbeddingError as exc:
        log.warning("embedding a batch of %d failed: %s", len(docs), exc)
        result.failed += len(docs)
        result.failed_ids += [d.id for d in docs]
        return
    actions = [
        {"_op_type": "update", "_index": store.alias, "_id": d.id, "script": {
            "lang": "painless", "source": REPLACE_VECTOR,
            "params": {"content": d.source.get("content"), "new_embedding": v, "model": embedder.short_name},
        }}
        for d, v in zip(docs, vectors)
    ]
    try:
        errors = store.bulk(bank, actions, "re-embed memories", refresh="false")
    except EngramError as exc:
        errors = [exc.message] * len(actions)
    result.count([d.id for d in docs], errors)


def stale_vectors(store: MemoryStore, model: str) -> tuple[dict[str, int], dict[str, int]]:
    """Memories per bank, in one request: (those whose vector another model or backend made, those
    without a vector). Until they are re-embedded, recall compares this model's query vectors with the
    first's and cannot find the second by vector (an update made in the engine directly drops it:
    `stale_query`). Vectors a client sent (no model) are not counted."""
    by_bank = {"banks": {"terms": {"field": "bank", "size": 20}}}
    body = {
        "size": 0, "track_total_hits": False,
        "aggs": {
            "other": {"filter": {"bool": {"filter": [{"exists": {"field": "embedding_model"}}], "must_not": [{"term": {"embedding_model": model}}]}},
                      "aggs": by_bank},
            "missing": {"filter": {"bool": {"must_not": [C.HAS_VECTOR]}}, "aggs": by_bank},
        },
    }
    aggs = store.search(body)["aggregations"]
    other, missing = ({b["key"]: b["doc_count"] for b in aggs[name]["banks"]["buckets"]} for name in ("other", "missing"))
    return other, missing


def warn_stale_vectors(store: MemoryStore, model: str, *, missing_too: bool = True) -> dict[str, int]:
    """Start-up warnings when stored vectors come from another model or EMBEDDING_BACKEND, or are missing
    (unless `missing_too` is false: the drift repair re-embeds those and says so); never fails the start.
    Returns the memories without a vector per bank ({} when the check failed): the drift repair starts
    at once when there are any."""
    try:
        banks, missing = stale_vectors(store, model)
    except EngramError as exc:
        log.warning("could not check the stored vectors: %s", exc.message)
        return {}
    if banks:
        listed = ", ".join(f"{bank} ({n:,})" for bank, n in sorted(banks.items()))
        log.warning(
            "memories in banks %s have vectors of another embedding model or backend than %s; recall mixes the two until "
            "they are re-embedded: POST /admin/reembed (per bank) or `engram reembed`, or set EMBEDDING_BACKEND back", listed, model,
        )
    if missing and missing_too:
        listed = ", ".join(f"{bank} ({n:,})" for bank, n in sorted(missing.items()))
        log.warning(
            "memories in banks %s have no vector (updated in the engine directly?); recall finds them by keyword only until "
            "they are re-embedded: POST /admin/reembed (per bank) or `engram reembed`", listed,
        )
    return missing
