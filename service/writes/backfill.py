"""Recall's doc-value fields, written onto memories stored before those fields existed.

Recall ranks its hits from doc values (service/recall/lean.py): the stems of a memory's content and
thread context (service/memory/stems.py) and its metadata terms without entities
(`metadata_terms_plain`). A memory written by an earlier version has none of them; recall reads such
a memory whole before scoring it, which is right but slower, and an in-place mapping update (a new
field needs no index copy) leaves every stored memory so. At start-up a background thread writes the
fields onto each of them.

Each memory is re-indexed whole (its vector carried, as `_source` holds none) at the version it was
read (`if_seq_no`): a memory another writer changed meanwhile got the fields from that write, and its
conflict is counted as skipped, never retried with stale text. Pages go in id order (search_after),
so each memory is visited once per run even if its fields cannot be stored (a stem longer than the
doc values' `ignore_above`).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

from service.errors import EngramError
from service.filters.scripts import VECTOR_SCRIPT
from service.memory.stems import CONTENT_STEMS, with_stems
from service.storage.bulk import run_bulk
from service.storage.client import engine_errors
from service.storage.memories import MemoryStore
from service.writes.writer import plain_metadata_terms

log = logging.getLogger("engram.backfill")

PAGE = 200
# Between pages: the backfill yields the engine to requests.
PAUSE_S = 0.05
PLAIN = "metadata_terms_plain"

# A memory without stems, or with metadata terms but not their plain form.
MISSING: dict = {"bool": {"should": [
    {"bool": {"must_not": [{"exists": {"field": CONTENT_STEMS}}]}},
    {"bool": {"filter": [{"exists": {"field": "metadata_terms"}}], "must_not": [{"exists": {"field": PLAIN}}]}},
], "minimum_should_match": 1}}


@dataclass
class BackfillResult:
    found: int = 0  # memories missing the fields when the run started
    written: int = 0
    skipped: int = 0  # changed by another write since read: that write stored the fields
    failed: int = 0


def with_recall_fields(source: dict[str, Any]) -> dict[str, Any]:
    """A stored memory as the write path would store it today: with its stems and plain metadata terms."""
    doc = with_stems(source)
    doc[PLAIN] = plain_metadata_terms(source.get("metadata") or {})
    return doc


def read_page(store: MemoryStore, after: list | None, size: int = PAGE) -> list[dict]:
    """The next `size` memories missing the fields, in id order, with version and vector."""
    body: dict = {
        "query": MISSING, "size": size, "sort": [{"id": "asc"}], "track_total_hits": False,
        "seq_no_primary_term": True, "_source": {"excludes": ["embedding"]},
        "script_fields": {"embedding": {"script": {"source": VECTOR_SCRIPT}}},
    }
    if after is not None:
        body["search_after"] = after
    with engine_errors("backfill: read memories"):
        return store.client.search(index=store.alias, body=body)["hits"]["hits"]


def rewrite(store: MemoryStore, hits: list[dict], result: BackfillResult) -> None:
    """Each hit re-indexed whole with the fields, at the version it was read."""
    actions = []
    for hit in hits:
        doc = with_recall_fields(hit["_source"])
        vector = (hit.get("fields") or {}).get("embedding")
        if vector:
            doc["embedding"] = vector
        actions.append({"_op_type": "index", "_index": store.alias, "_id": hit["_id"], "_source": doc,
                        "if_seq_no": hit["_seq_no"], "if_primary_term": hit["_primary_term"]})
    for error in run_bulk(store.client, actions, what="backfill: write memories"):
        if error is None:
            result.written += 1
        elif error.conflict or error.missing:
            result.skipped += 1
        else:
            result.failed += 1
            log.warning("backfill: a memory was not rewritten: %s", error)


def missing(store: MemoryStore) -> int:
    """How many memories lack the fields."""
    with engine_errors("backfill: count memories"):
        return int(store.client.count(index=store.alias, body={"query": MISSING})["count"])


def backfill(store: MemoryStore, stop: threading.Event | None = None, *, size: int = PAGE, pause_s: float = PAUSE_S,
             found: int | None = None) -> BackfillResult:
    """Write the fields onto every memory missing them (`found`: their number, if counted already);
    stops early when `stop` is set."""
    result = BackfillResult(found=missing(store) if found is None else found)
    if not result.found:
        return result
    log.info("backfill: %d memories were stored before recall's doc-value fields; writing them", result.found)
    after = None
    while not (stop and stop.is_set()):
        hits = read_page(store, after, size)
        rewrite(store, hits, result)
        if len(hits) < size:
            break
        after = hits[-1]["sort"]
        if stop and stop.wait(pause_s):
            break
    log.info("backfill: %d of %d memories written, %d skipped (changed meanwhile), %d failed",
             result.written, result.found, result.skipped, result.failed)
    return result


class Backfill:
    """At start-up: one count, and `backfill` on a daemon thread only if some memory needs it; stopped
    with the service. A failure is logged and the next start tries again."""

    def __init__(self, store: MemoryStore):
        self.store = store
        self.stop_event = threading.Event()
        self.thread: threading.Thread | None = None
        self.result: BackfillResult | None = None

    def start(self) -> None:
        try:
            found = missing(self.store)
        except EngramError as exc:
            log.warning("backfill not started: %s; the next start tries again", exc.message)
            return
        if found:
            self.thread = threading.Thread(target=self._run, args=(found,), name="engram-backfill", daemon=True)
            self.thread.start()

    def _run(self, found: int) -> None:
        try:
            self.result = backfill(self.store, self.stop_event, found=found)
        except EngramError as exc:
            log.warning("backfill stopped: %s; the next start resumes it", exc.message)

    def stop(self, timeout: float = 10.0) -> None:
        self.stop_event.set()
        if self.thread is not None:
            self.thread.join(timeout)
