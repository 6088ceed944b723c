"""Creative association: non-obvious links between memories of different clusters. Pure.

AutoMem's `discover_creative_associations` samples memories ("REM-like" random activation) and
links pairs by type and cosine: Insight + Pattern above 0.5 "explains", different types above 0.7
"shares_theme", two Decisions below 0.3 become CONTRADICTS, same-week pairs below 0.4
"parallel_context". Here a link must also cross clusters: the two memories sit in different
connected components of the near-duplicate graph (cosine >= the cluster threshold), and their own
cosine lies in the band [CONSOLIDATION_CREATIVE_MIN_SIMILARITY, cluster threshold) — related,
but not two phrasings of one fact. Low-similarity rules (contrast, parallel context) are left out:
without a language model nothing tells a contradiction from an unrelated pair. Every link is a
`DISCOVERED` edge (a system type: readable, never authorable) whose `kind` says why.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

# AutoMem: an Insight and a Pattern that agree (> 0.5) are "explains" with confidence 0.7.
EXPLAINS_TYPES = frozenset({"Insight", "Pattern"})
EXPLAINS_CONFIDENCE = 0.7
# At most this many links per sampled memory (its most similar qualifying partners).
PER_MEMORY = 2


@dataclass(frozen=True)
class Link:
    memory1_id: str
    memory2_id: str
    kind: str
    confidence: float
    similarity: float

    def as_dict(self) -> dict:
        return {
            "memory1_id": self.memory1_id, "memory2_id": self.memory2_id, "type": "DISCOVERED",
            "kind": self.kind, "confidence": self.confidence, "similarity": self.similarity,
        }


def classify(type_a: str | None, type_b: str | None, similarity: float, band: tuple[float, float]) -> tuple[str, float] | None:
    """(kind, confidence) for a cross-cluster pair, or None when its cosine is outside the band."""
    low, high = band
    if not low <= similarity < high:
        return None
    if {type_a, type_b} == EXPLAINS_TYPES:
        return "explains", EXPLAINS_CONFIDENCE
    if (type_a or "") != (type_b or ""):
        return "shares_theme", round(similarity, 6)
    return "bridges_clusters", round(similarity, 6)


def discover(
    sample: Iterable[str],
    neighbours: Mapping[str, list[tuple[str, float]]],
    cluster_of: Mapping[str, str | None],
    types: Mapping[str, str | None],
    linked: set[frozenset[str]],
    band: tuple[float, float],
    *,
    per_memory: int = PER_MEMORY,
    limit: int = 100,
) -> list[Link]:
    """Links from each sampled memory to its best qualifying neighbours, most similar first.

    A pair qualifies when it is in the cosine band, crosses clusters (a cluster of None is unknown:
    no link) and has no edge yet (of any type, either direction). Each pair is reported once, ids in sorted order (so the edge id is the
    same whichever memory was sampled)."""
    seen: set[frozenset[str]] = set()
    out: list[Link] = []
    for a in sample:
        taken = 0
        for b, sim in sorted(neighbours.get(a, ()), key=lambda x: (-x[1], x[0])):
            if taken >= per_memory:
                break
            pair = frozenset((a, b))
            ca, cb = cluster_of.get(a, a), cluster_of.get(b, b)
            if a == b or pair in seen or pair in linked or ca is None or cb is None or ca == cb:
                continue
            verdict = classify(types.get(a), types.get(b), sim, band)
            if verdict is None:
                continue
            seen.add(pair)
            taken += 1
            first, second = sorted((a, b))
            out.append(Link(first, second, verdict[0], verdict[1], round(sim, 6)))
    out.sort(key=lambda link: (-link.similarity, link.memory1_id, link.memory2_id))
    return out[:limit]
