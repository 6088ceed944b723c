"""Placement: where scored candidates land on the page. Pure functions over ranked lists.

After scoring: scope_fallback fills go after every scoped result; context anchors are injected
when no result matches the context profile; priority ids go first; then the score floors
(min_score, adaptive floor). After the graph stages: the relative-recency re-rank and time sorts.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace

from scoring.context import ContextProfile, matches_profile
from scoring.floors import apply_score_filter, recency_bias
from scoring.rerank import ScoredCandidate, sort_scored


def priority_first(items: Sequence[ScoredCandidate], ids: Collection[str]) -> list[ScoredCandidate]:
    """priority_ids go first (spec 000), in their ranked order; a stable partition."""
    if not ids:
        return list(items)
    wanted = set(ids)
    return [s for s in items if s.candidate.id in wanted] + [s for s in items if s.candidate.id not in wanted]


def matches(profile: ContextProfile | None, s: ScoredCandidate) -> bool:
    c = s.candidate
    return matches_profile(profile, memory_id=c.id, tags=c.tags, type=c.type)


def place_anchors(
    scoped: Sequence[ScoredCandidate], anchor_only: Collection[str], anchors: Collection[str], profile: ContextProfile | None, limit: int,
) -> tuple[list[ScoredCandidate], bool]:
    """spec 000 "guarantee at least one anchor memory": when none of the first `limit` results matches the
    context profile, up to min(limit, 3) anchors go first. Memories only the anchor arm found are
    dropped otherwise. Returns (ranked, injected)."""
    rest = [s for s in scoped if s.candidate.id not in anchor_only]
    if anchors and not any(matches(profile, s) for s in rest[:limit]):
        picked = [s for s in scoped if s.candidate.id in anchors][: max(1, min(limit, 3))]
        taken = {s.candidate.id for s in picked}
        return picked + [s for s in rest if s.candidate.id not in taken], bool(picked)
    return rest, False


@dataclass
class Placement:
    ranked: list[ScoredCandidate]  # scoped results (floored), then fallback fills
    score_filter: dict | None
    injected: bool


def place(
    ranked: Sequence[ScoredCandidate], *, fallback_ids: Collection[str], anchor_only: Collection[str], anchors: Collection[str],
    profile: ContextProfile | None, priority_ids: Sequence[str], limit: int, sort: str, has_query: bool,
    min_score: float, adaptive_floor: bool,
) -> Placement:
    scoped = [s for s in ranked if s.candidate.id not in fallback_ids]
    fills = [s for s in ranked if s.candidate.id in fallback_ids]
    scoped, injected = place_anchors(scoped, anchor_only, anchors, profile, limit)
    scoped = priority_first(scoped, priority_ids)
    score_filter = None
    if sort == "score" and has_query:
        scoped, score_filter = apply_score_filter(scoped, min_score, adaptive_floor)
        scoped = priority_first(scoped, priority_ids)  # the floor re-sorts
    elif min_score > 0:
        scoped, score_filter = apply_score_filter(scoped, min_score, False)
    return Placement(scoped + [s for s in fills if s.final_score >= min_score], score_filter, injected)


def recency_rerank(items: Sequence[ScoredCandidate], weight: float, fallback_ids: Collection[str], priority_ids: Sequence[str]) -> list[ScoredCandidate]:
    """recency_bias (spec 003): the scoped results re-ranked by relative recency; fills stay last."""
    scoped = recency_bias([s for s in items if s.candidate.id not in fallback_ids], weight)
    return priority_first(scoped + [s for s in items if s.candidate.id in fallback_ids], priority_ids)


def sort_by_time(items: Sequence[ScoredCandidate], sort: str) -> list[ScoredCandidate]:
    """time_* / updated_*: by coalesce(updated_at, timestamp) (spec 000 "Time-Based Sorting"); undated last."""
    def moment(s: ScoredCandidate):
        return s.candidate.updated_at or s.candidate.timestamp

    dated = [s for s in items if moment(s)]
    undated = [s for s in items if not moment(s)]
    return sorted(dated, key=lambda s: moment(s).timestamp(), reverse=sort.endswith("_desc")) + undated


def suppress(items: Sequence[ScoredCandidate], ids: Collection[str], limit: int) -> tuple[list[ScoredCandidate], int]:
    """Session dedupe: memories already returned in this context leave the ranking before the page is
    cut, so they never shorten it. Returns (the rest, how many of them would have been on the page)."""
    if not ids:
        return list(items), 0
    kept: list[ScoredCandidate] = []
    suppressed = 0
    for s in items:
        if s.candidate.id not in ids:
            kept.append(s)
        elif len(kept) < limit:
            suppressed += 1
    return kept, suppressed


def final_floor(items: Sequence[ScoredCandidate], floor: float | None) -> list[ScoredCandidate]:
    """Hindsight's min_scores.final: a post-filter on every returned result (inclusive)."""
    return list(items) if floor is None else [s for s in items if s.final_score >= floor]


# prefer_observations rounds: each round can only remove memories, so this bounds a pathological chain.
MAX_PREFER_ROUNDS = 10


def prefer_observations(items: Sequence[ScoredCandidate], members: Mapping[str, Collection[str]], limit: int) -> list[ScoredCandidate]:
    """Drop every raw memory that an observation on the page (the first `limit`) was consolidated
    from, so the next results move up; `members` maps observation ids to their source memory ids.
    Repeated until the page is stable (a moved-up observation can drop more)."""
    kept = list(items)
    for _ in range(MAX_PREFER_ROUNDS):
        covered = {m for s in kept[:limit] for m in members.get(s.candidate.id, ())}
        dropped = [s for s in kept if s.candidate.id in covered and s.candidate.id not in members]
        if not dropped:
            break
        gone = {s.candidate.id for s in dropped}
        kept = [s for s in kept if s.candidate.id not in gone]
    return kept


def window_boost(items: Sequence[ScoredCandidate], dated: Collection[str], weight: float) -> list[ScoredCandidate]:
    """spec 001 "Temporal Alignment": memories the temporal arm surfaced (dated inside the request's
    window) gain `weight` (SEARCH_WEIGHT_TEMPORAL), reported as the `temporal_window` component;
    then the list is sorted again. The others are untouched: the window is not a filter."""
    if not dated or weight == 0:
        return list(items)
    out = []
    for s in items:
        if s.candidate.id in dated:
            s = replace(s, final_score=s.final_score + weight, components={**s.components, "temporal_window": weight})
        out.append(s)
    return sort_scored(out)
