"""What the enrichment worker reports: AutoMem's EnrichmentStats, and the parts of its status that
describe the local pipeline (rules and gazetteers: no language model, no paid API)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from service.memory.types import classification_counts


@dataclass
class EnrichmentStats:
    """AutoMem's EnrichmentStats fields, plus what an offline batch worker can also tell."""

    processed_total: int = 0
    successes: int = 0
    failures: int = 0
    last_success_id: str | None = None
    last_success_at: str | None = None
    last_error: str | None = None
    last_error_at: str | None = None
    skipped: int = 0  # already enriched for this content, or deleted
    cancelled: int = 0  # content changed during the run: the stale result was dropped
    conflicts_replanned: int = 0  # another write (not to the content) landed: planned again on the new version
    dropped: int = 0  # queue full: left pending in the engine for a later scan
    entities: int = 0
    similar_edges: int = 0
    preceded_edges: int = 0
    edges_taken_back: int = 0  # written, then an end was found deleted meanwhile: removed again
    busy_seconds: float = 0.0
    paced_seconds: float = 0.0  # rests while clients were served (ENRICHMENT_DUTY_WHILE_SERVING)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        # Per worker thread: busy_seconds adds up the threads' busy time.
        out["memories_per_worker_second"] = round(self.successes / self.busy_seconds, 1) if self.busy_seconds else None
        out["busy_seconds"] = round(self.busy_seconds, 3)
        out["paced_seconds"] = round(self.paced_seconds, 3)
        return out


# The status fields that name one memory (or its error): reported for the asking bank only.
BANK_FIELDS = ("last_success_id", "last_success_at", "last_error", "last_error_at")


class Tally:
    """The worker threads' shared EnrichmentStats, and each bank's last success and error
    (GET /enrichment/status names no memory of another bank), behind one lock."""

    def __init__(self) -> None:
        self.stats = EnrichmentStats()
        self._last: dict[str, dict[str, str | None]] = {}
        self._lock = threading.Lock()

    def add(self, bank: str | None = None, last: Mapping[str, str | None] | None = None, **counts: float) -> None:
        """Add `counts` to the stats' fields; with `bank`, record `last` as that bank's last outcome."""
        with self._lock:
            for name, value in counts.items():
                setattr(self.stats, name, getattr(self.stats, name) + value)
            if bank is not None and last:
                self._last.setdefault(bank, {}).update(last)

    def totals(self, *names: str) -> dict[str, Any]:
        with self._lock:
            return {name: getattr(self.stats, name) for name in names}

    def report(self, bank: str) -> dict[str, Any]:
        """The stats, with the last success and error of `bank` only."""
        with self._lock:
            return {**self.stats.to_dict(), **dict.fromkeys(BANK_FIELDS), **self._last.get(bank, {})}


def local_pipeline_status() -> dict[str, Any]:
    """Classification, circuit and extractor of GET /enrichment/status."""
    counts = classification_counts()
    return {
        # Type classification runs on every write, by rules only: no language model is tried,
        # so there are no LLM attempts, successes or fallbacks to one.
        "classification": {
            "llm_attempts": 0, "llm_successes": 0, "fallbacks": counts["fallbacks"],
            "pattern_classifications": counts["pattern_classifications"], "last_error": None, "last_error_at": None,
            "classifier": "rules",
        },
        # The quota circuit guards a paid extraction API; the extractor here is local, so it never opens.
        "circuit": {"open": False, "circuit_open_skips": 0, "recoveries": 0},
        "extractor": "rules+gazetteers",
    }
