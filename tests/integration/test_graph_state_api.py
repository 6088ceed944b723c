"""Current-state recall against the real engine: every state rule, chains, cycles, debug, history,
as_of, supersede in one call, and PATCH honoured at once (spec 000 State Filtering; issue 4)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from tests.integration.support import assert_error, by_id, count_requests, ids, link, mem, recall
from tests.conftest import app_for


@pytest.fixture
def api(request):
    return app_for(request, write_refresh="true")

PAST = "2020-01-01T00:00:00Z"
FUTURE = "2999-01-01T00:00:00Z"


def m(api, content, importance, tags, **fields):
    # Explicit type and confidence: the classifier's confidence would make the order depend on wording.
    return mem(api, content, importance=importance, tags=tags, type="Context", confidence=0.5, **fields)


def test_every_state_rule_with_debug(api):
    tag = ["st"]
    cur = m(api, "current fact", 0.9, tag)
    arch = m(api, "archived fact", 0.85, tag, archived=True)
    future = m(api, "not yet valid", 0.8, tag, t_valid=FUTURE)
    expired = m(api, "expired fact", 0.75, tag, t_invalid=PAST)
    old = m(api, "old version", 0.7, tag)
    contra = m(api, "contradicting fact", 0.6, tag)
    new = m(api, "new version", 0.1, tag)
    link(api, old, new, "EVOLVED_INTO", 0.9)
    link(api, contra, cur, "CONTRADICTS", 0.8)  # CONTRADICTS suppresses neither side

    body = recall(api, tags="st", limit=10, state_debug="true")
    assert ids(body) == [cur, new, contra]
    replaced = body["results"][1]
    assert replaced["match_type"] == "state_replacement" and replaced["state_replaces"] == old
    assert replaced["memory"]["content"] == "new version"
    assert replaced["relations"] == [{"type": "EVOLVED_INTO", "strength": 0.9, "from": old}]
    plain = recall(api, tags="st", limit=10, state_mode="history")
    assert replaced["final_score"] == by_id(plain)[old]["final_score"]  # the head stands in with the suppressed one's score
    assert body["state_filter"] == {
        "current_only": True, "suppressed_count": 3, "replacement_count": 1,
        "suppressed": [
            {"id": future, "reason": "not_yet_valid"},
            {"id": expired, "reason": "expired"},
            {"id": old, "reason": "superseded", "relation_type": "EVOLVED_INTO", "replacement_id": new},
        ],
        "replacements": [{"id": new, "replaces_id": old, "relation_type": "EVOLVED_INTO", "hops": 1}],
    }
    # Without state_debug the validity rules run inside OpenSearch: same results, only counts.
    quiet = recall(api, tags="st", limit=10)
    assert ids(quiet) == [cur, new, contra]
    assert quiet["state_filter"] == {"current_only": True, "suppressed_count": 1, "replacement_count": 1}
    assert arch not in ids(plain)  # archived stays out even in history mode (spec 000)


def test_filters_run_inside_the_engine_so_a_page_is_full(api):
    tag = ["page"]
    for i in range(6):
        m(api, f"expired {i}", 0.9, tag, t_invalid=PAST)
    fresh = [m(api, f"fresh {i}", 0.2, tag) for i in range(3)]
    body = recall(api, tags="page", limit=3)
    assert sorted(ids(body)) == sorted(fresh) and body["count"] == 3


def test_history_mode_and_current_only_precedence(api):
    tag = ["hist"]
    old = m(api, "old plan", 0.9, tag)
    new = m(api, "new plan", 0.5, tag)
    gone = m(api, "expired plan", 0.4, tag, t_invalid=PAST)
    link(api, old, new, "INVALIDATED_BY", 1.0)
    history = recall(api, tags="hist", state_mode="history", state_debug="true")
    assert ids(history) == [old, new, gone] and "state_filter" not in history and history["state_mode"] == "history"
    assert history["results"][0]["memory"]["superseded_by"] == new
    legacy = recall(api, tags="hist", current_only="false")
    assert ids(legacy) == [old, new, gone] and legacy["state_mode"] == "history"
    wins = recall(api, tags="hist", state_mode="history", current_only="true")
    assert ids(wins) == [new] and wins["state_mode"] == "current" and "state_filter" in wins
    assert_error(api.get("/recall", params={"tags": "hist", "state_mode": "past", "current_only": "true"}), 400, "state_mode")


def test_chain_resolves_to_its_head_in_the_first_place(api):
    tag = ["chain"]
    a = m(api, "plan v1", 0.9, tag)
    b = m(api, "plan v2", 0.5, tag)
    c = m(api, "plan v3", 0.1, tag)
    other = m(api, "unrelated", 0.3, tag)
    link(api, a, b, "EVOLVED_INTO", 0.7)
    link(api, b, c, "EVOLVED_INTO", 0.8)
    body = recall(api, tags="chain", state_debug="true")
    # A -> B -> C returns C where A ranked; B's own head is C too, which is not repeated.
    assert ids(body) == [c, other]
    head = body["results"][0]
    assert (head["match_type"], head["state_replaces"]) == ("state_replacement", a)
    assert head["relations"] == [{"type": "EVOLVED_INTO", "strength": 0.7, "from": a, "hops": 2}]
    assert [(s["id"], s.get("replacement_id")) for s in body["state_filter"]["suppressed"]] == [(a, c), (b, c)]
    assert body["state_filter"]["replacements"] == [{"id": c, "replaces_id": a, "relation_type": "EVOLVED_INTO", "hops": 2}]


def test_head_must_pass_the_request_filters(api):
    a = m(api, "scoped old", 0.9, ["scope"])
    b = m(api, "unscoped new", 0.5, ["elsewhere"])
    link(api, a, b, "EVOLVED_INTO")
    body = recall(api, tags="scope", state_debug="true")
    assert ids(body) == []
    assert body["state_filter"]["suppressed"] == [{"id": a, "reason": "superseded", "relation_type": "EVOLVED_INTO", "chain": "inactive"}]


def test_cycle_is_safe(api):
    a = m(api, "cycle a", 0.9, ["cyc"])
    b = m(api, "cycle b", 0.8, ["cyc"])
    keep = m(api, "bystander", 0.1, ["cyc"])
    link(api, a, b, "EVOLVED_INTO")
    link(api, b, a, "INVALIDATED_BY")
    body = recall(api, tags="cyc", state_debug="true")
    assert ids(body) == [keep]
    assert [(s["id"], s["chain"]) for s in body["state_filter"]["suppressed"]] == [(a, "cycle"), (b, "cycle")]


def test_resolution_stops_after_five_hops(api):
    chain = [m(api, f"version {i}", 0.9 - i * 0.1, ["long"]) for i in range(7)]
    for older, newer in zip(chain, chain[1:]):
        link(api, older, newer, "EVOLVED_INTO")
    body = recall(api, tags="long", limit=10, state_debug="true")
    # v0 -> v6 is six hops: v0 is suppressed without a head; v1 -> v6 is five: v6 takes v1's place.
    assert ids(body) == [chain[6]] and body["results"][0]["state_replaces"] == chain[1]
    first = body["state_filter"]["suppressed"][0]
    assert (first["id"], first["chain"]) == (chain[0], "too_long")


def test_newest_edge_wins(api):
    a = m(api, "config v1", 0.9, ["nw"])
    b = m(api, "config v2a", 0.2, ["nw2"])
    c = m(api, "config v2b", 0.2, ["nw2"])
    link(api, a, b, "EVOLVED_INTO")
    link(api, a, c, "INVALIDATED_BY")
    body = recall(api, tags="nw,nw2", limit=1)
    assert ids(body) == [c] and body["results"][0]["state_replaces"] == a
    link(api, a, b, "EVOLVED_INTO")  # re-posting makes it the newest again
    assert ids(recall(api, tags="nw,nw2", limit=1)) == [b]


def test_as_of_evaluates_validity_and_supersession_at_that_instant(api):
    # As of T, a memory exists only if it was valid at T: t_valid (else its timestamp) <= T, and not
    # expired or superseded by T. (Before: as_of=2020 returned memories created years later.) Sets:
    # the memories' ages differ, so tag-only recall's recency orders them, which is not what is tested.
    now = datetime.now(timezone.utc)
    tag = ["asof"]
    old = m(api, "old office address", 0.9, tag, timestamp="2019-01-01T00:00:00Z")
    new = m(api, "new office address", 0.5, tag, timestamp="2024-01-01T00:00:00Z")
    later = m(api, "valid from 2090", 0.4, tag, timestamp="2019-01-01T00:00:00Z", t_valid="2090-01-01T00:00:00Z")
    ended = m(api, "valid until 2021", 0.3, tag, timestamp="2019-01-01T00:00:00Z", t_invalid="2021-01-01T00:00:00Z")
    written_now = m(api, "written just now", 0.2, tag)
    link(api, old, new, "EVOLVED_INTO")  # takes effect now
    assert set(ids(recall(api, tags="asof"))) == {new, written_now}
    yesterday = (now - timedelta(days=1)).isoformat()
    assert set(ids(recall(api, tags="asof", as_of=yesterday))) == {old, new}  # not yet superseded; written_now did not exist
    in_2020 = recall(api, tags="asof", as_of="2020-06-01T00:00:00Z")
    assert set(ids(in_2020)) == {old, ended} and in_2020["state_filter"]["as_of"] == "2020-06-01T00:00:00+00:00"
    # the same rule in Python (state_debug names each suppression)
    debug = recall(api, tags="asof", as_of="2020-06-01T00:00:00Z", state_debug="true")
    assert set(ids(debug)) == {old, ended}
    assert {s["id"]: s["reason"] for s in debug["state_filter"]["suppressed"]} == {new: "not_yet_valid", later: "not_yet_valid", written_now: "not_yet_valid"}
    assert ids(recall(api, tags="asof", as_of="2018-06-01T00:00:00Z")) == []  # nothing existed yet
    assert set(ids(recall(api, tags="asof", as_of="2091-01-01T00:00:00Z"))) == {new, later, written_now}  # old's chain head is new
    # An INVALIDATED_BY with an explicit timestamp takes effect then, not when it is written.
    link(api, new, later, "INVALIDATED_BY", timestamp="2090-06-01T00:00:00Z")
    assert set(ids(recall(api, tags="asof"))) == {new, written_now}
    assert set(ids(recall(api, tags="asof", as_of="2091-01-01T00:00:00Z"))) == {later, written_now}
    # history mode skips the state filter, as_of or not
    assert set(ids(recall(api, tags="asof", as_of="2018-06-01T00:00:00Z", state_mode="history"))) == {old, new, later, ended, written_now}
    assert_error(api.get("/recall", params={"tags": "asof", "as_of": "soon"}), 400, "as_of")


def test_as_of_a_chain_head_must_exist_then(api):
    old = m(api, "plan A", 0.9, ["asofh"], timestamp="2019-01-01T00:00:00Z")
    head = m(api, "plan B", 0.5, ["asofh"], timestamp="2099-01-01T00:00:00Z")
    link(api, old, head, "INVALIDATED_BY", timestamp="2025-01-01T00:00:00Z")
    assert ids(recall(api, tags="asofh")) == [head]  # without as_of a memory dated in the future is current (AutoMem)
    # In 2050 plan A was invalidated (2025) and plan B did not exist yet (2099): neither is returned.
    assert ids(recall(api, tags="asofh", as_of="2050-01-01T00:00:00Z")) == []
    debug = recall(api, tags="asofh", as_of="2050-01-01T00:00:00Z", state_debug="true")
    assert ids(debug) == [] and {s["id"]: (s["reason"], s.get("chain")) for s in debug["state_filter"]["suppressed"]} == {
        old: ("superseded", "inactive"), head: ("not_yet_valid", None)}
    assert ids(recall(api, tags="asofh", as_of="2100-01-01T00:00:00Z")) == [head]


def test_supersede_in_one_call(api, os_client):
    old = m(api, "We deploy on Fridays", 0.8, ["deploy"])
    before = api.get("/health").json()["memory_count"]
    assert_error(api.post("/memory", json={"content": "x", "supersedes": "missing-id"}), 404, "missing-id")
    assert_error(api.post("/memory", json={"content": "x", "supersedes": old, "supersede_type": "RELATES_TO"}), 400, "supersede_type")
    assert_error(api.post("/memory", json={"content": "x", "id": old, "supersedes": old}), 400, "itself")
    assert_error(api.post("/memory/batch", json={"memories": [{"content": "x", "supersedes": old}]}), 400, "POST /memory only")
    assert api.get("/health").json()["memory_count"] == before  # nothing was written

    resp = api.post("/memory", json={"content": "We deploy on Tuesdays", "tags": ["deploy"], "importance": 0.3, "supersedes": old})
    assert resp.status_code == 201
    created = resp.json()
    assert (created["supersedes"], created["supersede_type"]) == (old, "EVOLVED_INTO")
    stored = api.get(f"/memory/{old}").json()["memory"]
    assert stored["superseded_by"] == created["memory_id"] and stored["supersede_type"] == "EVOLVED_INTO"
    assert abs(datetime.fromisoformat(stored["t_invalid"]) - datetime.now(timezone.utc)) < timedelta(minutes=1)
    edge = os_client.get(index=api.app.state.settings.edges_alias, id=f"{old}|EVOLVED_INTO|{created['memory_id']}")["_source"]
    assert edge["strength"] == 1.0
    body = recall(api, tags="deploy", state_debug="true")
    assert ids(body) == [created["memory_id"]] and body["results"][0]["state_replaces"] == old
    assert body["state_filter"]["suppressed"][0]["reason"] == "superseded"

    third = api.post("/memory", json={"content": "We deploy daily", "tags": ["deploy"], "supersedes": created["memory_id"],
                                      "supersede_type": "invalidated_by"}).json()
    assert third["supersede_type"] == "INVALIDATED_BY"
    assert ids(recall(api, tags="deploy")) == [third["memory_id"]]


def test_deleting_the_replacement_makes_the_old_memory_current_again(api):
    old = m(api, "old", 0.9, ["del"])
    new = m(api, "new", 0.5, ["del"])
    link(api, old, new, "INVALIDATED_BY")
    assert ids(recall(api, tags="del")) == [new]
    api.delete(f"/memory/{new}")
    assert ids(recall(api, tags="del")) == [old]
    assert "superseded_by" not in api.get(f"/memory/{old}").json()["memory"]


@pytest.mark.parametrize(
    ("patch", "undo"),
    [
        ({"archived": True}, {"archived": False}),
        ({"t_invalid": PAST}, {"t_invalid": None}),
        ({"t_valid": FUTURE}, {"t_valid": None}),
    ],
)
def test_patch_is_honoured_by_recall_at_once(api, patch, undo):
    target = m(api, "patched memory", 0.9, ["patch"])
    other = m(api, "other memory", 0.5, ["patch"])
    assert ids(recall(api, tags="patch")) == [target, other]
    assert api.patch(f"/memory/{target}", json=patch).status_code == 200
    assert ids(recall(api, tags="patch")) == [other]
    if "archived" not in patch:
        assert ids(recall(api, tags="patch", state_mode="history")) == [target, other]
    assert api.patch(f"/memory/{target}", json=undo).status_code == 200
    assert ids(recall(api, tags="patch")) == [target, other]


def test_chains_below_the_page_cost_no_lookup(api):
    tag = ["pg"]
    top = [m(api, f"current fact {i}", 0.9 - i / 100, tag) for i in range(2)]
    old = m(api, "old version", 0.5, tag)
    new = m(api, "new version", 0.1, tag)
    link(api, old, new, "EVOLVED_INTO", 0.9)
    for limit in (2, 3):  # first accesses (last_accessed), so the counted recalls make only reads
        recall(api, query="current fact", tags="pg", limit=limit)
    api.app.state.memories.refresh_now()
    # limit 2: two current memories rank above the superseded one, so its chain cannot reach the page:
    # the one read after the arms is the page's stored memories (recall's hits are lean), an _mget.
    body, calls = count_requests(api, query="current fact", tags="pg", limit=2)
    assert sorted(ids(body)) == sorted(top) and calls[1:] == [f"POST /{api.app.state.settings.memories_alias}/_mget"], calls
    assert body["state_filter"] == {"current_only": True, "suppressed_count": 1, "replacement_count": 0}
    # limit 3: it can, and its head takes its place: the superseded memory's stored supersessions,
    # one lookup for the chain, and the page's stored memories.
    body, calls = count_requests(api, query="current fact", tags="pg", limit=3)
    assert sorted(ids(body)[:2]) == sorted(top) and ids(body)[2] == new, ids(body)
    alias = api.app.state.settings.memories_alias
    assert calls[1:] == [f"POST /{alias}/_mget", f"POST /{alias}/_search", f"POST /{alias}/_mget"], calls
