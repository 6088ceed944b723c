"""Manual and scheduled consolidation runs, their history and `GET /consolidate/status`.

A background thread wakes every CONSOLIDATION_TICK_SECONDS (60) and runs each task whose interval
(CONSOLIDATION_{DECAY,CREATIVE,CLUSTER,FORGET}_INTERVAL_SECONDS; 0 = disabled) has passed since its
last run, as AutoMem's ConsolidationScheduler does, for every bank in turn (each bank has its own
schedule, history and runs). The last runs live in the engine (storage/history.py), so a restart keeps the
schedule and replicas share it; one run at a time per process.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

from service.config import Settings
from service.consolidation.runner import Consolidator, affected_count
from service.clock.instants import iso
from service.errors import EngineUnavailable
from service.observability.outage import Outage
from service.storage.history import TASKS, HistoryStore

log = logging.getLogger("engram.consolidation")


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def next_run_text(interval_s: int, last_run: datetime | None, now: datetime) -> str:
    """AutoMem get_next_runs: "Disabled", "Due now", "In N day(s)" or "In N hour(s)"."""
    if interval_s <= 0:
        return "Disabled"
    if last_run is None:
        return "Due now"
    next_run = last_run + timedelta(seconds=interval_s)
    if next_run <= now:
        return "Due now"
    until = next_run - now
    return f"In {until.days} day(s)" if until.days > 0 else f"In {until.seconds // 3600} hour(s)"


def tasks_for_mode(mode: str) -> list[str]:
    """The control fields a run of `mode` refreshes (AutoMem runtime_helpers.tasks_for_mode)."""
    return [*TASKS, "full"] if mode == "full" else [mode]


def due_tasks(intervals: dict[str, int], last_runs: dict[str, datetime | None], now: datetime) -> list[str]:
    return [
        t for t in TASKS
        if intervals.get(t, 0) > 0 and (last_runs.get(t) is None or now - last_runs[t] >= timedelta(seconds=intervals[t]))
    ]


class ConsolidationService:
    def __init__(
        self, settings: Settings, consolidator: Consolidator, history: HistoryStore,
        publish: Callable[..., None] | None = None, banks: Callable[[], list[str]] | None = None,
    ):
        self.settings = settings
        self.consolidator = consolidator
        self.history = history
        self.publish = publish or (lambda _type, _data, bank=None: None)
        # Every bank the scheduler consolidates (the bank registry's list); the default bank alone when not given.
        self.banks = banks or (lambda: [settings.default_bank])
        self.intervals = {
            "decay": settings.consolidation_decay_interval_seconds,
            "creative": settings.consolidation_creative_interval_seconds,
            "cluster": settings.consolidation_cluster_interval_seconds,
            "forget": settings.consolidation_forget_interval_seconds,
        }
        self._run_lock = threading.Lock()
        self.outage = Outage(log, what="consolidation scheduler", waiting="due tasks run when it is back")
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # --- runs ---------------------------------------------------------------------------------
    def run(self, bank: str, mode: str, dry_run: bool, *, trigger: str = "manual", decay_threshold: float | None = None) -> dict[str, Any]:
        """One run on `bank` alone: its memories, its edges, its schedule and history."""
        history = self.history
        started = time.perf_counter()
        with self._run_lock:
            result = self.consolidator.run(bank, mode, dry_run, decay_threshold=decay_threshold)
        affected = affected_count(result)
        if not dry_run:
            # AutoMem persists real runs only: a dry run changes nothing, its history included.
            history.record(bank, result, trigger=trigger, affected=affected)
            if result.get("success") and trigger == "manual":  # a scheduled run's claim already moved the schedule
                history.mark_ran(bank, tasks_for_mode(mode), result["completed_at"], utcnow())
        elapsed = round((time.perf_counter() - started) * 1000, 1)
        log.info("consolidation_run", extra={
            "mode": mode, "trigger": trigger, "dry_run": dry_run, "success": result.get("success"),
            "affected_count": affected, "latency_ms": elapsed, "steps": list(result.get("steps", {})),
            "changes": result.get("changes", {}), "bank": bank,
        })
        self.publish("consolidation.run", {
            "task_type": mode, "affected_count": affected, "elapsed_ms": elapsed, "success": bool(result.get("success")),
            "next_scheduled": self.next_runs(bank, utcnow()).get(mode, "unknown"), "steps": list(result.get("steps", {})),
            "dry_run": dry_run, "trigger": trigger, "changes": result.get("changes", {}),
        }, bank=bank)
        return result

    def tick(self, now: datetime | None = None) -> list[dict[str, Any]]:
        """Run every due task of every bank once; a task another replica claimed first is left to it.
        EngineUnavailable after the others when a bank's tick met the engine away."""
        now = now or utcnow()
        results, away = [], None
        for bank in self.banks():
            try:
                results += self.tick_bank(bank, now)
            except EngineUnavailable as exc:  # the others still run; the tick then reports it once
                away = away or EngineUnavailable(f"bank {bank}: {exc}")
            except Exception:  # noqa: BLE001 - one bank's failure must not starve the others
                log.exception("consolidation tick of bank %s failed", bank)
        if away is not None:
            raise away
        return results

    def tick_bank(self, bank: str, now: datetime) -> list[dict[str, Any]]:
        history = self.history
        results = []
        doc, seq_no, term = history.control(bank, now)
        for task in due_tasks(self.intervals, history.last_runs(doc), now):
            if not history.claim(bank, task, doc, seq_no, term, now):
                log.info("consolidation %s of bank %s: claimed by another replica", task, bank)
                doc, seq_no, term = history.control(bank, now)
                continue
            threshold = self.settings.consolidation_decay_importance_threshold if task == "decay" else None
            results.append(self.run(bank, task, False, trigger="scheduled", decay_threshold=threshold))
            doc, seq_no, term = history.control(bank, now)
        return results

    # --- status -------------------------------------------------------------------------------
    def next_runs(self, bank: str, now: datetime) -> dict[str, str]:
        last = self.history.last_runs(self.history.peek(bank, now))
        return {t: next_run_text(self.intervals[t], last.get(t), now) for t in TASKS}

    def status(self, bank: str) -> dict[str, Any]:
        now = utcnow()
        history = self.history
        last = history.last_runs(history.peek(bank, now))
        schedule = {
            t: {
                "interval_seconds": self.intervals[t], "last_run": iso(last[t]) if last.get(t) else None,
                "next_run": iso(last[t] + timedelta(seconds=self.intervals[t])) if last.get(t) and self.intervals[t] > 0 else None,
            }
            for t in TASKS
        }
        return {
            "status": "success",
            "next_runs": {t: next_run_text(self.intervals[t], last.get(t), now) for t in TASKS},
            "history": history.recent(bank),
            "thread_alive": self.thread_alive,
            "tick_seconds": self.settings.consolidation_tick_seconds,
            "schedule": schedule,
        }

    # --- the background thread ------------------------------------------------------------------
    @property
    def thread_alive(self) -> bool:
        return bool(self._thread and self._thread.is_alive())

    def start(self) -> None:
        if self.settings.consolidation_tick_seconds <= 0 or self.thread_alive:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="consolidation-scheduler", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _loop(self) -> None:
        """A tick every CONSOLIDATION_TICK_SECONDS, the first one a tick after start-up (AutoMem also
        ticks at once; waiting keeps start-up and short-lived processes free of engine work)."""
        log.info("consolidation scheduler started (tick %s s)", self.settings.consolidation_tick_seconds)
        while not self._stop.wait(self.settings.consolidation_tick_seconds):
            try:
                with self.outage.quiet():
                    self.tick()
                self.outage.recovered()
            except EngineUnavailable as exc:  # an outage (or a store being dropped): a line when it starts and ends
                self.outage.failed(str(exc))  # the tick is the pace: no back-off of its own
            except Exception:  # noqa: BLE001 - a failed tick is retried at the next one
                log.exception("consolidation scheduler tick failed")


def build_consolidation(
    settings: Settings, client, memories, edges, writer, publish: Callable[..., None] | None = None,
    banks: Callable[[], list[str]] | None = None,
) -> ConsolidationService:
    """The consolidation service over the app's stores (one call in the lifespan); `banks` lists the
    banks the scheduler consolidates (the default bank alone when not given)."""
    from service.consolidation.engine import ConsolidationIO

    io = ConsolidationIO(memories, edges, writer, settings.excluded_types)
    history = HistoryStore(client, settings.consolidation_alias, settings.consolidation_history_limit, refresh=settings.write_refresh)
    return ConsolidationService(settings, Consolidator(settings, io), history, publish, banks)
