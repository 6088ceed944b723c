"""What the enrichment worker reports: AutoMem's EnrichmentStats, and the parts of its status that
describe the local pipeline (rules and gazetteers: no language model, no paid API)."""

from __future__ import annotations

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
