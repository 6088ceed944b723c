"""MemoryStore: every client call on the memories index (STYLE.md practice 5)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from opensearchpy import OpenSearch, helpers

from service.errors import EngineUnavailable
from service.storage.client import engine_errors

log = logging.getLogger("engram.memories")

# Fields never sent back to clients unless asked for: vectors are large and AutoMem hides them.
HIDDEN_FIELDS = ("embedding",)


class MemoryStore:
    def __init__(self, client: OpenSearch, alias: str, *, refresh: str = "wait_for", bank: str = "default"):
        self.client = client
        self.alias = alias
        self.refresh = refresh
        self.bank = bank

    # --- single documents -------------------------------------------------------------------
    def get(self, memory_id: str, *, with_embedding: bool = False) -> dict | None:
        found = self.get_many([memory_id], with_embedding=with_embedding)
        return found.get(memory_id)

    def get_many(self, ids: Sequence[str], *, with_embedding: bool = False) -> dict[str, dict]:
        if not ids:
            return {}
        excludes = [] if with_embedding else list(HIDDEN_FIELDS)
        with engine_errors("fetch memories"):
            resp = self.client.mget(index=self.alias, body={"ids": list(ids)}, params={"_source_excludes": ",".join(excludes)} if excludes else None)
        out = {}
        for doc in resp["docs"]:
            if doc.get("found") and doc["_source"].get("bank", self.bank) == self.bank:
                out[doc["_id"]] = doc["_source"]
        return out

    def put(self, memory_id: str, doc: dict) -> None:
        with engine_errors("store memory"):
            self.client.index(index=self.alias, id=memory_id, body=doc, refresh=self.refresh)

    def update(self, memory_id: str, partial: dict) -> None:
        with engine_errors("update memory"):
            self.client.update(index=self.alias, id=memory_id, body={"doc": partial}, refresh=self.refresh, retry_on_conflict=3)

    def delete(self, memory_id: str) -> bool:
        with engine_errors("delete memory"):
            resp = self.client.delete(index=self.alias, id=memory_id, refresh=self.refresh, ignore=[404])
        return resp.get("result") == "deleted"

    # --- many documents -----------------------------------------------------------------------
    def bulk_put(self, docs: Sequence[tuple[str, dict]], *, refresh: str | None = None) -> list[str | None]:
        """Index many documents in one bulk request; return one error message (or None) per input, in order."""
        actions = [{"_op_type": "index", "_index": self.alias, "_id": mid, "_source": doc} for mid, doc in docs]
        errors: list[str | None] = [None] * len(actions)
        with engine_errors("bulk store memories"):
            for i, (ok, item) in enumerate(
                helpers.streaming_bulk(
                    self.client, actions, chunk_size=500, max_chunk_bytes=50 * 1024 * 1024,
                    raise_on_error=False, raise_on_exception=True, refresh=refresh or self.refresh,
                )
            ):
                if not ok:
                    info = next(iter(item.values()))
                    err = info.get("error")
                    errors[i] = err.get("reason", str(err)) if isinstance(err, dict) else str(err)
        return errors

    def touch(self, ids: Iterable[str], when: str) -> None:
        """Set last_accessed on many memories in one bulk request, without waiting for a refresh."""
        actions = [{"_op_type": "update", "_index": self.alias, "_id": mid, "doc": {"last_accessed": when}} for mid in ids]
        if not actions:
            return
        try:
            helpers.bulk(self.client, actions, raise_on_error=False, refresh=False)
        except Exception:  # noqa: BLE001 - access tracking must never fail a recall
            log.warning("last_accessed update failed for %d memories", len(actions), exc_info=True)

    def count(self, query: dict | None = None) -> int:
        with engine_errors("count memories"):
            return int(self.client.count(index=self.alias, body={"query": query or {"match_all": {}}})["count"])

    def search(self, body: dict) -> dict:
        with engine_errors("search memories"):
            return self.client.search(index=self.alias, body=body)

    def msearch(self, bodies: Sequence[dict]) -> list[dict]:
        """All retrieval arms in one round trip; every sub-response is checked for its error key."""
        if not bodies:
            return []
        lines: list[dict] = []
        for body in bodies:
            lines.append({"index": self.alias})
            lines.append(body)
        with engine_errors("recall search"):
            resp = self.client.msearch(body=lines)
        out = []
        for i, sub in enumerate(resp["responses"]):
            if "error" in sub:
                err = sub["error"]
                reason = err.get("root_cause", [{}])[0].get("reason") or err.get("reason") if isinstance(err, dict) else str(err)
                raise EngineUnavailable(f"recall search arm {i} failed: {reason}")
            out.append(sub)
        return out

    def delete_by_query(self, query: dict) -> int:
        with engine_errors("delete memories"):
            resp = self.client.delete_by_query(index=self.alias, body={"query": query}, refresh=True, conflicts="proceed")
        return int(resp.get("deleted", 0))
