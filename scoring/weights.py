"""Component weights and the recency decay configuration.

Defaults are the spec's (001 Hybrid Search, "Configuration Reference"); the service builds both
objects from its settings (`SEARCH_WEIGHT_*`, `SEARCH_RECENCY_*`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# spec 001 "SEARCH_RECENCY_WINDOW_DAYS": default and fallback for a non-positive window
# (automem/config.py `_positive_or_default(..., 180.0)`).
DEFAULT_RECENCY_WINDOW_DAYS = 180.0
# spec 001 "SEARCH_RECENCY_CURVE": `linear` reaches 0 at the window, `exp` halves every window;
# anything else falls back to linear (automem/config.py SEARCH_RECENCY_CURVE).
RECENCY_CURVES = ("linear", "exp")
DEFAULT_RECENCY_CURVE = "linear"


@dataclass(frozen=True)
class Weights:
    """The ten `SEARCH_WEIGHT_*` weights plus the re-rank's `SEARCH_WEIGHT_TEMPORAL`.

    They are relative contributions (sum 1.95 at the defaults) and the weighted sum is not
    normalised (spec 001, "10-Component Scoring System").
    """

    vector: float = 0.35  # spec 001 SEARCH_WEIGHT_VECTOR
    keyword: float = 0.35  # spec 001 SEARCH_WEIGHT_KEYWORD
    metadata: float = 0.35  # spec 001 SEARCH_WEIGHT_METADATA
    exact: float = 0.20  # spec 001 SEARCH_WEIGHT_EXACT
    importance: float = 0.10  # spec 001 SEARCH_WEIGHT_IMPORTANCE
    confidence: float = 0.05  # spec 001 SEARCH_WEIGHT_CONFIDENCE
    recency: float = 0.10  # spec 001 SEARCH_WEIGHT_RECENCY
    tag: float = 0.20  # spec 001 SEARCH_WEIGHT_TAG
    relation: float = 0.25  # spec 001 SEARCH_WEIGHT_RELATION
    relevance: float = 0.0  # spec 001 SEARCH_WEIGHT_RELEVANCE (0 disables it)
    temporal: float = 0.1  # spec 000/001 SEARCH_WEIGHT_TEMPORAL, used only by the recency re-rank


@dataclass(frozen=True)
class RecencyConfig:
    """Shape of the recency component (spec 001, `SEARCH_RECENCY_WINDOW_DAYS` / `_CURVE`).

    Invalid values are replaced on construction, as AutoMem's config does: a non-positive (or
    non-finite) window becomes 180 days, an unknown curve becomes `linear`.
    """

    window_days: float = DEFAULT_RECENCY_WINDOW_DAYS
    curve: str = DEFAULT_RECENCY_CURVE

    def __post_init__(self) -> None:
        try:
            window = float(self.window_days)
        except (TypeError, ValueError):
            window = DEFAULT_RECENCY_WINDOW_DAYS
        if not math.isfinite(window) or window <= 0:
            window = DEFAULT_RECENCY_WINDOW_DAYS
        curve = str(self.curve or "").strip().lower()
        if curve not in RECENCY_CURVES:
            curve = DEFAULT_RECENCY_CURVE
        object.__setattr__(self, "window_days", window)
        object.__setattr__(self, "curve", curve)
