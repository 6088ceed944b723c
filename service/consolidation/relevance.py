"""The decay formula (`relevance_score`) and the forgetting rules. Pure: no I/O, no clock.

AutoMem's `MemoryConsolidator.calculate_relevance_score` (consolidation.py), term for term:

    relevance = exp(-BASE_DECAY_RATE * age_days)                          age
              * (0.3 + 0.3 * access_factor)                               access
              * (1 + 0.3 * ln(1 + relationship_count))                    relationships
              * (0.5 + importance)                                        importance, 0.5 .. 1.5
              * (0.7 + 0.3 * confidence)                                  confidence, 0.7 .. 1.0
    access_factor = 1                                   when last accessed less than a day ago
                  = exp(-0.05 * days_since_last_access) otherwise
    relevance = min(1, max(relevance, importance * IMPORTANCE_FLOOR_FACTOR))

`age_days` counts fractional days from `timestamp`; `days_since_last_access` from
`last_accessed`, falling back to `timestamp` (a memory never recalled decays from its creation).
BASE_DECAY_RATE is CONSOLIDATION_BASE_DECAY_RATE (0.01/day: a half-life of 69 days for the age
term) and IMPORTANCE_FLOOR_FACTOR CONSOLIDATION_IMPORTANCE_FLOOR_FACTOR (0.3: a memory of
importance 0.8 never falls below 0.24). Missing or non-numeric importance and confidence count as
0.5, the write-time default of importance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from service.memory.limits import finite_number

# AutoMem consolidation.py calculate_relevance_score: the fixed constants of the formula.
ACCESS_FRESH_DAYS = 1.0  # accessed within a day: full access factor
ACCESS_DECAY_RATE = 0.05  # per day since the last access
ACCESS_BASE = 0.3
ACCESS_WEIGHT = 0.3  # "access contributes 30%"
RELATIONSHIP_PRESERVATION = 0.3  # "extra weight for connected memories"
IMPORTANCE_BASE = 0.5  # importance scales the score from 0.5x to 1.5x
CONFIDENCE_BASE = 0.7
CONFIDENCE_WEIGHT = 0.3  # "confidence adds up to 30%"
DEFAULT_FACTOR_VALUE = 0.5  # missing importance / confidence

# AutoMem _apply_decay's distribution buckets of the new scores.
HIGH, MEDIUM, LOW = 0.7, 0.3, 0.1
SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True)
class DecayConfig:
    base_decay_rate: float = 0.01
    importance_floor_factor: float = 0.3


@dataclass(frozen=True)
class ForgetConfig:
    """AutoMem's forgetting thresholds and protections (CONSOLIDATION_* settings). A threshold of
    0.0 disables that action, as in AutoMem's deployed defaults."""

    archive_threshold: float = 0.0
    delete_threshold: float = 0.0
    grace_period_days: int = 90
    importance_protection_threshold: float = 0.7
    protected_types: frozenset[str] = frozenset({"Decision", "Insight"})


@dataclass(frozen=True)
class MemoryFacts:
    """What consolidation reads of one memory."""

    id: str
    timestamp: datetime | None = None
    last_accessed: datetime | None = None
    importance: float | None = None
    confidence: float | None = None
    relationships: int = 0
    stored_relevance: float | None = None
    type: str | None = None
    protected: bool = False
    protected_reason: str | None = None


def _unit(value: float | None) -> float:
    number = finite_number(value)
    return DEFAULT_FACTOR_VALUE if number is None else number


def _days(later: datetime, earlier: datetime | None) -> float:
    if earlier is None:
        return 0.0
    return max(0.0, (later - earlier).total_seconds() / SECONDS_PER_DAY)


def relevance_factors(m: MemoryFacts, now: datetime, cfg: DecayConfig) -> dict[str, float]:
    """Each factor of the formula, for the score and for explaining it."""
    importance, confidence = _unit(m.importance), _unit(m.confidence)
    since_access = _days(now, m.last_accessed or m.timestamp)
    access = 1.0 if since_access < ACCESS_FRESH_DAYS else math.exp(-ACCESS_DECAY_RATE * since_access)
    return {
        "age": math.exp(-cfg.base_decay_rate * _days(now, m.timestamp)),
        "access": ACCESS_BASE + ACCESS_WEIGHT * access,
        "relationships": 1.0 + RELATIONSHIP_PRESERVATION * math.log1p(max(m.relationships, 0)),
        "importance": IMPORTANCE_BASE + importance,
        "confidence": CONFIDENCE_BASE + CONFIDENCE_WEIGHT * confidence,
        "floor": importance * cfg.importance_floor_factor,
    }


def relevance_score(m: MemoryFacts, now: datetime, cfg: DecayConfig) -> float:
    f = relevance_factors(m, now, cfg)
    raw = f["age"] * f["access"] * f["relationships"] * f["importance"] * f["confidence"]
    return min(1.0, max(raw, f["floor"]))


def bucket(score: float) -> str:
    """AutoMem's decay distribution: high > 0.7, medium > 0.3, low > 0.1, else archive."""
    if score > HIGH:
        return "high"
    if score > MEDIUM:
        return "medium"
    if score > LOW:
        return "low"
    return "archive"


def protection(m: MemoryFacts, now: datetime, cfg: ForgetConfig) -> str | None:
    """Why a memory may not be archived or deleted (AutoMem _should_protect_memory), or None."""
    if m.protected:
        return m.protected_reason or "explicitly protected"
    importance = _unit(m.importance)
    if importance >= cfg.importance_protection_threshold:
        return f"high importance ({importance:.2f} >= {cfg.importance_protection_threshold})"
    if m.timestamp is not None:
        age = (now - m.timestamp).days
        if age < cfg.grace_period_days:
            return f"within grace period ({age} < {cfg.grace_period_days} days)"
    if m.type and m.type in cfg.protected_types:
        return f"protected type: {m.type}"
    return None


def fate(m: MemoryFacts, relevance: float, now: datetime, cfg: ForgetConfig) -> tuple[str | None, str | None]:
    """(action, protection): action is "delete", "archive" or None (keep); protection is the reason
    the action is blocked, or None.

    A memory is forgotten only when its relevance *stays* below a threshold: the score computed
    now and the score the last decay stored (when there is one) are both below it, so one
    computation cannot forget a memory whose stored relevance says otherwise."""

    def below(threshold: float) -> bool:
        if threshold <= 0.0:
            return False
        stored = m.stored_relevance
        return relevance < threshold and (stored is None or not math.isfinite(stored) or stored < threshold)

    action = "delete" if below(cfg.delete_threshold) else "archive" if below(cfg.archive_threshold) else None
    return action, (protection(m, now, cfg) if action else None)
