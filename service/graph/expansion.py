"""Relation and entity expansion (spec 000 "Graph Expansion", spec 001 "Multi-Hop Reasoning").

Round trips, whatever the number of seeds:
  relation expansion  1. the edges index: every seed's own relations (its newest edges of any type)
                         and the newest `relation_limit` expandable edges of EVERY seed, one search
                         (EdgeStore.newest_per_memory_search: a `terms` query, one top_hits bucket per
                         seed) the caller sends in its page read's _msearch (`seed_edge_searches`);
                      2. the memories index: every candidate target in one search, under the same
                         filters as the seeds (time window, exclude_tags, state; the tag scope only with
                         expand_respect_tags) and expand_min_importance;
  entity expansion    3. the memories index: up to 5 entities x 5 memories in one search (one top_hits
                         bucket per entity);
  relations           4. the edges index: the relations of returned memories that have none yet (the
                         entity-expanded ones), one request.
AutoMem runs one Cypher query per seed and one vector search per entity.

The selection rules (per-seed cap, total cap, bridges, entity order) are pure functions below.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scoring.rerank import Candidate, ScoredCandidate, ScoringRequest, score_candidate, sort_scored
from service.graph.registry import EXPANDABLE_TYPES
from service.filters.scripts import cosine_fields, with_cosine
from service.memory.tags import unaccented
from service.storage.edges import EdgeStore
from service.storage.memories import MemoryStore
from service.filters.clauses import IMPORTANCE_SORT, WHOLE_SOURCE

# AutoMem recall.py `_expand_related_memories(seed_score_boost=0.25)`: relation component =
# edge strength + 0.25 x the seed's final score.
SEED_SCORE_BOOST = 0.25
# AutoMem recall.py `_expand_entity_memories`: `list(entities)[:5]`, `limit_per_entity=5`, and the
# flat `final_score + 0.15` / components["entity_expansion"] = 0.15 (spec 001).
ENTITY_LIMIT = 5
PER_ENTITY = 5
ENTITY_BONUS = 0.15
# spec 000 "Expansion Response Fields": entities_found lists up to 10 names.
ENTITIES_FOUND_MAX = 10
RELATION = "relation"
ENTITY_EXPANSION = "entity_expansion"
# Expanded memories get their cosine as a script field (filters.scripts.with_cosine), stashed in the
# source under COSINE_KEY for make_candidates; vectors never travel.
COSINE_KEY = "_cosine"
# Candidate targets fetched at most (in traversal order): the engine's index.max_result_window
# (10,000). Only reachable with limit 100 x relation_limit 200; the first 10,000 are plenty for
# an expansion_limit of at most 500.
MAX_TARGET_FETCH = 10_000

# make_candidates([(id, source)], match_type, {id: relation score}) -> Candidates (cosine from
# COSINE_KEY when the query has a vector), match_type and relation component set.
MakeCandidates = Callable[[Sequence[tuple[str, dict]], str, Mapping[str, float]], list[Candidate]]


# --- relation expansion: pure ----------------------------------------------------------------------
@dataclass
class Reach:
    """How a target was reached: every edge from every seed (a bridge has several seeds)."""

    target: str
    relations: list[dict] = field(default_factory=list)
    best_by_seed: dict[str, float] = field(default_factory=dict)
    best_seed_score: float = 0.0

    @property
    def relation_score(self) -> float:
        # spec 001 "Bridge scoring: ... the sum of its relationship strengths to all seed memories";
        # the seed term is AutoMem's 0.25 x seed score, from the strongest seed.
        return sum(self.best_by_seed.values()) + SEED_SCORE_BOOST * max(self.best_seed_score, 0.0)


def candidate_edges(seeds: Sequence[tuple[str, float]], edges_by_seed: Mapping[str, Sequence[dict]]) -> list[tuple[str, float, str, dict]]:
    """(seed, seed score, other end, edge) in traversal order: seeds by rank, each seed's edges newest
    first. Edges back into the seed set are skipped (AutoMem: `related_id in seen_ids`)."""
    seed_ids = {sid for sid, _ in seeds}
    out = []
    for sid, score in seeds:
        for e in edges_by_seed.get(sid, ()):
            other = e["target_id"] if e["source_id"] == sid else e["source_id"]
            if other != sid and other not in seed_ids:
                out.append((sid, score, other, e))
    return out


def select_relation_targets(order: Sequence[tuple[str, float, str, dict]], passed: set[str], limit: int) -> dict[str, Reach]:
    """Targets that passed the filters, at most `limit` distinct ones, in traversal order. Once the cap
    is reached no new target is taken, but edges to targets already taken still count (bridges)."""
    reached: dict[str, Reach] = {}
    for sid, score, other, e in order:
        if other not in passed:
            continue
        reach = reached.get(other)
        if reach is None:
            if len(reached) >= limit:
                continue
            reach = reached[other] = Reach(other)
        strength = float(e.get("strength") or 0.0)
        reach.relations.append({
            "type": e["type"], "strength": strength, "from": sid, "seed_score": round(score, 6),
            "direction": "outgoing" if e["source_id"] == sid else "incoming",
        })
        reach.best_by_seed[sid] = max(reach.best_by_seed.get(sid, 0.0), strength)
        reach.best_seed_score = max(reach.best_seed_score, score)
    return reached


def relation_targets_query(ids: Sequence[str], flt: dict, min_importance: float, vector: Sequence[float] | None = None) -> dict:
    filters: list[dict] = [flt, {"ids": {"values": list(ids)}}]
    if min_importance > 0:
        filters.append({"range": {"importance": {"gte": min_importance}}})
    return with_cosine({"size": len(ids), "_source": WHOLE_SOURCE, "query": {"bool": {"filter": filters}}}, vector)


def source_with_cosine(hit: dict) -> dict:
    """The hit's source, carrying its script-field cosine (if any) under COSINE_KEY."""
    source = hit["_source"]
    cosine = hit.get("fields", {}).get("cosine")
    if cosine and cosine[0] is not None:
        source[COSINE_KEY] = float(cosine[0])
    return source


# --- entity expansion: pure ----------------------------------------------------------------------------
def entity_key(name: str) -> str:
    """One spelling per entity: `entity:people:rachel-green` and metadata "Rachel Green" are one person
    (AutoMem turns slugs into names with `.replace("-", " ")`)."""
    return " ".join(name.replace("-", " ").replace("_", " ").split()).lower()


def entity_spellings(*keys: str) -> list[str]:
    """The forms stored in `entities` (service.memory.tags.entity_names) of one entity known by `keys`:
    each name, its tag slug, and each without accents (a tag's slug has none, metadata keeps them)."""
    forms = (form for key in keys for form in (key, unaccented(key)))
    return list(dict.fromkeys(s for form in forms for s in (form, form.replace(" ", "-"), form.replace(" ", "_"))))


def collect_entities(sources: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Entity names of the seeds and relation-expanded memories, in result order, deduplicated —
    every type (people, places, organizations, tools, ...), not only people as AutoMem does. One name
    with and without its accents is one entity ("jurgen" from its tag, "jürgen" from metadata), named
    as written, with its accents: name -> every spelling seen, in the order names were first seen."""
    found: dict[str, list[str]] = {}  # unaccented -> spellings
    for source in sources:
        for name in source.get("entities") or ():
            key = entity_key(str(name))
            if key:
                spellings = found.setdefault(unaccented(key), [])
                if key not in spellings:
                    spellings.append(key)
    return {next((s for s in spellings if s != plain), spellings[0]): spellings for plain, spellings in found.items()}


def entity_query(
    entities: Mapping[str, Sequence[str]], flt: dict, exclude_ids: Sequence[str], text: str | None, per_entity: int,
    vector: Sequence[float] | None = None,
) -> dict:
    """ONE search for all entities (name -> its spellings, collect_entities): a bucket per entity whose
    top_hits are its memories, the ones matching the query text first, then by importance and recency."""
    spellings = list(dict.fromkeys(s for keys in entities.values() for s in entity_spellings(*keys)))
    query: dict[str, Any] = {"bool": {"filter": [flt, {"terms": {"entities": spellings}}]}}
    if exclude_ids:
        query["bool"]["must_not"] = [{"ids": {"values": list(exclude_ids)}}]
    if text:
        query["bool"]["should"] = [{"match": {"content": {"query": text}}}]
    sort: list[Any] = (["_score"] if text else []) + IMPORTANCE_SORT
    buckets = {e: {"terms": {"entities": entity_spellings(*keys)}} for e, keys in entities.items()}
    top: dict[str, Any] = {"size": per_entity, "sort": sort, "_source": WHOLE_SOURCE}
    if vector is not None:
        top["script_fields"] = cosine_fields(vector)
    return {"size": 0, "query": query, "aggs": {"per_entity": {"filters": {"filters": buckets}, "aggs": {"top": {"top_hits": top}}}}}


def select_entity_hits(entities: Sequence[str], buckets: Mapping[str, Sequence[dict]], seen: set[str], limit: int) -> list[tuple[str, dict, str]]:
    """(id, source, entity) in entity order; a memory found through two entities counts once, for the first."""
    out: list[tuple[str, dict, str]] = []
    taken = set(seen)
    for entity in entities:
        for hit in buckets.get(entity, ()):
            if len(out) >= limit:
                return out
            if hit["_id"] not in taken:
                taken.add(hit["_id"])
                out.append((hit["_id"], source_with_cosine(hit), entity))
    return out


def relations_of(mid: str, edges: Sequence[dict]) -> list[dict]:
    """A memory's edges as its result's `relations`: type, strength, the other memory, direction."""
    return [
        {
            "type": e["type"], "strength": e.get("strength"),
            "id": e["target_id"] if e["source_id"] == mid else e["source_id"],
            "direction": "outgoing" if e["source_id"] == mid else "incoming",
        }
        for e in edges
    ]


# --- the stage ----------------------------------------------------------------------------------------
@dataclass
class ExpansionOutcome:
    relation: list[ScoredCandidate] = field(default_factory=list)
    entity: list[ScoredCandidate] = field(default_factory=list)
    extras: dict[str, dict] = field(default_factory=dict)  # id -> source, relations, expanded_from_entity
    response: dict[str, Any] = field(default_factory=dict)  # `expansion` / `entity_expansion`
    # The seeds' own relations (what `hydrate` returns), read with their expansion edges.
    seed_relations: dict[str, list[dict]] = field(default_factory=dict)

    @property
    def results(self) -> list[ScoredCandidate]:
        return self.relation + self.entity


@dataclass(frozen=True)
class ExpansionRequest:
    relations: bool
    entities: bool
    relation_limit: int
    expansion_limit: int
    min_importance: float
    min_strength: float
    respect_tags: bool
    min_score: float
    text: str | None
    vector: Sequence[float] | None = None


class GraphExpander:
    def __init__(self, memories: MemoryStore, edges: EdgeStore):
        self.memories = memories
        self.edges = edges

    def expand(
        self,
        bank: str,
        req: ExpansionRequest,
        seeds: Sequence[ScoredCandidate],
        seed_edges: Sequence[dict],
        source_of: Callable[[str], dict],
        flt: dict,
        scoring: ScoringRequest,
        make_candidates: MakeCandidates,
    ) -> ExpansionOutcome:
        """`seed_edges` are the answers to `seed_edge_searches` of (at least) the seeds' ids;
        `source_of(id)` is a seed's source ({} when unknown); `flt` is the filter expanded memories
        must pass (seeds' filters, strictly current state, the tag scope only with
        expand_respect_tags). Seeds are never filtered here."""
        out = ExpansionOutcome()
        seen = {s.candidate.id for s in seeds}
        budget = req.expansion_limit
        if req.relations:
            reached = self._relation_targets(req, seeds, seed_edges, flt, out)
            out.relation = self._score(
                [(mid, source) for mid, (_, source) in reached.items()], RELATION, scoring, make_candidates,
                relation={mid: reach.relation_score for mid, (reach, _) in reached.items()}, min_score=req.min_score,
            )
            for s in out.relation:
                reach, source = reached[s.candidate.id]
                out.extras[s.candidate.id] = {"source": source, "relations": reach.relations}
            seen |= {s.candidate.id for s in out.relation}
            budget -= len(out.relation)  # spec 001: RECALL_EXPANSION_LIMIT caps bridges + entities together
            out.response["expansion"] = {
                "enabled": True, "seed_count": len(seeds), "expanded_count": len(out.relation),
                "relation_limit": req.relation_limit, "expansion_limit": req.expansion_limit, "respect_tags": req.respect_tags,
            }
        if req.entities:
            entity_sources = [source_of(s.candidate.id) for s in seeds] + [out.extras[s.candidate.id]["source"] for s in out.relation]
            spelled = collect_entities(entity_sources)
            entities = list(spelled)
            searched = {e: spelled[e] for e in entities[:ENTITY_LIMIT]}
            picked = self._entity_hits(req, searched, flt, seen, budget) if budget > 0 and entities else []
            picked_sources = {mid: (source, entity) for mid, source, entity in picked}
            out.entity = self._score(
                [(mid, source) for mid, source, _ in picked], ENTITY_EXPANSION, scoring, make_candidates,
                bonus=ENTITY_BONUS, min_score=req.min_score,
            )
            for s in out.entity:
                source, entity = picked_sources[s.candidate.id]
                out.extras[s.candidate.id] = {"source": source, "expanded_from_entity": entity}
            out.response["entity_expansion"] = {"enabled": True, "expanded_count": len(out.entity), "entities_found": entities[:ENTITIES_FOUND_MAX]}
        return out

    # --- I/O steps ---------------------------------------------------------------------------------------
    def seed_edge_searches(self, bank: str, req: ExpansionRequest, seed_ids: Sequence[str]) -> list[tuple[str, dict, str]]:
        """Step 1 (the seeds' own relations, and the edges to expand along) as a search for the caller's
        _msearch: the page read it makes anyway carries it, one round trip less."""
        if not req.relations or not seed_ids:
            return []
        return [self.edges.newest_per_memory_search(bank, seed_ids, per_id=req.relation_limit, of_kind=(EXPANDABLE_TYPES, req.min_strength))]

    def _relation_targets(
        self, req: ExpansionRequest, seeds: Sequence[ScoredCandidate], seed_edges: Sequence[dict], flt: dict, out: ExpansionOutcome
    ) -> dict[str, tuple[Reach, dict]]:
        if not seeds or not seed_edges:
            return {}
        seed_scores = [(s.candidate.id, s.final_score) for s in seeds]
        hydrated, edges = self.edges.parse_newest_per_memory(seed_edges[0], [sid for sid, _ in seed_scores])
        out.seed_relations = {mid: relations_of(mid, items) for mid, items in hydrated.items()}
        order = candidate_edges(seed_scores, edges)
        ids = list(dict.fromkeys(other for _, _, other, _ in order))[:MAX_TARGET_FETCH]
        if not ids:
            return {}
        hits = self.memories.search(relation_targets_query(ids, flt, req.min_importance, req.vector))["hits"]["hits"]
        passed = {h["_id"]: source_with_cosine(h) for h in hits}
        reached = select_relation_targets(order, set(passed), req.expansion_limit)
        return {mid: (reach, passed[mid]) for mid, reach in reached.items()}

    def _entity_hits(self, req: ExpansionRequest, entities: Mapping[str, Sequence[str]], flt: dict, seen: set[str], budget: int) -> list[tuple[str, dict, str]]:
        resp = self.memories.search(entity_query(entities, flt, sorted(seen), req.text, PER_ENTITY, req.vector))
        raw = resp.get("aggregations", {}).get("per_entity", {}).get("buckets", {})
        buckets = {e: raw.get(e, {}).get("top", {}).get("hits", {}).get("hits", []) for e in entities}
        return select_entity_hits(list(entities), buckets, seen, budget)

    def hydrate(self, bank: str, ids: Sequence[str], per_id: int) -> dict[str, list[dict]]:
        """The relations of returned memories, after trimming (spec 000 "Deferred Relation Hydration"):
        each memory's `per_id` newest edges of any type, either direction — one request."""
        return {mid: relations_of(mid, items) for mid, items in self.edges.newest_per_memory(bank, ids, None, per_id=per_id).items()}

    # --- scoring -------------------------------------------------------------------------------------------
    @staticmethod
    def _score(
        items: Sequence[tuple[str, dict]], match_type: str, scoring: ScoringRequest, make_candidates: MakeCandidates,
        *, relation: Mapping[str, float] | None = None, bonus: float = 0.0, min_score: float = 0.0,
    ) -> list[ScoredCandidate]:
        """Expanded memories get the ten components like any candidate (AutoMem re-runs
        compute_metadata_score on them), plus their relation component or the entity bonus."""
        if not items:
            return []
        scored = []
        for c in make_candidates(items, match_type, relation or {}):
            s = score_candidate(c, scoring)
            if bonus:
                s = ScoredCandidate(candidate=s.candidate, final_score=s.final_score + bonus, components={**s.components, "entity_expansion": bonus})
            if s.final_score >= min_score:
                scored.append(s)
        return sort_scored(scored)
