"""What the earlier steps of one consolidation run planned, as the later steps must see it. Pure.

A run plans every step on the store as it was when the run started, then (unless it is a dry run)
writes every step's plan: so a dry run and the real run plan with the same code on the same data
and cannot disagree. A later step still sees what an earlier one will have done through this
overlay: forget reads decay's new relevance scores, counts the edges creative and cluster write
(and not those of the summaries cluster removes), and examines the summaries cluster writes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field


@dataclass
class Overlay:
    relevance: dict[str, float] = field(default_factory=dict)  # decay: memory -> its new relevance_score
    new_edges: list[tuple[str, str]] = field(default_factory=list)  # (source, target) of edges not stored yet
    docs: dict[str, dict] = field(default_factory=dict)  # memories cluster writes (new or rewritten summaries)
    removed: set[str] = field(default_factory=set)  # memories cluster deletes (stale summaries)
    removed_edges: list[tuple[str, str]] = field(default_factory=list)  # the edges that go with them

    def relationship_delta(self) -> Counter:
        """Per memory: edges the run adds minus edges it removes."""
        delta: Counter = Counter()
        for a, b in self.new_edges:
            delta[a] += 1
            delta[b] += 1
        for a, b in self.removed_edges:
            delta[a] -= 1
            delta[b] -= 1
        return delta

    def stored_relevance(self, memory_id: str, source: dict) -> dict:
        """`source` as forget would read it after decay wrote its new score."""
        if memory_id in self.relevance:
            return {**source, "relevance_score": self.relevance[memory_id]}
        return source

    def pages(self, pages: Iterable[Sequence[tuple[str, dict]]]) -> Iterator[list[tuple[str, dict]]]:
        """A scan in id order as it will read once cluster has written: removed memories dropped,
        rewritten ones replaced, new ones merged in at their place in id order."""
        pending = sorted((mid, doc) for mid, doc in self.docs.items())
        i = 0
        for page in pages:
            out: list[tuple[str, dict]] = []
            for mid, source in page:
                while i < len(pending) and pending[i][0] < mid:
                    out.append(pending[i])
                    i += 1
                if i < len(pending) and pending[i][0] == mid:
                    out.append(pending[i])
                    i += 1
                elif mid not in self.removed:
                    out.append((mid, source))
            if out:
                yield out
        if i < len(pending):
            yield pending[i:]
