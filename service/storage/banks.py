"""The bank registry: bank profiles in the `{INDEX_PREFIX}-banks` index, and what a bank holds.

A bank exists once it has a profile (PUT /v1/default/banks/{bank_id}, or a first Hindsight retain)
or holds memories (an AutoMem write into it is enough). Profiles hold what Hindsight's
CreateBankRequest carries (name, mission, disposition, the retain and recall switches); statistics
are engine aggregations; deleting a bank removes its memories, edges, consolidation history, session
ledger (Signet's dedupe), recall log documents and profile, and reports how many of each went.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from datetime import datetime
from typing import Any

from opensearchpy import OpenSearch
from opensearchpy import exceptions as os_exc

from service.banks.profiles import Bank, DeleteReport, merged_profile
from service.clock.instants import iso
from service.config import Settings
from service.errors import EngineUnavailable
from service.storage import bank_queries as BQ
from service.storage.client import engine_errors, msearch

log = logging.getLogger("engram.banks")

# delete_by_query passes over a bank's documents while other writes keep changing some of them.
DELETE_PASSES = 5


class BankRegistry:
    def __init__(self, client: OpenSearch, settings: Settings):
        self.client = client
        # Profiles are read by id (a realtime GET); the bank list is a search, which sees a profile
        # once refreshed: WRITE_REFRESH, as for memories (`true`: listed by the next request).
        self.refresh = settings.write_refresh
        self.alias = settings.banks_alias
        self.memories = settings.memories_alias
        self.edges = settings.edges_alias
        self.consolidation = settings.consolidation_alias
        self.ledger = settings.recall_ledger_alias
        self.operations = settings.operations_alias
        self.recall_log = settings.recall_log_alias  # exists only while (or since) RECALL_LOG_ENABLED was on

    # --- profiles -----------------------------------------------------------------------------
    def _profile_doc(self, bank: str) -> dict | None:
        with engine_errors("read bank"):
            got = self.client.get(index=self.alias, id=bank, ignore=[404])
        return got["_source"] if got.get("found") else None

    def profile(self, bank: str) -> Bank | None:
        """The bank's profile, or None when it has none (it may still hold memories)."""
        doc = self._profile_doc(bank)
        return None if doc is None else self._bank(bank, doc)

    def get(self, bank: str) -> Bank | None:
        """The bank, or None when it has neither a profile nor memories."""
        doc = self._profile_doc(bank)
        with engine_errors("count memories"):
            count = int(self.client.count(index=self.memories, body={"query": BQ.bank_term(bank)})["count"])
        if doc is None and count == 0:
            return None
        return self._bank(bank, doc, {"fact_count": count})

    @staticmethod
    def _bank(bank: str, doc: dict | None, counts: Mapping[str, Any] | None = None) -> Bank:
        counts = counts or {}
        return Bank(
            bank_id=bank, profile=dict((doc or {}).get("profile") or {}), registered=doc is not None,
            created_at=(doc or {}).get("created_at"), updated_at=(doc or {}).get("updated_at"),
            fact_count=int(counts.get("fact_count", 0)), last_write_at=counts.get("last_write_at"),
        )

    def ensure(self, bank: str, now: datetime) -> None:
        """Register a bank on its first write (never overwrites a profile)."""
        doc = {"bank": bank, "name": bank, "profile": {}, "created_at": iso(now), "updated_at": iso(now)}
        with engine_errors("register bank", write=True):
            try:
                self.client.index(index=self.alias, id=bank, body=doc, op_type="create", refresh=self.refresh)
            except os_exc.ConflictError:
                pass  # registered already

    def update(self, bank: str, changes: Mapping[str, Any], now: datetime) -> Bank:
        """Create or update the profile (PUT and PATCH alike: only the fields given change)."""
        for _ in range(5):
            with engine_errors("read bank"):
                got = self.client.get(index=self.alias, id=bank, ignore=[404])
            found = got.get("found")
            current = got["_source"] if found else {"bank": bank, "profile": {}, "created_at": iso(now)}
            profile = merged_profile(current.get("profile") or {}, changes)
            doc = {**current, "bank": bank, "name": profile.get("name") or bank, "profile": profile, "updated_at": iso(now)}
            params: dict[str, Any] = {"if_seq_no": got["_seq_no"], "if_primary_term": got["_primary_term"]} if found else {"op_type": "create"}
            with engine_errors("store bank", write=True):
                try:
                    self.client.index(index=self.alias, id=bank, body=doc, refresh=self.refresh, **params)
                except os_exc.ConflictError:
                    continue  # a concurrent update: read it and apply ours on top
            return self._bank(bank, doc)
        raise EngineUnavailable(f"bank {bank}: its profile kept changing under concurrent updates; retry")

    # --- listing and statistics -----------------------------------------------------------------
    def all_banks(self) -> list[str]:
        """Every bank with a profile or memories, sorted."""
        return sorted(set(self._counts()) | set(self._profiles()))

    def _counts(self) -> dict[str, dict[str, Any]]:
        with engine_errors("list banks"):
            return BQ.parse_bank_counts(self.client.search(index=self.memories, body=BQ.bank_counts_body()))

    def _profiles(self) -> dict[str, dict]:
        with engine_errors("list banks"):
            hits = self.client.search(index=self.alias, body=BQ.profiles_body())["hits"]["hits"]
        return {h["_id"]: h["_source"] for h in hits}

    def list(self, visible: Collection[str] | None, q: str | None, limit: int, offset: int) -> tuple[list[Bank], int]:
        """Banks the caller may see (`visible` None: all), optionally whose id or name contains `q`
        (case-insensitive), sorted by id; one page and the total."""
        counts, profiles = self._counts(), self._profiles()
        banks = [self._bank(b, profiles.get(b), counts.get(b)) for b in sorted(set(counts) | set(profiles))]
        if visible is not None:
            banks = [b for b in banks if b.bank_id in visible]
        if q:
            needle = q.lower()
            banks = [b for b in banks if needle in b.bank_id.lower() or needle in b.name.lower()]
        return banks[offset : offset + limit], len(banks)

    def stats(self, bank: str) -> dict[str, Any]:
        """Memory and edge counts, per fact type and per edge type, documents, tags, last writes."""
        memories, edges, runs = msearch(self.client, [
            (self.memories, BQ.memory_stats_body(bank), "bank statistics"), (self.edges, BQ.edge_stats_body(bank), "bank statistics"),
            (self.consolidation, BQ.last_run_body(bank), "bank statistics"),
        ], "bank statistics")
        out = {**BQ.parse_memory_stats(memories), **BQ.parse_edge_stats(edges)}
        hits = runs["hits"]["hits"]
        out["last_consolidated_at"] = hits[0]["_source"].get("completed_at") if hits else None
        return out

    def tags(self, bank: str, size: int) -> list[dict[str, Any]]:
        """The bank's caller tags with their counts, most used first (at most `size` distinct tags)."""
        with engine_errors("list tags"):
            resp = self.client.search(index=self.memories, body=BQ.memory_stats_body(bank, tags=size))
        return BQ.caller_tag_counts(resp)

    # --- deletion ---------------------------------------------------------------------------------
    def delete(self, bank: str) -> DeleteReport:
        """Memories, edges, consolidation history, session ledger, recall log and profile of the bank,
        each one delete_by_query (refreshed first, so every write acknowledged before the call is seen).
        A document another write changed meanwhile (a recall's access tracking) is a version conflict
        the pass skips: it is deleted by the next pass, at most DELETE_PASSES. A recall log index that
        was never made (RECALL_LOG_ENABLED off) holds nothing to delete."""
        report = DeleteReport(bank)
        query = {"query": BQ.bank_term(bank)}
        held = (("memories_deleted", self.memories), ("edges_deleted", self.edges), ("consolidation_records_deleted", self.consolidation),
                ("recall_ledger_deleted", self.ledger), ("recall_log_deleted", self.recall_log), ("operations_deleted", self.operations))
        for name, index in held:
            deleted = 0
            with engine_errors(f"delete bank {name.removesuffix('_deleted').replace('_', ' ')}", write=True):
                for _ in range(DELETE_PASSES):
                    self.client.indices.refresh(index=index, ignore_unavailable=True)
                    resp = self.client.delete_by_query(index=index, body=query, refresh=True, conflicts="proceed", ignore_unavailable=True)
                    deleted += int(resp.get("deleted", 0))
                    if not resp.get("version_conflicts"):
                        break
            setattr(report, name, deleted)
        with engine_errors("delete bank profile", write=True):
            resp = self.client.delete(index=self.alias, id=bank, refresh=self.refresh, ignore=[404])
        report.profile_deleted = resp.get("result") == "deleted"
        log.info("bank_deleted", extra={"bank": bank, "memories": report.memories_deleted, "edges": report.edges_deleted,
                                        "consolidation_records": report.consolidation_records_deleted,
                                        "recall_ledger": report.recall_ledger_deleted, "recall_log": report.recall_log_deleted})
        return report
