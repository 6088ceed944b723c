"""service.graph.current_state: the current-state rules, chain resolution and in-place replacement (pure)."""

from datetime import datetime, timedelta, timezone

import pytest

from scoring.rerank import Candidate, ScoredCandidate
from service.graph import current_state as state
from service.filters import clauses as C

pytestmark = pytest.mark.unit

AT = datetime(2025, 6, 1, 12, tzinfo=timezone.utc)
PAST = "2025-01-01T00:00:00+00:00"
FUTURE = "2026-01-01T00:00:00+00:00"


def sup(by, at=PAST, type_="EVOLVED_INTO", strength=1.0):
    return {"by": by, "type": type_, "at": at, "strength": strength}


def test_filter_clauses():
    moment = AT.isoformat()
    assert C.candidate_must_not(AT) == [
        {"range": {"t_valid": {"gt": moment}}},
        # expired memories are dropped unless superseded: those stay, their head takes their place
        {"bool": {"filter": [{"range": {"t_invalid": {"lte": moment}}}], "must_not": [{"range": {"superseded_at": {"lte": moment}}}]}},
    ]
    assert C.candidate_must_not(AT, in_python=True) == []
    assert C.active_must_not(AT) == [
        {"range": {"t_valid": {"gt": moment}}},
        {"range": {"t_invalid": {"lte": moment}}},
        {"range": {"superseded_at": {"lte": moment}}},
    ]


def test_as_of_clauses_add_existence():
    # As of T a memory without t_valid is valid from its timestamp; both state filters say so.
    moment = AT.isoformat()
    created_later = {"bool": {"filter": [{"range": {"timestamp": {"gt": moment}}}], "must_not": [{"exists": {"field": "t_valid"}}]}}
    assert C.not_yet_valid(AT) == [{"range": {"t_valid": {"gt": moment}}}]
    assert C.not_yet_valid(AT, as_of=True) == [{"range": {"t_valid": {"gt": moment}}}, created_later]
    assert C.candidate_must_not(AT, as_of=True) == [*C.not_yet_valid(AT, as_of=True), C.candidate_must_not(AT)[1]]
    assert C.active_must_not(AT, as_of=True) == [*C.not_yet_valid(AT, as_of=True), *C.active_must_not(AT)[1:]]
    assert C.candidate_must_not(AT, in_python=True, as_of=True) == []
    assert C.strictly_current({"match_all": {}}, AT, as_of=True)["bool"]["must_not"] == C.active_must_not(AT, as_of=True)


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ({}, None),
        ({"archived": True}, "archived"),
        ({"archived": True, "t_invalid": PAST}, "archived"),  # AutoMem's order: archived first
        ({"t_valid": FUTURE}, "not_yet_valid"),
        ({"t_valid": PAST}, None),
        ({"t_invalid": PAST}, "expired"),
        ({"t_invalid": AT.isoformat()}, "expired"),  # t_invalid <= now
        ({"t_invalid": FUTURE}, None),
        ({"t_invalid": "garbage"}, None),
    ],
)
def test_validity_reason(source, reason):
    assert state.validity_reason(source, AT) == reason


@pytest.mark.parametrize(
    ("source", "now", "as_of"),
    [
        ({"timestamp": FUTURE}, None, "not_yet_valid"),  # created after T: it did not exist yet
        ({"timestamp": PAST}, None, None),
        ({"timestamp": AT.isoformat()}, None, None),  # created at T exactly: valid from then
        ({"timestamp": PAST, "t_valid": FUTURE}, "not_yet_valid", "not_yet_valid"),
        ({"timestamp": FUTURE, "t_valid": PAST}, None, None),  # t_valid, when given, is the start
        ({"timestamp": FUTURE, "t_invalid": PAST}, "expired", "not_yet_valid"),
        ({}, None, None),  # timeless: always
        ({"timestamp": "garbage"}, None, None),
    ],
)
def test_validity_reason_as_of(source, now, as_of):
    assert (state.validity_reason(source, AT), state.validity_reason(source, AT, as_of=True)) == (now, as_of)


def test_as_of_suppresses_what_was_written_after_it():
    sources = {"a": {"timestamp": PAST}, "b": {"timestamp": FUTURE}}
    ranked = [scored("b", 0.9), scored("a", 0.8)]
    current = state.apply_current_state(ranked, sources, AT, Store({}), make)
    past = state.apply_current_state(ranked, sources, AT, Store({}), make, as_of=True)
    assert [s.candidate.id for s in current.ranked] == ["b", "a"]  # without as_of a future timestamp is current (AutoMem)
    assert [s.candidate.id for s in past.ranked] == ["a"] and past.suppressed == [{"id": "b", "reason": "not_yet_valid"}]


def test_supersession_newest_in_force_wins():
    source = {"supersessions": [sup("b", "2025-01-01T00:00:00.000000+00:00"), sup("c", "2025-03-01T00:00:00.000000+00:00")]}
    assert state.supersession(source, AT)["by"] == "c"  # newest edge wins
    # as_of before the second edge: the first one is in force; before both: not superseded.
    assert state.supersession(source, datetime(2025, 2, 1, tzinfo=timezone.utc))["by"] == "b"
    assert state.supersession(source, datetime(2024, 12, 1, tzinfo=timezone.utc)) is None
    # A future INVALIDATED_BY timestamp is not in force yet.
    assert state.supersession({"supersessions": [sup("b", FUTURE)]}, AT) is None
    # The summary fields alone (a document written without the list) still count.
    assert state.supersession({"superseded_by": "z", "superseded_at": PAST, "supersede_type": "INVALIDATED_BY"}, AT)["by"] == "z"


class Store:
    """A dict-backed lookup that records each call (one call = one engine request)."""

    def __init__(self, docs, failing=()):
        self.docs, self.failing, self.calls = docs, set(failing), []

    def __call__(self, ids):
        self.calls.append(list(ids))
        return {i: (self.docs[i], i not in self.failing) for i in ids if i in self.docs}


def test_chain_resolves_to_its_head_in_lockstep():
    docs = {
        "b": {"supersessions": [sup("c")]},
        "c": {"supersessions": [sup("d")]},
        "d": {},
        "y": {},
    }
    store = Store(docs)
    res = state.resolve_chains({"a": sup("b"), "x": sup("y")}, store, AT)
    assert res.chains["a"] == state.Chain("a", sup("b"), ("b", "c", "d"), state.RESOLVED, "d")
    assert res.chains["x"].head == "y"
    # Two chains, one lookup per hop for both: [b, y], [c], [d].
    assert store.calls == [["b", "y"], ["c"], ["d"]] and res.hops == 3


def test_chain_cycle_is_safe_and_has_no_head():
    store = Store({"b": {"supersessions": [sup("a")]}, "a": {"supersessions": [sup("b")]}})
    chain = state.resolve_chains({"a": sup("b")}, store, AT).chains["a"]
    assert (chain.outcome, chain.head, chain.path) == (state.CYCLE, None, ("b", "a"))
    assert store.calls == [["b"]]  # the start is never looked up again


def test_chain_is_bounded_at_five_hops():
    # m0 -> m1 -> ... -> m5 is five hops: resolved. One more hop is too long.
    docs = {f"m{i}": {"supersessions": [sup(f"m{i + 1}")]} for i in range(1, 10)}
    docs["m5"] = {}
    five = state.resolve_chains({"m0": sup("m1")}, Store(docs), AT).chains["m0"]
    assert (five.outcome, five.head, five.path) == (state.RESOLVED, "m5", ("m1", "m2", "m3", "m4", "m5"))
    docs["m5"], docs["m6"] = {"supersessions": [sup("m6")]}, {}
    store = Store(docs)
    six = state.resolve_chains({"m0": sup("m1")}, store, AT).chains["m0"]
    assert (six.outcome, six.head) == (state.TOO_LONG, None)
    assert len(store.calls) == 5  # never more than five lookups


def test_chain_missing_or_inactive_head():
    assert state.resolve_chains({"a": sup("gone")}, Store({}), AT).chains["a"].outcome == state.MISSING
    inactive = state.resolve_chains({"a": sup("b")}, Store({"b": {}}, failing={"b"}), AT).chains["a"]
    assert (inactive.outcome, inactive.head) == (state.INACTIVE, None)


def scored(mid, score, match="vector"):
    return ScoredCandidate(Candidate(id=mid, content=mid, match_type=match), score, {"vector": score})


def make(mid, source, replaced):
    """The pipeline's rescore: the head in the replaced memory's place, with components of its own."""
    head = Candidate(id=mid, content=source.get("content", mid), match_type=state.STATE_REPLACEMENT)
    return ScoredCandidate(head, replaced.final_score, {"vector": 0.123})


def test_head_takes_the_suppressed_memorys_place_with_its_own_components():
    ranked = [scored("a", 0.9), scored("k", 0.5), scored("old", 0.4)]
    sources = {"a": {"supersessions": [sup("b", strength=0.8)]}, "k": {}, "old": {"t_invalid": PAST}}
    out = state.apply_current_state(ranked, sources, AT, Store({"b": {"content": "new"}}), make)
    assert [(s.candidate.id, s.final_score, s.candidate.match_type) for s in out.ranked] == [("b", 0.9, "state_replacement"), ("k", 0.5, "vector")]
    assert out.ranked[0].components == {"vector": 0.123}  # the head's own, not the suppressed memory's
    assert out.extras["b"] == {"source": {"content": "new"}, "state_replaces": "a", "relations": [{"type": "EVOLVED_INTO", "strength": 0.8, "from": "a"}]}
    assert out.suppressed == [
        {"id": "a", "reason": "superseded", "relation_type": "EVOLVED_INTO", "replacement_id": "b"},
        {"id": "old", "reason": "expired"},
    ]
    assert out.to_response(debug=False) == {"current_only": True, "suppressed_count": 2, "replacement_count": 1}
    assert out.to_response(debug=True)["replacements"] == [{"id": "b", "replaces_id": "a", "relation_type": "EVOLVED_INTO", "hops": 1}]


def test_head_already_ranked_above_is_not_repeated_and_one_below_moves_up():
    sources = {"a": {"supersessions": [sup("b")]}, "b": {}, "c": {}}
    above = state.apply_current_state([scored("b", 0.95), scored("a", 0.9), scored("c", 0.1)], sources, AT, Store({"b": {}}), make)
    assert [s.candidate.id for s in above.ranked] == ["b", "c"] and above.replacements == []
    below = state.apply_current_state([scored("a", 0.9), scored("c", 0.5), scored("b", 0.2)], sources, AT, Store({"b": {}}), make)
    assert [(s.candidate.id, s.final_score) for s in below.ranked] == [("b", 0.9), ("c", 0.5)]
    assert below.ranked[0].candidate.match_type == "state_replacement"


def test_two_memories_superseded_by_the_same_head_yield_it_once():
    sources = {"a1": {"supersessions": [sup("b")]}, "a2": {"supersessions": [sup("b")]}}
    out = state.apply_current_state([scored("a1", 0.9), scored("a2", 0.8)], sources, AT, Store({"b": {}}), make)
    assert [s.candidate.id for s in out.ranked] == ["b"]
    assert [x["id"] for x in out.suppressed] == ["a1", "a2"] and len(out.replacements) == 1


def test_superseded_and_expired_reports_superseded_and_as_of_sees_the_past():
    sources = {"a": {"t_invalid": "2025-03-01T00:00:00+00:00", "supersessions": [sup("b", "2025-03-01T00:00:00.000000+00:00")]}}
    now = state.apply_current_state([scored("a", 0.9)], sources, AT, Store({"b": {}}), make)
    assert now.suppressed[0]["reason"] == "superseded"
    before = state.apply_current_state([scored("a", 0.9)], sources, AT - timedelta(days=120), Store({"b": {}}), make)
    assert [s.candidate.id for s in before.ranked] == ["a"] and before.suppressed == []


def test_cycle_suppresses_without_replacement():
    sources = {"a": {"supersessions": [sup("b")]}}
    out = state.apply_current_state([scored("a", 0.9)], sources, AT, Store({"b": {"supersessions": [sup("a")]}}), make)
    assert out.ranked == [] and out.suppressed == [{"id": "a", "reason": "superseded", "relation_type": "EVOLVED_INTO", "chain": "cycle"}]


def test_page_resolves_only_chains_that_can_reach_it():
    sources = {"a": {"supersessions": [sup("b")]}, "d": {"supersessions": [sup("e")]}, "x": {"archived": True}}
    ranked = [scored("c1", 0.9), scored("x", 0.85), scored("a", 0.8), scored("c2", 0.7), scored("d", 0.6), scored("c3", 0.5)]
    heads = {"b": {"content": "b"}, "e": {"content": "e"}}
    # page 2: one current memory (c1) above a -> a's chain may reach the page; d has two above it.
    store = Store(heads)
    out = state.apply_current_state(ranked, sources, AT, store, make, page=2)
    assert store.calls == [["b"]]
    assert [s.candidate.id for s in out.ranked][:2] == ["c1", "b"]
    assert {i["id"] for i in out.suppressed} == {"x", "a", "d"} and len(out.replacements) == 1
    # page 1: c1 alone fills it, no lookup at all; without a page every chain is resolved.
    store = Store(heads)
    state.apply_current_state(ranked, sources, AT, store, make, page=1)
    assert store.calls == []
    store = Store(heads)
    full = state.apply_current_state(ranked, sources, AT, store, make)
    assert sorted(store.calls[0]) == ["b", "e"] and len(full.replacements) == 2
