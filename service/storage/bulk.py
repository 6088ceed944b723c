"""One `_bulk` helper for every store: streamed chunks, one typed outcome per action, in order.

A failed item is reported, never dropped: `run_bulk` returns `None` for each success and an
`ItemError` (status, type, reason) for each failure, so callers can tell a lost race (409), a
missing document (404) and a rejected document (400: a gap in our own validation, logged) apart.
Transport failures of a whole request raise the project's errors (storage.client.engine_errors).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from opensearchpy import OpenSearch, helpers

from service.errors import EngineUnavailable
from service.storage.client import engine_errors

log = logging.getLogger("engram.storage")

# 500 actions or 50 MB per request, whichever comes first: far below the engine's 100 MB
# http.max_content_length, large enough that a full POST /memory/batch is one request.
CHUNK_ACTIONS = 500
CHUNK_BYTES = 50 * 1024 * 1024


@dataclass(frozen=True)
class ItemError:
    status: int
    type: str
    reason: str

    @property
    def conflict(self) -> bool:
        return self.status == 409

    @property
    def missing(self) -> bool:
        return self.status == 404

    def __str__(self) -> str:
        return self.reason


def _item_error(item: dict) -> ItemError:
    info = next(iter(item.values()))
    err = info.get("error")
    status = int(info.get("status") or 500)
    if isinstance(err, dict):
        return ItemError(status, str(err.get("type", "error")), str(err.get("reason") or err.get("type") or err))
    return ItemError(status, "error", str(err or f"status {status}"))


def run_bulk(
    client: OpenSearch, actions: Sequence[dict], *, what: str, refresh: str | bool = "false",
    chunk_size: int = CHUNK_ACTIONS,
) -> list[ItemError | None]:
    outcomes: list[ItemError | None] = [None] * len(actions)
    if not actions:
        return outcomes
    with engine_errors(what, write=True):
        results: Iterable = helpers.streaming_bulk(
            client, actions, chunk_size=chunk_size, max_chunk_bytes=CHUNK_BYTES,
            raise_on_error=False, raise_on_exception=True, refresh=refresh,
        )
        for i, (ok, item) in enumerate(results):
            if not ok:
                outcomes[i] = error = _item_error(item)
                if error.status == 400:
                    log.error("%s: the engine rejected a document Engram built: %s", what, error.reason)
    return outcomes


class PartialDelete(EngineUnavailable):
    """Some deletes of a bulk failed for a reason other than the document being gone already (a write
    block, a rejected or failed shard): the others were applied. A delete is idempotent, so the whole
    request can be retried. `failed` maps each id not deleted to its error."""

    def __init__(self, what: str, deleted: int, failed: dict[str, ItemError]):
        first = next(iter(failed.values()))
        super().__init__(f"{what}: {len(failed)} of {deleted + len(failed)} deletes failed ({first.status} {first.type}: "
                         f"{first.reason[:200]}); {deleted} applied; retrying is safe")
        self.deleted, self.failed = deleted, failed


def deleted_count(client: OpenSearch, actions: Sequence[dict], *, what: str, refresh: str | bool) -> int:
    """Delete actions; how many documents were actually deleted (a 404, already gone, is no error
    here). Any other failed item raises PartialDelete once every action has been tried: a failed
    delete is reported, never counted as done or dropped."""
    deleted = 0
    failed: dict[str, ItemError] = {}
    with engine_errors(what, write=True):
        for ok, item in helpers.streaming_bulk(
            client, actions, chunk_size=CHUNK_ACTIONS, raise_on_error=False, raise_on_exception=True, refresh=refresh
        ):
            info = item.get("delete", {})
            if ok:
                deleted += info.get("result") == "deleted"
            elif not (error := _item_error(item)).missing:
                failed[str(info.get("_id"))] = error
    if failed:
        log.warning("%s: %d of %d deletes failed (first: %s)", what, len(failed), len(actions), next(iter(failed.values())))
        raise PartialDelete(what, deleted, failed)
    return deleted
