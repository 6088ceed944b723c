"""Relation and entity expansion against the real engine (spec 000 Graph Expansion, spec 001 Multi-Hop
Reasoning; issue 4): limits, floors, respect_tags, bridges, filters, entities, and a fixed number of
engine requests whatever the number of seeds."""

from __future__ import annotations

import pytest

from tests.integration.support import by_id, count_requests, ids, link, mem, recall
from tests.conftest import app_for


@pytest.fixture
def api(request):
    return app_for(request, write_refresh="true")

PAST = "2020-01-01T00:00:00Z"
WEIGHTS = {  # spec 000 default weights
    "vector": 0.35, "keyword": 0.35, "metadata": 0.35, "exact": 0.20, "importance": 0.10, "confidence": 0.05,
    "recency": 0.10, "tag": 0.20, "relation": 0.25, "relevance": 0.0,
}


def m(api, content, importance=0.5, tags=("other",), **fields):
    return mem(api, content, importance=importance, tags=list(tags), type="Context", confidence=0.5, **fields)


def weighted(result):
    c = result["score_components"]
    return sum(w * c[k] for k, w in WEIGHTS.items()) + c["context"] + c.get("entity_expansion", 0.0)


def test_relation_expansion_shape_and_scores(api):
    s1 = m(api, "seed one", 0.9, ["seed"])
    s2 = m(api, "seed two", 0.8, ["seed"])
    t1 = m(api, "target one", 0.5)
    t2 = m(api, "target two", 0.5)
    link(api, s1, t1, "LEADS_TO", 0.9)
    link(api, t2, s2, "PART_OF", 0.4, role="step")  # incoming edges are followed too
    body = recall(api, tags="seed", expand_relations="true")
    assert ids(body)[:2] == [s1, s2] and sorted(ids(body)[2:]) == sorted([t1, t2])
    assert body["expansion"] == {"enabled": True, "seed_count": 2, "expanded_count": 2, "relation_limit": 5,
                                 "expansion_limit": 25, "respect_tags": False}
    seeds, got = by_id(body), by_id(body)[t1]
    assert got["match_type"] == "relation" and got["memory"]["content"] == "target one"
    assert got["relations"] == [{"type": "LEADS_TO", "strength": 0.9, "from": s1, "seed_score": seeds[s1]["final_score"], "direction": "outgoing"}]
    # relation component = strength + 0.25 x the seed's score (AutoMem), weighted like any component.
    assert got["score_components"]["relation"] == pytest.approx(0.9 + 0.25 * seeds[s1]["final_score"], abs=1e-5)
    assert got["final_score"] == pytest.approx(weighted(got), abs=1e-5)
    assert by_id(body)[t2]["relations"][0]["direction"] == "incoming"
    # Seeds carry their hydrated relations (newest edges, either direction).
    assert seeds[s1]["relations"] == [{"type": "LEADS_TO", "strength": 0.9, "id": t1, "direction": "outgoing"}]
    assert seeds[s2]["relations"] == [{"type": "PART_OF", "strength": 0.4, "id": t2, "direction": "incoming"}]
    # Without the flag: nothing expanded, no expansion object, no relations.
    plain = recall(api, tags="seed")
    assert ids(plain) == [s1, s2] and "expansion" not in plain and plain["results"][0]["relations"] == []


def test_relation_limit_takes_the_newest_edges_per_seed_and_expansion_limit_caps_the_total(api):
    s1 = m(api, "seed one", 0.9, ["seed"])
    s2 = m(api, "seed two", 0.8, ["seed"])
    first = [m(api, f"s1 target {i}") for i in range(4)]
    second = [m(api, f"s2 target {i}") for i in range(3)]
    for t in first:
        link(api, s1, t)
    for t in second:
        link(api, s2, t)
    newest = recall(api, tags="seed", expand_relations="true", relation_limit=2)
    assert set(ids(newest)[2:]) == {first[3], first[2], second[2], second[1]}
    capped = recall(api, tags="seed", expand_relations="true", relation_limit=2, expansion_limit=3)
    # Seeds by rank, each seed's edges newest first: s1's two, then s2's newest.
    assert set(ids(capped)[2:]) == {first[3], first[2], second[2]} and capped["expansion"]["expanded_count"] == 3
    # An edge re-posted becomes the newest.
    link(api, s1, first[0])
    assert first[0] in ids(recall(api, tags="seed", expand_relations="true", relation_limit=1))


def test_strength_and_importance_floors_apply_to_expanded_memories_only(api):
    seed = m(api, "low importance seed", 0.1, ["seed"])
    weak = m(api, "weakly linked", 0.9)
    strong = m(api, "strongly linked", 0.9)
    minor = m(api, "unimportant target", 0.2)
    link(api, seed, weak, strength=0.2)
    link(api, seed, strong, strength=0.8)
    link(api, seed, minor, strength=0.9)
    body = recall(api, tags="seed", expand_relations="true", expand_min_strength=0.5, expand_min_importance=0.5)
    assert ids(body) == [seed, strong]  # the seed itself is never filtered


def test_seeds_show_their_newest_edges_of_any_type_while_expansion_follows_only_authorable_ones(api):
    # One search reads both (service/storage/edges.py `of_kind`): a system edge newer than the seed's
    # authorable one is the seed's relation, and is not followed; a weak edge is shown, not followed.
    seed = m(api, "seed", 0.9, ["seed"])
    target, similar, weak = m(api, "target"), m(api, "similar"), m(api, "weak")
    link(api, seed, target, "LEADS_TO", 0.8)
    link(api, seed, weak, "RELATES_TO", 0.1)
    api.app.state.edges.upsert_many(api.headers["X-Bank"], [{"source_id": seed, "target_id": similar, "type": "SIMILAR_TO", "strength": 0.95}], "2090-01-01T00:00:00+00:00")  # newer than any edge the test writes now
    body = recall(api, tags="seed", expand_relations="true", relation_limit=2, expand_min_strength=0.5)
    assert ids(body) == [seed, target]
    assert [(r["type"], r["id"]) for r in by_id(body)[seed]["relations"]] == [("SIMILAR_TO", similar), ("RELATES_TO", weak)]
    assert by_id(body)[target]["relations"][0]["type"] == "LEADS_TO"


def test_expansion_is_the_same_when_the_arms_bring_whole_memories(api):
    # Several queries, or the automem profile, read whole memories in the arms: the page needs no read,
    # and the seeds' edges go alone in the _msearch the page read would carry.
    seed = m(api, "seed about the harbour", 0.9, ["seed"])
    target = m(api, "target")
    link(api, seed, target, "LEADS_TO", 0.8)
    lean = recall(api, query="harbour", tags="seed", expand_relations="true")
    for params in ({"query": "harbour", "scoring_profile": "automem"}, {"queries": ["harbour", "seed about"]}):
        body = recall(api, tags="seed", expand_relations="true", **params)
        assert ids(body) == ids(lean) == [seed, target], params
        assert by_id(body)[seed]["relations"] == [{"type": "LEADS_TO", "strength": 0.8, "id": target, "direction": "outgoing"}]
        assert by_id(body)[target]["memory"]["content"] == "target"
    # The arms, the seeds' edges alone (nothing of the page to read), the relation targets.
    _, calls = count_requests(api, query="harbour", tags="seed", expand_relations="true", scoring_profile="automem")
    assert calls == ["POST /_msearch", "POST /_msearch", f"POST /{api.app.state.settings.memories_alias}/_search"], calls


def test_respect_tags_keeps_expansion_inside_the_tag_scope(api):
    seed = m(api, "scoped seed", 0.9, ["scope"])
    inside = m(api, "inside", 0.5, ["scope:sub"])
    outside = m(api, "outside", 0.5, ["elsewhere"])
    link(api, seed, inside)
    link(api, seed, outside)
    assert set(ids(recall(api, tags="scope", expand_relations="true"))) == {seed, inside, outside}
    body = recall(api, tags="scope", expand_relations="true", expand_respect_tags="true")
    assert ids(body) == [seed, inside] and body["expansion"]["respect_tags"] is True


def test_expanded_memories_pass_the_seeds_filters_and_state(api):
    seed = m(api, "seed", 0.9, ["seed"], timestamp="2025-03-01T00:00:00Z")
    ok = m(api, "fine", 0.5, timestamp="2025-03-02T00:00:00Z")
    secret = m(api, "secret", 0.5, ["secret:x"], timestamp="2025-03-02T00:00:00Z")
    early = m(api, "before the window", 0.5, timestamp="2024-01-01T00:00:00Z")
    expired = m(api, "expired", 0.5, timestamp="2025-03-02T00:00:00Z", t_invalid=PAST)
    old = m(api, "superseded", 0.5, timestamp="2025-03-02T00:00:00Z")
    newer = m(api, "its replacement", 0.5, ["x"], timestamp="2025-03-03T00:00:00Z")
    for t in (ok, secret, early, expired, old):
        link(api, seed, t)
    link(api, old, newer, "EVOLVED_INTO")
    body = recall(api, tags="seed", expand_relations="true", exclude_tags="secret", start="2025-02-01T00:00:00Z", end="2025-04-01T00:00:00Z")
    assert ids(body) == [seed, ok]
    history = recall(api, tags="seed", expand_relations="true", state_mode="history")
    assert set(ids(history)) == {seed, ok, secret, early, expired, old}


def test_bridges_sum_their_strengths(api):
    s1 = m(api, "problem", 0.9, ["seed"])
    s2 = m(api, "solution", 0.8, ["seed"])
    bridge = m(api, "the constraint that connects them", 0.5)
    single = m(api, "only linked once", 0.5)
    link(api, s1, bridge, "LEADS_TO", 0.5)
    link(api, bridge, s2, "LEADS_TO", 0.3)
    link(api, s2, single, strength=0.5)
    body = recall(api, tags="seed", expand_relations="true")
    got = by_id(body)
    best_seed = got[s1]["final_score"]
    assert got[bridge]["score_components"]["relation"] == pytest.approx(0.5 + 0.3 + 0.25 * best_seed, abs=1e-5)
    assert [r["from"] for r in got[bridge]["relations"]] == [s1, s2]
    assert ids(body)[2] == bridge  # the bridge outranks a single link of equal strength


# --- entity expansion ----------------------------------------------------------------------------------
def test_sarahs_sisters_job(api):
    """spec 000: "What is Sarah's sister's job?" -> seed "Sarah's sister is Rachel" -> Rachel's job."""
    seed = mem(api, "Sarah's sister is Rachel.", tags=["entity:people:sarah", "entity:people:rachel"])
    job = mem(api, "Rachel works as a pediatric nurse at the children's hospital.", tags=["entity:people:rachel"])
    hobby = mem(api, "Sarah loves hiking in the mountains.", metadata={"entities": {"people": ["Sarah"]}})
    for text in ("The quarterly report is due on Friday.", "Tom is a chef in Lyon.", "Our database is PostgreSQL."):
        mem(api, text)
    question = "What is Sarah's sister's job?"
    assert job not in ids(recall(api, query=question, limit=1))
    body = recall(api, query=question, limit=1, expand_entities="true")
    assert ids(body)[0] == seed
    got = by_id(body)
    assert got[job]["match_type"] == "entity_expansion" and got[job]["expanded_from_entity"] == "rachel"
    assert got[hobby]["expanded_from_entity"] == "sarah"
    assert got[job]["score_components"]["entity_expansion"] == 0.15
    assert got[job]["final_score"] == pytest.approx(weighted(got[job]), abs=1e-5)
    assert body["entity_expansion"] == {"enabled": True, "expanded_count": 2, "entities_found": ["sarah", "rachel"]}
    # The alias flag works the same way.
    assert ids(recall(api, query=question, limit=1, entity_expansion="true")) == ids(body)


def test_entity_names_and_slugs_meet_and_every_type_counts(api):
    seed = m(api, "Kickoff with the platform team at Acme Corp", 0.9, ["seed"], metadata={"entities": {"organizations": ["Acme Corp"], "teams": ["Platform Team"]}})
    acme = m(api, "Acme is our biggest customer", 0.5, ["entity:organizations:acme-corp"])
    team = m(api, "The platform team owns the CI", 0.5, metadata={"entities": {"teams": ["platform team"]}})
    body = recall(api, tags="seed", expand_entities="true")
    assert body["entity_expansion"]["entities_found"] == ["acme corp", "platform team"]
    assert {r["id"]: r["expanded_from_entity"] for r in body["results"][1:]} == {acme: "acme corp", team: "platform team"}


def test_a_name_with_and_without_its_accents_is_one_entity(api):
    # The entity tag's slug has no accents ("jurgen"), metadata keeps them ("Jürgen"): one person, listed
    # once, by its written name, and searched by both spellings.
    seed = m(api, "Kickoff with Jürgen", 0.9, ["seed", "entity:people:jurgen"], metadata={"entities": {"people": ["Jürgen"]}})
    tagged = m(api, "Jurgen runs the Munich office", 0.5, ["entity:people:jurgen"])
    named = m(api, "Jürgen prefers tea", 0.5, metadata={"entities": {"people": ["Jürgen"]}})
    body = recall(api, tags="seed", expand_entities="true")
    assert ids(body)[0] == seed
    assert body["entity_expansion"]["entities_found"] == ["jürgen"]
    assert {r["id"]: r["expanded_from_entity"] for r in body["results"][1:]} == {tagged: "jürgen", named: "jürgen"}


def test_entity_expansion_limits(api):
    names = [f"person{i}" for i in range(12)]
    seed = m(api, "everyone", 0.9, ["seed"], metadata={"entities": {"people": names}})
    for name in names:
        for j in range(6):
            m(api, f"{name} fact {j}", 0.5, [f"entity:people:{name}"])
    body = recall(api, tags="seed", expand_entities="true")
    info = body["entity_expansion"]
    assert info["entities_found"] == names[:10]  # at most 10 names listed
    assert info["expanded_count"] == 25  # 5 entities x 5 memories = the default expansion_limit
    assert {r["expanded_from_entity"] for r in body["results"][1:]} == set(names[:5])
    capped = recall(api, tags="seed", expand_entities="true", expansion_limit=7)
    assert capped["entity_expansion"]["expanded_count"] == 7 and capped["count"] == 8


def test_relation_and_entity_expansion_share_the_expansion_limit(api):
    seed = m(api, "seed", 0.9, ["seed", "entity:people:ann"])
    linked = [m(api, f"linked {i}") for i in range(2)]
    for t in linked:
        link(api, seed, t)
    for i in range(3):
        m(api, f"about ann {i}", 0.5, ["entity:people:ann"])
    body = recall(api, tags="seed", expand_relations="true", expand_entities="true", expansion_limit=3)
    assert body["expansion"]["expanded_count"] == 2 and body["entity_expansion"]["expanded_count"] == 1
    assert [r["match_type"] for r in body["results"]] == ["tag", "relation", "relation", "entity_expansion"]


def test_entity_expansion_filters(api):
    seed = m(api, "seed", 0.9, ["seed", "entity:people:bo"])
    fine = m(api, "bo fine", 0.5, ["entity:people:bo", "seed:x"])
    hidden = m(api, "bo hidden", 0.5, ["entity:people:bo", "private"])
    gone = m(api, "bo expired", 0.5, ["entity:people:bo"], t_invalid=PAST)
    out = m(api, "bo outside scope", 0.5, ["entity:people:bo"])
    body = recall(api, tags="seed", expand_entities="true", exclude_tags="private")
    assert set(ids(body)) == {seed, fine, out}
    scoped = recall(api, tags="seed", expand_entities="true", exclude_tags="private", expand_respect_tags="true")
    assert ids(scoped) == [seed, fine]
    assert hidden not in ids(body) and gone not in ids(body)


# --- a fixed number of engine requests -----------------------------------------------------------------


def test_expansion_makes_a_fixed_number_of_engine_requests_whatever_the_number_of_seeds(api):
    seeds = [m(api, f"seed {i} about the rollout", 0.9 - i * 0.05, ["seed", f"entity:people:p{i}"]) for i in range(8)]
    for i, seed in enumerate(seeds):
        for j in range(3):
            link(api, seed, m(api, f"neighbour {i}.{j}"), strength=0.5)
        m(api, f"fact about p{i}", 0.5, [f"entity:people:p{i}"])
    # First access of all eight seeds (last_accessed), so the counted recalls make only reads.
    recall(api, query="rollout", tags="seed", limit=8)
    api.app.state.memories.refresh_now()
    seen = {}
    for n in (2, 8):
        body, calls = count_requests(api, query="rollout", tags="seed", limit=n, expand_relations="true", expand_entities="true")
        assert body["expansion"]["seed_count"] == n and body["expansion"]["expanded_count"] > 0
        assert body["entity_expansion"]["expanded_count"] > 0
        seen[n] = calls
    assert len(seen[2]) == len(seen[8]) == 5, seen
    alias = api.app.state.settings.memories_alias
    edges = api.app.state.settings.edges_alias
    assert seen[8] == [
        "POST /_msearch",                   # every retrieval arm (lean hits)
        "POST /_msearch",                   # the page's stored memories (the seeds), and the newest edges of
                                            # every seed: to expand along, and its relations
        f"POST /{alias}/_search",           # every relation target
        f"POST /{alias}/_search",           # every entity's memories
        f"POST /{edges}/_search",           # the relations of the entity-expanded memories
    ]
    # Relations alone: seeds and relation targets come with their relations, nothing left to hydrate.
    body, calls = count_requests(api, query="rollout", tags="seed", limit=8, expand_relations="true")
    assert calls == ["POST /_msearch", "POST /_msearch", f"POST /{alias}/_search"], calls
    assert all(r["relations"] for r in body["results"][:8])  # every seed has its neighbours


def test_expanded_memories_get_their_exact_cosine_to_the_query(api):
    # Explicit 384-d embeddings: the vector component of an expanded memory is its cosine to the query
    # vector, computed in the engine (a script field), exactly as for seeds.
    def unit(*xs):
        return list(xs) + [0.0] * (384 - len(xs))

    ada = {"entities": {"people": ["Ada"]}}
    seed = m(api, "seed", 0.9, ["seed"], embedding=unit(1.0), metadata=ada)
    target = m(api, "target", 0.5, embedding=unit(0.6, 0.8))  # cosine 0.6 to the query below
    entity_mate = m(api, "entity mate", 0.5, embedding=unit(0.8, 0.6), metadata=ada)  # cosine 0.8
    link(api, seed, target, "LEADS_TO", 0.9)
    body = recall(api, tags="seed", embedding=",".join(map(str, unit(1.0))), expand_relations="true", expand_entities="true")
    got = by_id(body)
    assert got[seed]["score_components"]["vector"] == pytest.approx(1.0, abs=1e-4)
    assert got[target]["score_components"]["vector"] == pytest.approx(0.6, abs=1e-4)
    assert got[entity_mate]["match_type"] == "entity_expansion"
    assert got[entity_mate]["score_components"]["vector"] == pytest.approx(0.8, abs=1e-4)
