"""EdgeStore: every client call on the edges index. Edge ids are `source|TYPE|target` (idempotent)."""

from __future__ import annotations

from opensearchpy import OpenSearch

from service.storage.client import engine_errors


def edge_id(source_id: str, edge_type: str, target_id: str) -> str:
    return f"{source_id}|{edge_type}|{target_id}"


class EdgeStore:
    def __init__(self, client: OpenSearch, alias: str, *, refresh: str = "wait_for", bank: str = "default"):
        self.client = client
        self.alias = alias
        self.refresh = refresh
        self.bank = bank

    def count(self) -> int:
        with engine_errors("count edges"):
            return int(self.client.count(index=self.alias, body={"query": {"term": {"bank": self.bank}}})["count"])

    def delete_touching(self, memory_ids: list[str]) -> int:
        """Delete every edge with either end in memory_ids (one delete_by_query)."""
        if not memory_ids:
            return 0
        query = {
            "bool": {
                "filter": [{"term": {"bank": self.bank}}],
                "should": [{"terms": {"source_id": memory_ids}}, {"terms": {"target_id": memory_ids}}],
                "minimum_should_match": 1,
            }
        }
        with engine_errors("delete edges"):
            resp = self.client.delete_by_query(index=self.alias, body={"query": query}, refresh=True, conflicts="proceed")
        return int(resp.get("deleted", 0))
