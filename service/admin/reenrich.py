"""`engram reenrich`: every memory of a bank marked for enrichment again.

A memory keeps the entities, tags and edges it was enriched with; an upgrade that reads entities
better (service/enrichment/extractor.py) changes only the memories written after it. This marks the
bank's memories as POST /enrichment/reprocess marks the ids it is given (`plan.reprocess_mark`,
stored on each memory, so a restart keeps it): the service's enrichment worker picks them up at its
next look for marked memories (within seconds when idle: jobs.ScanSchedule), oldest first, and
enriches them whether or not they changed. GET /enrichment/status counts them down.

Each enriched memory records the edition of the rules that read it (`extractor.EXTRACTION_RULES`):
start-up names the banks with memories of an older one (`warn_older_rules`), and GET
/enrichment/status counts them (`older_rules`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from service.admin.reembed import BatchTally
from service.enrichment import plan
from service.enrichment.extractor import EXTRACTION_RULES
from service.errors import EngramError
from service.storage.memories import MemoryStore

log = logging.getLogger("engram.reenrich")

# Memories per bulk request: each one also reads the vectors the updates carry back in.
CHUNK = 250
FAILED_IDS_SHOWN = 10
BANKS_LISTED = 20  # in the start-up warning
# `--wait` gives up when no memory was enriched for this long: far more than the worker's looks
# (every few seconds, jobs.ScanSchedule) and a batch, so only a stopped worker (no service,
# ENRICHMENT_ENABLED=false) trips it.
STALL_SECONDS = 120.0


@dataclass
class ReenrichResult(BatchTally):
    bank: str

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": "complete", "bank": self.bank, "marked": self.processed, "failed": self.failed, "total": self.total}
        if self.failed_ids:
            out["failed_ids"] = self.failed_ids[:FAILED_IDS_SHOWN]
        return out


def older_rules(store: MemoryStore) -> dict[str, int]:
    """{bank: memories an older edition of the extractor's rules enriched}, in one request."""
    body = {"size": 0, "query": plan.older_rules_query(None), "aggs": {"banks": {"terms": {"field": "bank", "size": BANKS_LISTED}}}}
    return {b["key"]: b["doc_count"] for b in store.search(body)["aggregations"]["banks"]["buckets"]}


def warn_older_rules(store: MemoryStore) -> dict[str, int]:
    """The start-up warning when stored memories were enriched under an older edition of the rules
    (their entities, tags and edges are what that edition read); never fails the start."""
    try:
        banks = older_rules(store)
    except EngramError as exc:
        log.warning("could not check which rules enriched the stored memories: %s", exc.message)
        return {}
    if banks:
        listed = ", ".join(f"{bank} ({n:,})" for bank, n in sorted(banks.items()))
        log.warning("memories in banks %s were enriched by an older edition of the entity extractor (now %d); "
                    "`engram reenrich --bank B` enriches them again", listed, EXTRACTION_RULES)
    return banks


def reenrich(store: MemoryStore, bank: str, *, limit: int | None = None, progress: Callable[[int], None] | None = None) -> ReenrichResult:
    """Mark the bank's memories (at most `limit`, in id order) for enrichment; a memory deleted
    meanwhile is counted as failed."""
    result = ReenrichResult(bank)
    for page in store.id_pages({"bool": {"filter": [{"term": {"bank": bank}}]}}):
        if limit is not None:
            page = page[: max(0, limit - result.total)]
        for start in range(0, len(page), CHUNK):
            _mark(store, bank, page[start : start + CHUNK], result)
            if progress:
                progress(len(page[start : start + CHUNK]))
        if limit is not None and result.total >= limit:
            break
    log.info("marked %d memories of bank %s for enrichment (%d failed)", result.processed, bank, result.failed)
    return result


def _mark(store: MemoryStore, bank: str, ids: list[str], result: ReenrichResult) -> None:
    result.total += len(ids)
    actions = [{"_op_type": "update", "_index": store.alias, "_id": mid, "doc": plan.reprocess_mark()} for mid in ids]
    try:
        errors = store.bulk(bank, actions, "mark for enrichment", refresh="false")
    except EngramError as exc:
        errors = [exc.message] * len(actions)
    result.count(ids, errors)


def wait_enriched(store: MemoryStore, bank: str, *, progress: Callable[[int], None] | None = None,
                  stall: float = STALL_SECONDS, poll: float = 1.0) -> int:
    """Wait while the service's worker enriches the bank's marked memories (plan.marked_query: not
    those written since, so a bank that takes writes all along is waited for too), reporting each
    one done to `progress`; returns how many are left: 0, or more when none was enriched for `stall`
    seconds (no worker is running)."""
    left = store.count(plan.marked_query(bank))
    moved = time.monotonic()
    while left and time.monotonic() - moved < stall:
        time.sleep(poll)
        now = store.count(plan.marked_query(bank))
        if now < left:
            if progress:
                progress(left - now)
            moved = time.monotonic()
        left = now
    if left:
        log.warning("%d memories of bank %s are still to enrich; none was enriched for %.0f s: is the service "
                    "running, with ENRICHMENT_ENABLED=true?", left, bank, stall)
    return left


def stored_states(store: MemoryStore, bank: str) -> dict[str, int]:
    """The bank's memories by enrichment state, as GET /enrichment/status counts them (`stored`)."""
    return plan.status_counts(store.search(plan.status_counts_body(bank)))["stored"]
