"""RecallLogStore: every client call on the recall log index ({INDEX_PREFIX}-recall-log), which exists
only with RECALL_LOG_ENABLED. The documents are built in service/recall/log.py; the queue and the
writer thread live there too."""

from __future__ import annotations

from collections.abc import Sequence

from opensearchpy import OpenSearch

from service.storage.bulk import ItemError, run_bulk
from service.storage.client import engine_errors


def older_than_query(days: int) -> dict:
    return {"range": {"timestamp": {"lt": f"now-{days}d"}}}


class RecallLogStore:
    def __init__(self, client: OpenSearch, alias: str):
        self.client = client
        self.alias = alias

    def write(self, docs: Sequence[dict]) -> list[ItemError | None]:
        """One bulk request (chunked); one outcome per document, in order. Ids are the engine's."""
        actions = [{"_op_type": "index", "_index": self.alias, "_source": doc} for doc in docs]
        return run_bulk(self.client, actions, what="write the recall log")

    def prune(self, retention_days: int) -> None:
        """Delete documents older than the retention, as an engine task (nothing waits for it)."""
        with engine_errors("prune the recall log"):
            self.client.delete_by_query(index=self.alias, body={"query": older_than_query(retention_days)},
                                        conflicts="proceed", wait_for_completion=False)
