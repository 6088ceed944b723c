"""The engram profile's keyword component (idf mode): the share of the query keywords' IDF mass a
memory's content holds, matched on stems as OpenSearch's `english` analyzer indexes them.

The query side (each keyword's stems and weight) is a `KeywordPlan`, built once per query; each
candidate then costs its content's stem set (cached per content, or stored with the memory) and a
few set lookups.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scoring.keywords import keyword_stems, stemmed_words


@dataclass(frozen=True)
class KeywordPlan:
    """Per keyword with stems: (its stems, its weight); `total` is the sum of the weights."""

    keywords: tuple[tuple[tuple[str, ...], float], ...]
    total: float

    def share(self, words: frozenset[str]) -> float:
        """Share of the weight whose keywords find all their stems in `words`; 0.0 without weight."""
        if self.total <= 0:
            return 0.0
        found = 0.0
        for stems, weight in self.keywords:
            for s in stems:
                if s not in words:
                    break
            else:
                found += weight
        return found / self.total


def keyword_plan(keywords: Sequence[str], idf: Mapping[str, float]) -> KeywordPlan:
    """A keyword missing from `idf` weighs as much as the rarest known keyword (a term the index has
    never seen is maximally informative); with an empty `idf` every keyword weighs 1. Keywords the
    `english` analyzer drops as stop words (no stems) carry no mass."""
    known = [max(0.0, float(value)) for value in idf.values()]
    default_weight = max(known) if known else 1.0
    planned: list[tuple[tuple[str, ...], float]] = []
    total = 0.0
    for keyword in keywords:
        stems = keyword_stems(keyword)
        if not stems:
            continue
        weight = max(0.0, float(idf[keyword])) if keyword in idf else default_weight
        total += weight
        planned.append((stems, weight))
    return KeywordPlan(tuple(planned), total)


def plan_stems(keywords: Sequence[str]) -> tuple[str, ...]:
    """Every stem `keyword_plan(keywords, ...)` tests, sorted, once each: the share of a content is the
    same from the content's stems as from just those of them among these (a recall asks the engine for
    only those: service/recall/lean.py)."""
    return tuple(sorted({s for keyword in keywords for s in keyword_stems(keyword)}))


def planned_share_in_thread(plan: KeywordPlan, content: str | None, thread_context: str | None, weight: float) -> float:
    """`idf_keyword_share_in_thread` for a plan built beforehand."""
    return planned_share_of_stems(plan, stemmed_words(content), stemmed_words(thread_context) if thread_context else None, weight)


def planned_share_of_stems(plan: KeywordPlan, words: frozenset[str], context: frozenset[str] | None, weight: float) -> float:
    """The same from the stem sets of the content and the thread context (a recall's lean hits carry
    them, stored at write time: service/memory/stems.py)."""
    own = plan.share(words)
    if not context or weight <= 0:
        return own
    both = plan.share(words | context)
    return own + min(1.0, weight) * max(0.0, both - own)


def idf_keyword_share(keywords: Sequence[str], content: str | None, idf: Mapping[str, float]) -> float:
    """Share of the keywords' IDF mass found in the content. A keyword counts as found when all its
    stems are in the content's stemmed word set (so `decisions` finds `decision`); see `keyword_plan`
    for the weights. Result in [0, 1]."""
    return keyword_plan(keywords, idf).share(stemmed_words(content))


def idf_keyword_share_in_thread(
    keywords: Sequence[str], content: str | None, thread_context: str | None, idf: Mapping[str, float], weight: float
) -> float:
    """`idf_keyword_share`, where a keyword found only in the memory's thread context (the memory
    before it in its thread) counts `weight` times as much as one found in its own content:
    own + weight x (share over content and context - own). Without context (or weight 0) it is
    `idf_keyword_share` exactly. Result in [0, 1]."""
    return planned_share_in_thread(keyword_plan(keywords, idf), content, thread_context, weight)
