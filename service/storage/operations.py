"""OperationStore: every client call on the operations index (Hindsight's async operations).

One document per (bank, operation_id), its id derived from the two (operation ids are the client's
and need not be unique across banks). A new operation is written with refresh=wait_for before the
client is answered: acknowledged by the engine, it is in the translog, so it survives a crash of
the service or of the engine and is resumed at the next start.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from opensearchpy import OpenSearch

from service.storage.client import engine_errors

OPERATIONS_NAMESPACE = uuid.UUID("1d7e4f7a-5c0b-4a8e-9e37-6a2b8c9d0f14")
PENDING, PROCESSING, COMPLETED, FAILED = "pending", "processing", "completed", "failed"
STATUSES = (PENDING, PROCESSING, COMPLETED, FAILED, "cancelled")
UNFINISHED = (PENDING, PROCESSING)
NEWEST_FIRST = [{"created_at": "desc"}, {"operation_id": "asc"}]
RESUME_PAGE = 100


def operation_doc_id(bank: str, operation_id: str) -> str:
    return str(uuid.uuid5(OPERATIONS_NAMESPACE, f"{bank}\n{operation_id}"))


def list_query(bank: str, status: str | None = None, task_type: str | None = None) -> dict:
    """A bank's operations, optionally of one status and one task type (pure)."""
    filters: list[dict] = [{"term": {"bank": bank}}]
    if status is not None:
        filters.append({"term": {"status": status}})
    if task_type is not None:
        filters.append({"term": {"task_type": task_type}})
    return {"bool": {"filter": filters}}


def unfinished_query() -> dict:
    """Operations of any bank still to run (or whose run a crash interrupted)."""
    return {"terms": {"status": list(UNFINISHED)}}


class OperationStore:
    def __init__(self, client: OpenSearch, alias: str):
        self.client = client
        self.alias = alias

    def put(self, doc: dict[str, Any]) -> None:
        """Write an operation (a new one, or one submitted again under the same id), durably."""
        with engine_errors("store operation", write=True):
            self.client.index(index=self.alias, id=operation_doc_id(doc["bank"], doc["operation_id"]), body=doc, refresh="wait_for")

    def get(self, bank: str, operation_id: str) -> dict[str, Any] | None:
        with engine_errors("read operation"):
            got = self.client.get(index=self.alias, id=operation_doc_id(bank, operation_id), ignore=[404])
        source = got.get("_source") if got.get("found") else None
        return source if source is not None and source.get("bank") == bank else None

    def update(self, bank: str, operation_id: str, fields: dict[str, Any]) -> None:
        """Record a step of the run (status, counts, error); refresh=false: the GET of one operation is realtime."""
        with engine_errors("record operation", write=True):
            self.client.update(index=self.alias, id=operation_doc_id(bank, operation_id), body={"doc": fields}, refresh="false",
                               retry_on_conflict=3)

    def page(self, query: dict, *, size: int, offset: int) -> tuple[list[dict[str, Any]], int]:
        """Newest first, without the stored requests; the total number of matches (exact)."""
        body = {"query": query, "sort": NEWEST_FIRST, "from": offset, "size": size, "track_total_hits": True, "_source": {"excludes": ["request"]}}
        with engine_errors("list operations"):
            self.client.indices.refresh(index=self.alias)  # a just-submitted operation is listed
            resp = self.client.search(index=self.alias, body=body)
        return [h["_source"] for h in resp["hits"]["hits"]], int(resp["hits"]["total"]["value"])

    def unfinished(self) -> Iterator[dict[str, Any]]:
        """Every pending or interrupted operation of any bank, oldest first, with its request."""
        after: Sequence[Any] | None = None
        with engine_errors("refresh operations"):
            self.client.indices.refresh(index=self.alias)
        while True:
            body: dict = {"query": unfinished_query(), "size": RESUME_PAGE, "sort": [{"created_at": "asc"}, {"operation_id": "asc"}, {"bank": "asc"}]}
            if after is not None:
                body["search_after"] = after
            with engine_errors("list unfinished operations"):
                hits = self.client.search(index=self.alias, body=body)["hits"]["hits"]
            yield from (h["_source"] for h in hits)
            if len(hits) < RESUME_PAGE:
                return
            after = hits[-1]["sort"]
