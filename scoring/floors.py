"""After scoring: the adaptive floor, min_score, the relative-recency re-rank, temporal intent
and the content fingerprint used to dedupe multi-query results (spec 000, automem/api/recall.py).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import Any

from scoring.components import as_utc
from scoring.rerank import ScoredCandidate, sort_scored

# automem/api/recall.py adaptive floor: only with more than 3 results ...
ADAPTIVE_MIN_RESULTS = 3
# ... looking for the largest gap among the top max(3, n // 2) scores ...
ADAPTIVE_MIN_WINDOW = 3
# ... cutting only when the gap exceeds 25% of the top score ...
ADAPTIVE_GAP_RATIO = 0.25
# ... and at least ceil(n / 2) results survive ("(len(results) + 1) // 2").

# spec 000 "Relative-Recency Bias" / automem/config.py RECALL_RECENCY_BIAS "auto": words that
# ask about the present. Matched on word boundaries ("snow" is not "now", "currency" is not
# "current"), multi-word phrases with any whitespace between the words.
TEMPORAL_INTENT: tuple[str, ...] = (
    "latest",
    "most recent",
    "recently",
    "current",
    "currently",
    "now",
    "nowadays",
    "today",
    "changed",
    "updated",
    "last time",
    "newest",
    "these days",
    "anymore",
)
_TEMPORAL_INTENT_RE = re.compile(
    r"\b(?:" + "|".join(r"\s+".join(map(re.escape, p.split())) for p in TEMPORAL_INTENT) + r")\b",
    re.IGNORECASE,
)

# automem/api/recall.py `_fingerprint_content`: markdown marks become spaces, non-ASCII is
# dropped, other punctuation becomes spaces, whitespace collapses, and the first 320
# characters are the fingerprint.
FINGERPRINT_LENGTH = 320
_MARKDOWN_MARKS = re.compile(r"[`*_#>~\-]")
_PUNCTUATION = re.compile(r"[^\w\s]")
_WHITESPACE = re.compile(r"\s+")


def adaptive_cut(scores: Sequence[float]) -> int:
    """How many results the adaptive floor keeps (automem/api/recall.py, pinned by its tests).

    With more than 3 scores: find the largest drop between adjacent scores among the top
    max(3, n // 2); when it exceeds 25% of the top score, the floor is the score just below the
    drop and everything at or above it is kept, provided that is at least ceil(n / 2) results.
    Otherwise all are kept. The order of `scores` does not matter.
    """
    floor = adaptive_floor_score(scores)
    return len(scores) if floor is None else _count_at_least(scores, floor)


def _count_at_least(scores: Sequence[float], floor: float) -> int:
    return sum(1 for score in scores if score >= floor)


def adaptive_floor_score(scores: Sequence[float]) -> float | None:
    """The floor the adaptive cut applies (the response's `score_filter.adaptive_floor`), or
    None when it keeps everything."""
    ordered = sorted((float(s) for s in scores), reverse=True)
    n = len(ordered)
    if n <= ADAPTIVE_MIN_RESULTS:
        return None
    window = max(ADAPTIVE_MIN_WINDOW, n // 2)
    max_gap, gap_index = 0.0, -1
    for i in range(1, window):
        gap = ordered[i - 1] - ordered[i]
        if gap > max_gap:
            max_gap, gap_index = gap, i
    if gap_index <= 0 or max_gap <= ADAPTIVE_GAP_RATIO * ordered[0]:
        return None
    floor = ordered[gap_index]
    if _count_at_least(ordered, floor) < (n + 1) // 2:
        return None
    return floor


def apply_score_filter(
    scored: Sequence[ScoredCandidate], min_score: float | None, adaptive: bool
) -> tuple[list[ScoredCandidate], dict[str, Any] | None]:
    """Apply the adaptive floor (when `adaptive`), then `min_score` (when > 0), keeping order.

    Returns the kept results and the response's `score_filter` object
    (`{"min_score", "adaptive_floor", "filtered_count"}`), or None when neither filter was in
    play, as AutoMem omits the object then (automem/api/recall.py).
    """
    results = list(scored)
    before = len(results)
    floor = adaptive_floor_score([s.final_score for s in results]) if adaptive else None
    if floor is not None:
        results = [s for s in results if s.final_score >= floor]
    effective_min = min_score if min_score is not None and min_score > 0 else None
    if effective_min is not None:
        results = [s for s in results if s.final_score >= effective_min]
    if effective_min is None and floor is None:
        return results, None
    return results, {
        "min_score": effective_min,
        "adaptive_floor": floor,
        "filtered_count": before - len(results),
    }


def recency_bias(scored: Sequence[ScoredCandidate], weight: float) -> list[ScoredCandidate]:
    """The relative-recency re-rank (spec 000/001, SEARCH_WEIGHT_TEMPORAL).

    Timestamps are min-max normalised across the candidates that have one (0.0 oldest, 1.0
    newest); each such candidate gains `weight × relative recency` and a `temporal` component,
    and the list is re-sorted. Candidates without a timestamp are left as they are. When the
    weight is not positive or all timestamps are equal, the input comes back unchanged (same
    objects, same order, no `temporal` key).
    """
    items = list(scored)
    if weight <= 0:
        return items
    stamps = {
        index: as_utc(s.candidate.timestamp).timestamp()
        for index, s in enumerate(items)
        if s.candidate.timestamp is not None
    }
    if not stamps:
        return items
    oldest, newest = min(stamps.values()), max(stamps.values())
    spread = newest - oldest
    if spread <= 0:
        return items
    biased: list[ScoredCandidate] = []
    for index, s in enumerate(items):
        if index not in stamps:
            biased.append(s)
            continue
        relative = (stamps[index] - oldest) / spread
        components = dict(s.components)
        components["temporal"] = relative
        biased.append(
            dataclasses.replace(
                s, final_score=s.final_score + weight * relative, components=components
            )
        )
    return sort_scored(biased)


def has_temporal_intent(query: str | None) -> bool:
    """Whether the query asks about the present ("latest", "currently", "what changed", ...)."""
    if not query:
        return False
    return _TEMPORAL_INTENT_RE.search(query) is not None


def content_fingerprint(content: str | None) -> str:
    """Normalised first 320 characters of the content; "" when nothing is left."""
    if not content:
        return ""
    cleaned = _MARKDOWN_MARKS.sub(" ", str(content).lower())
    cleaned = cleaned.encode("ascii", "ignore").decode("ascii")
    cleaned = _PUNCTUATION.sub(" ", cleaned)
    cleaned = _WHITESPACE.sub(" ", cleaned).strip()
    return cleaned[:FINGERPRINT_LENGTH]
