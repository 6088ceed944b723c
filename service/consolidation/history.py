"""Consolidation state in the engine: each task's last run (one control document per bank) and the
recent runs, so a restart, or another replica of the service, sees the same schedule and history.

AutoMem keeps a `ConsolidationControl` node ({task}_last_run, created with "now" on first use so a
fresh install does not run everything at once) and `ConsolidationRun` nodes pruned to
CONSOLIDATION_HISTORY_LIMIT; these are their documents. A scheduled run is *claimed* by rewriting
the control document with the version it was read at (if_seq_no / if_primary_term): of several
replicas that find a task due, exactly one wins the claim.

The control document is only ever read by id (a realtime GET), so its writes wait for no refresh;
a run record is listed by a search, so it is written with WRITE_REFRESH (default `true`: the
status that follows lists it).
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime
from typing import Any

from opensearchpy import OpenSearch
from opensearchpy import exceptions as os_exc

from service.errors import EngineUnavailable
from service.storage.client import engine_errors
from service.clock.instants import iso, stored_datetime

log = logging.getLogger("engram.consolidation")

TASKS = ("decay", "creative", "cluster", "forget")
LAST_RUN = {t: f"{t}_last_run" for t in (*TASKS, "full")}
# History entries read back per prune pass.
PRUNE_PAGE = 500


def tasks_for_mode(mode: str) -> list[str]:
    """The control fields a run of `mode` refreshes (AutoMem runtime_helpers.tasks_for_mode)."""
    return [*TASKS, "full"] if mode == "full" else [mode]


def runs_query(bank: str) -> dict:
    return {"bool": {"filter": [{"term": {"kind": "run"}}, {"term": {"bank": bank}}]}}


def recent_runs_body(bank: str, size: int, offset: int = 0, *, source: bool = True) -> dict:
    return {
        "query": runs_query(bank), "from": offset, "size": size, "_source": source,
        "sort": [{"started_at": {"order": "desc"}}, {"id": "desc"}],
    }


class HistoryStore:
    def __init__(self, client: OpenSearch, alias: str, bank: str, limit: int, *, refresh: str = "true"):
        self.client = client
        self.alias = alias
        self.bank = bank
        self.limit = limit
        self.refresh = refresh  # for the run records (WRITE_REFRESH)
        self.control_id = f"control:{bank}"

    def for_bank(self, bank: str) -> HistoryStore:
        return self if bank == self.bank else HistoryStore(self.client, self.alias, bank, self.limit, refresh=self.refresh)

    # --- the schedule -----------------------------------------------------------------------
    def control(self, now: datetime) -> tuple[dict[str, Any], int, int]:
        """(control document, seq_no, primary_term), created on first use with every last run = now."""
        for _ in range(3):
            with engine_errors("read consolidation control"):
                got = self.client.get(index=self.alias, id=self.control_id, ignore=[404])
            if got.get("found"):
                return got["_source"], got["_seq_no"], got["_primary_term"]
            doc = {"kind": "control", "bank": self.bank, "updated_at": iso(now), **{f: iso(now) for f in LAST_RUN.values()}}
            with engine_errors("create consolidation control"):
                try:
                    self.client.index(index=self.alias, id=self.control_id, body=doc, op_type="create")
                except os_exc.ConflictError:
                    pass  # another replica created it first: read theirs
        raise EngineUnavailable("consolidation control document could not be read or created")

    def peek(self, now: datetime) -> dict[str, Any]:
        """The control document without creating it: a missing one reads as a schedule that starts now
        (what `control` would create), so reading the status never writes."""
        with engine_errors("read consolidation control"):
            got = self.client.get(index=self.alias, id=self.control_id, ignore=[404])
        if got.get("found"):
            return got["_source"]
        return {"kind": "control", "bank": self.bank, **{f: iso(now) for f in LAST_RUN.values()}}

    @staticmethod
    def last_runs(doc: dict[str, Any]) -> dict[str, datetime | None]:
        return {task: stored_datetime(doc.get(field)) for task, field in LAST_RUN.items()}

    def claim(self, task: str, doc: dict[str, Any], seq_no: int, primary_term: int, now: datetime) -> bool:
        """Mark `task` as run now, only if nobody rewrote the control document since it was read."""
        claimed = {**doc, LAST_RUN[task]: iso(now), "updated_at": iso(now)}
        with engine_errors("claim consolidation task"):
            try:
                self.client.index(
                    index=self.alias, id=self.control_id, body=claimed, if_seq_no=seq_no, if_primary_term=primary_term,
                )
            except os_exc.ConflictError:
                return False
        return True

    def mark_ran(self, mode: str, when: str, now: datetime) -> None:
        self.control(now)  # a fresh schedule first, so the other tasks are not "due" at once
        fields = {LAST_RUN[t]: when for t in tasks_for_mode(mode)}
        with engine_errors("update consolidation control"):
            self.client.update(index=self.alias, id=self.control_id, body={"doc": {**fields, "updated_at": when}}, retry_on_conflict=5)

    # --- runs ---------------------------------------------------------------------------------
    def record(self, result: dict[str, Any], *, trigger: str, affected: int) -> str:
        run_id = uuid.uuid4().hex
        doc = {
            "kind": "run", "bank": self.bank, "id": run_id, "mode": result.get("mode"), "task": result.get("mode"),
            "trigger": trigger, "success": bool(result.get("success")), "dry_run": bool(result.get("dry_run")),
            "started_at": result.get("started_at"), "completed_at": result.get("completed_at"),
            "elapsed_ms": result.get("elapsed_ms"), "affected_count": affected, "steps": list(result.get("steps", {})),
            "result": result,
        }
        if result.get("error"):
            doc["error"] = result["error"]
        with engine_errors("record consolidation run"):
            self.client.index(index=self.alias, id=f"run:{run_id}", body=doc, refresh=self.refresh)
        self.prune()
        return run_id

    def recent(self, limit: int | None = None) -> list[dict[str, Any]]:
        with engine_errors("read consolidation history"):
            hits = self.client.search(index=self.alias, body=recent_runs_body(self.bank, limit or self.limit))["hits"]["hits"]
        return [{k: v for k, v in h["_source"].items() if k not in ("kind", "bank")} for h in hits]

    def prune(self) -> int:
        """Keep the newest `limit` runs of this bank."""
        with engine_errors("prune consolidation history"):
            hits = self.client.search(index=self.alias, body=recent_runs_body(self.bank, PRUNE_PAGE, self.limit, source=False))["hits"]["hits"]
            if not hits:
                return 0
            lines = [{"delete": {"_index": self.alias, "_id": h["_id"]}} for h in hits]
            self.client.bulk(body=lines, refresh=self.refresh)
        return len(hits)
