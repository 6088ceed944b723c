"""The memories a recall has seen: each query's outcome, and the pool of every hit and extra memory
(chain heads, expanded memories, relations) the later stages read and the response shapes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from scoring.rerank import Candidate, ScoredCandidate, ScoringRequest
from service.filters import clauses as C
from service.graph import current_state as state
from service.graph.expansion import COSINE_KEY
from service.recall import queries as Q, retrieval
from service.recall.retrieval import Hit


@dataclass
class QueryOutcome:
    """What one query (of possibly several) produced."""

    ranked: list[ScoredCandidate]
    keywords: list[str]
    vector_search: dict
    retrieved: retrieval.Retrieved
    score_filter: dict | None
    injected: bool
    # What later stages need to score memories the arms did not return (expansion, chain heads).
    scoring: ScoringRequest | None = None
    vector: list[float] | None = None

    @property
    def hits(self) -> dict[str, Hit]:
        return self.retrieved.hits


@dataclass
class Pool:
    """Every memory the recall has seen, once: the arms' hits across queries and what the graph stages
    add (sources of chain heads and expanded memories, relations, state_replaces, expanded_from_entity)."""

    hits: dict[str, Hit]
    fallback_ids: set[str]
    extras: dict[str, dict] = field(default_factory=dict)

    @classmethod
    def of(cls, outcomes: Sequence[QueryOutcome]) -> Pool:
        hits: dict[str, Hit] = {}
        for o in outcomes:
            hits.update(o.hits)
        return cls(hits, {mid for mid, h in hits.items() if h.only_fallback})

    def source(self, mid: str) -> dict:
        extra = self.extras.get(mid, {})
        return extra.get("source") or (self.hits[mid].source if mid in self.hits else {})

    @property
    def sources(self) -> dict[str, dict]:
        return {mid: self.source(mid) for mid in {*self.hits, *self.extras}}


def make_expanded(items: Sequence[tuple[str, dict]], match_type: str, relation: Mapping[str, float]) -> list[Candidate]:
    """The expander's candidates (graph.expansion.MakeCandidates): each its own copy of the source."""
    return [candidate_of(mid, dict(source), match_type, relation.get(mid, 0.0)) for mid, source in items]


def candidate_of(mid: str, source: dict, match_type: str, relation: float = 0.0) -> Candidate:
    """A memory the arms did not return (chain head, expanded memory); its cosine came as a script field."""
    return Hit(mid, source, cosine=source.get(COSINE_KEY)).candidate(match_type, relation)


def arms_of(s: ScoredCandidate, pool: Pool) -> list[str]:
    """The arms that surfaced a result; `graph` for what expansion added, `state` for a chain head."""
    mid = s.candidate.id
    if mid in pool.hits:
        return sorted(pool.hits[mid].arms)
    return ["state"] if s.candidate.match_type == state.STATE_REPLACEMENT else ["graph"]


def observation_members(ranked: Sequence[ScoredCandidate], pool: Pool) -> dict[str, list[str]]:
    """Observation (MetaPattern) id -> the memories consolidation summarised in it."""
    return {s.candidate.id: Q.observation_sources(pool.source(s.candidate.id)) for s in ranked if s.candidate.type == C.OBSERVATION_TYPE}
