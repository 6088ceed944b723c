"""HistoryStore: every client call on the consolidation index — each bank's schedule (one control
document per bank) and its recent runs, so a restart, or another replica, sees the same schedule and
history. Every method takes the bank it acts on.

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
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from opensearchpy import OpenSearch
from opensearchpy import exceptions as os_exc

from service.clock.instants import iso, stored_datetime
from service.errors import EngineUnavailable
from service.storage.bulk import ItemError, run_bulk
from service.storage.client import engine_errors

log = logging.getLogger("engram.consolidation")

TASKS = ("decay", "creative", "cluster", "forget")
# The control document's fields: each task's last run, and the last `full` run.
LAST_RUN = {t: f"{t}_last_run" for t in (*TASKS, "full")}
# History entries read back per prune pass.
PRUNE_PAGE = 500


def control_id(bank: str) -> str:
    return f"control:{bank}"


def runs_query(bank: str) -> dict:
    return {"bool": {"filter": [{"term": {"kind": "run"}}, {"term": {"bank": bank}}]}}


def recent_runs_body(bank: str, size: int, offset: int = 0, *, source: bool = True) -> dict:
    return {
        "query": runs_query(bank), "from": offset, "size": size, "_source": source,
        "sort": [{"started_at": {"order": "desc"}}, {"id": "desc"}],
    }


def fresh_control(bank: str, now: datetime) -> dict[str, Any]:
    """A schedule that starts now: every task last ran `now`."""
    return {"kind": "control", "bank": bank, **{f: iso(now) for f in LAST_RUN.values()}}


@dataclass
class Pruned:
    """What a prune did: runs deleted, and each run whose delete failed (a 404 is gone already: neither)."""

    deleted: int = 0
    failed: list[ItemError] = field(default_factory=list)


class HistoryStore:
    def __init__(self, client: OpenSearch, alias: str, limit: int, *, refresh: str = "true"):
        self.client = client
        self.alias = alias
        self.limit = limit
        self.refresh = refresh  # for the run records (WRITE_REFRESH)

    # --- the schedule -----------------------------------------------------------------------
    def control(self, bank: str, now: datetime) -> tuple[dict[str, Any], int, int]:
        """(control document, seq_no, primary_term), created on first use with every last run = now."""
        for _ in range(3):
            with engine_errors("read consolidation control"):
                got = self.client.get(index=self.alias, id=control_id(bank), ignore=[404])
            if got.get("found"):
                return got["_source"], got["_seq_no"], got["_primary_term"]
            doc = {**fresh_control(bank, now), "updated_at": iso(now)}
            with engine_errors("create consolidation control"):
                try:
                    self.client.index(index=self.alias, id=control_id(bank), body=doc, op_type="create")
                except os_exc.ConflictError:
                    pass  # another replica created it first: read theirs
        raise EngineUnavailable("consolidation control document could not be read or created")

    def peek(self, bank: str, now: datetime) -> dict[str, Any]:
        """The control document without creating it: a missing one reads as a schedule that starts now
        (what `control` would create), so reading the status never writes."""
        with engine_errors("read consolidation control"):
            got = self.client.get(index=self.alias, id=control_id(bank), ignore=[404])
        return got["_source"] if got.get("found") else fresh_control(bank, now)

    @staticmethod
    def last_runs(doc: dict[str, Any]) -> dict[str, datetime | None]:
        return {task: stored_datetime(doc.get(field)) for task, field in LAST_RUN.items()}

    def claim(self, bank: str, task: str, doc: dict[str, Any], seq_no: int, primary_term: int, now: datetime) -> bool:
        """Mark `task` as run now, only if nobody rewrote the control document since it was read."""
        claimed = {**doc, LAST_RUN[task]: iso(now), "updated_at": iso(now)}
        with engine_errors("claim consolidation task"):
            try:
                self.client.index(
                    index=self.alias, id=control_id(bank), body=claimed, if_seq_no=seq_no, if_primary_term=primary_term,
                )
            except os_exc.ConflictError:
                return False
        return True

    def mark_ran(self, bank: str, tasks: Sequence[str], when: str, now: datetime) -> None:
        """Record that `tasks` ran at `when` (a manual run: the schedule moves as if they were claimed)."""
        self.control(bank, now)  # a fresh schedule first, so the other tasks are not "due" at once
        fields = {LAST_RUN[t]: when for t in tasks}
        with engine_errors("update consolidation control"):
            self.client.update(index=self.alias, id=control_id(bank), body={"doc": {**fields, "updated_at": when}}, retry_on_conflict=5)

    # --- runs ---------------------------------------------------------------------------------
    def record(self, bank: str, result: dict[str, Any], *, trigger: str, affected: int) -> str:
        run_id = uuid.uuid4().hex
        doc = {
            "kind": "run", "bank": bank, "id": run_id, "mode": result.get("mode"), "task": result.get("mode"),
            "trigger": trigger, "success": bool(result.get("success")), "dry_run": bool(result.get("dry_run")),
            "started_at": result.get("started_at"), "completed_at": result.get("completed_at"),
            "elapsed_ms": result.get("elapsed_ms"), "affected_count": affected, "steps": list(result.get("steps", {})),
            "result": result,
        }
        if result.get("error"):
            doc["error"] = result["error"]
        with engine_errors("record consolidation run"):
            self.client.index(index=self.alias, id=f"run:{run_id}", body=doc, refresh=self.refresh)
        self.prune(bank)
        return run_id

    def recent(self, bank: str, limit: int | None = None) -> list[dict[str, Any]]:
        with engine_errors("read consolidation history"):
            hits = self.client.search(index=self.alias, body=recent_runs_body(bank, limit or self.limit))["hits"]["hits"]
        return [{k: v for k, v in h["_source"].items() if k not in ("kind", "bank")} for h in hits]

    def prune(self, bank: str) -> Pruned:
        """Keep the newest `limit` runs of the bank. A delete that fails is reported per run (logged and
        returned); the run stays and the next prune tries it again."""
        with engine_errors("prune consolidation history"):
            hits = self.client.search(index=self.alias, body=recent_runs_body(bank, PRUNE_PAGE, self.limit, source=False))["hits"]["hits"]
        if not hits:
            return Pruned()
        actions = [{"_op_type": "delete", "_index": self.alias, "_id": h["_id"]} for h in hits]
        outcomes = run_bulk(self.client, actions, what="prune consolidation history", refresh=self.refresh)
        out = Pruned(deleted=sum(1 for o in outcomes if o is None), failed=[o for o in outcomes if o is not None and not o.missing])
        if out.failed:
            log.warning("consolidation history of bank %s: %d of %d old runs were not deleted (first: %s)",
                        bank, len(out.failed), len(actions), out.failed[0])
        return out
