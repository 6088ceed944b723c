"""Every BaseStore operation, sync, against the real service."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from langgraph.store.base import GetOp, InvalidNamespaceError, Item, ListNamespacesOp, MatchCondition, PutOp, SearchItem, SearchOp

from langgraph.store.engram import EngramRequestError
from langgraph.store.engram import _codec

HOSTILE_VALUE = {
    "ünï": "日本語 🚀 \u0000 nul and\ttab",
    "numbers": [0, -1, 1.0, 0.1, -0.0, 1e300, 2**63 - 1, -(2**63), 2**80, 3.141592653589793],
    "nested": {"a": [[[]], [{}], {"b": [None, True, False]}], "": "empty key"},
    "empty": {},
    "list_of_dicts": [{"z": 1, "a": 2}, {"m": {"n": {"o": "deep"}}}],
    "with.dot": "value", "$op": "looks like an operator", "k:/,": "delimiters",
    "lone surrogate": "\ud800",
}


def raw_head(raw, namespace, key):
    body = raw.get("/memory/by-tag", params={"tags": _codec.key_tag(namespace, key)}).json()
    assert body["count"] == 1, body
    return body["memories"][0]


def test_put_get_round_trip_is_exact(store):
    ns = ("users", "Alice:Smith/Jr", "日本", "%41", "a" * 60)
    store.put(ns, "prefs", HOSTILE_VALUE)
    item = store.get(ns, "prefs")
    assert isinstance(item, Item)
    assert item.namespace == ns and item.key == "prefs"
    assert item.value == HOSTILE_VALUE
    # Exact: key order at every level and the types of numbers (1.0 stays a float, 2**80 an int).
    assert json.dumps(item.value) == json.dumps(HOSTILE_VALUE)
    assert [type(x) for x in item.value["numbers"]] == [type(x) for x in HOSTILE_VALUE["numbers"]]
    assert item.created_at == item.updated_at and item.created_at.tzinfo is not None
    store.put(("e",), "empty", {})
    assert store.get(("e",), "empty").value == {}


def test_get_missing_and_neighbours(store):
    store.put(("a", "b"), "k", {"x": 1})
    assert store.get(("a", "b"), "other") is None
    assert store.get(("a",), "k") is None            # a parent namespace is another namespace
    assert store.get(("a", "b", "c"), "k") is None
    assert store.get(("A", "b"), "k") is None         # labels are case-sensitive (tags are not)
    assert store.get(("a", "b"), "k").value == {"x": 1}


def test_namespaces_that_differ_only_in_case_or_delimiters_stay_apart(store):
    for ns in [("Team",), ("team",), ("a:b",), ("a", "b"), ("a/b",), ("a%3ab",)]:
        store.put(ns, "k", {"ns": list(ns)})
    for ns in [("Team",), ("team",), ("a:b",), ("a", "b"), ("a/b",), ("a%3ab",)]:
        assert store.get(ns, "k").value == {"ns": list(ns)}
    assert [i.namespace for i in store.search(("team",))] == [("team",)]
    assert sorted(store.list_namespaces(prefix=("a",))) == [("a", "b")]


def test_put_replaces_with_supersession_and_keeps_history(store, raw):
    ns = ("memories", "u1")
    store.put(ns, "diet", {"text": "Alice is vegetarian"})
    first = store.get(ns, "diet")
    head = raw_head(raw, ns, "diet")
    store.put(ns, "diet", {"text": "Alice eats fish now"})
    second = store.get(ns, "diet")
    assert second.value == {"text": "Alice eats fish now"}
    assert second.created_at == first.created_at and second.updated_at > first.updated_at
    assert raw_head(raw, ns, "diet")["id"] == head["id"]  # the key's memory id is stable
    # The old value stays, superseded by the head (EVOLVED_INTO) and invalid from the replacement on.
    (old,) = store.history(ns, "diet")
    assert old.value == first.value and old.updated_at == first.updated_at
    old_id = _codec.history_id(head["id"], head["metadata"]["langgraph"]["updated_at"])
    old_memory = raw.get(f"/memory/{old_id}").json()["memory"]
    assert old_memory["superseded_by"] == head["id"] and old_memory["t_invalid"] is not None
    related = raw.get(f"/memories/{head['id']}/related").json()
    assert old_id in [m.get("id") for m in related.get("related_memories", [])]
    # Current-state recall (no store scope) answers with the new value; history mode has both.
    current = raw.get("/recall", params={"query": "Alice vegetarian fish", "limit": 10}).json()["results"]
    assert [r["id"] for r in current] == [head["id"]]
    history = raw.get("/recall", params={"query": "Alice vegetarian fish", "limit": 10, "state_mode": "history"}).json()["results"]
    assert {r["id"] for r in history} == {head["id"], old_id}
    store.put(ns, "diet", {"text": "Alice is vegan"})
    assert [i.value["text"] for i in store.history(ns, "diet")] == ["Alice is vegetarian", "Alice eats fish now"]


def test_delete_removes_item_and_history(store, raw):
    ns = ("d",)
    store.put(ns, "k", {"v": 1})
    store.put(ns, "k", {"v": 2})
    head = raw_head(raw, ns, "k")
    store.delete(ns, "k")
    assert store.get(ns, "k") is None
    assert store.history(ns, "k") == []
    assert raw.get(f"/memory/{head['id']}").status_code == 404
    assert store.search(ns) == [] and store.list_namespaces() == []
    store.delete(ns, "never-there")  # deleting a missing key is not an error
    store.put(ns, "k", {"v": 3})     # and the key can be used again
    assert store.get(ns, "k").value == {"v": 3} and store.history(ns, "k") == []


def test_search_without_query_filters_and_pages(store):
    for i in range(25):
        store.put(("docs", "team" if i % 2 else "solo"), f"d{i:02}", {"i": i, "kind": "even" if i % 2 == 0 else "odd", "meta": {"n": i % 3}})
    everything = store.search(("docs",), limit=100)
    assert len(everything) == 25 and all(isinstance(i, SearchItem) and i.score is None for i in everything)
    keys = [i.key for i in everything]
    assert keys == [f"d{i:02}" for i in range(24, -1, -1)]  # newest first
    pages = [store.search(("docs",), limit=7, offset=o) for o in (0, 7, 14, 21)]
    assert [i.key for p in pages for i in p] == keys
    assert [i.key for i in store.search(("docs", "team"), limit=100)] == [k for k in keys if int(k[1:]) % 2]
    odd = store.search(("docs",), filter={"kind": "odd"}, limit=100)
    assert {i.value["i"] for i in odd} == {i for i in range(25) if i % 2}
    assert {i.value["i"] for i in store.search(("docs",), filter={"i": {"$gte": 20}}, limit=100)} == {20, 21, 22, 23, 24}
    assert {i.value["i"] for i in store.search(("docs",), filter={"i": {"$gt": 3, "$lt": 6}})} == {4, 5}
    assert {i.value["i"] for i in store.search(("docs",), filter={"i": {"$lte": 1}})} == {0, 1}
    assert len(store.search(("docs",), filter={"kind": {"$ne": "odd"}}, limit=100)) == 13
    assert {i.value["i"] for i in store.search(("docs",), filter={"meta": {"n": 0}, "kind": "even"}, limit=100)} == {0, 6, 12, 18, 24}
    assert store.search(("docs",), filter={"kind": "even", "i": 1}) == []
    filtered_pages = [store.search(("docs",), filter={"kind": "even"}, limit=5, offset=o) for o in (0, 5, 10)]
    assert [len(p) for p in filtered_pages] == [5, 5, 3]
    assert store.search(("docs",), limit=0) == [] and store.search(("nothing",)) == []
    assert len(store.search((), limit=100)) == 25  # the empty prefix is the whole store
    with pytest.raises(ValueError, match="unsupported filter operator"):
        store.search(("docs",), filter={"i": {"$regex": "x"}})


def test_search_with_query_is_ranked_recall(store):
    ns = ("notes",)
    store.put(ns, "db", {"text": "We chose PostgreSQL as the primary database"})
    store.put(ns, "pet", {"text": "My cat is called Miso and loves tuna"})
    store.put(ns, "trip", {"text": "Next summer we travel to Lisbon by train"})
    store.put(("elsewhere",), "db2", {"text": "The database of another namespace: PostgreSQL"})
    results = store.search(ns, query="which database did we pick?")
    assert [r.key for r in results][0] == "db"
    assert {r.key for r in results} <= {"db", "pet", "trip"}
    assert all(isinstance(r.score, float) for r in results)
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)
    assert store.search(ns, query="cat food", limit=1)[0].key == "pet"
    assert [r.key for r in store.search(ns, query="database", filter={"text": {"$ne": "x"}}, limit=2)][0] == "db"
    assert store.search(ns, query="database", filter={"text": "nope"}) == []
    both = store.search(ns, query="database travel pets", limit=3)
    assert [r.key for r in store.search(ns, query="database travel pets", limit=2, offset=1)] == [r.key for r in both[1:3]]


def test_search_after_replacement_sees_only_the_new_value(store):
    ns = ("facts",)
    store.put(ns, "city", {"text": "Bob lives in Berlin"})
    store.put(ns, "city", {"text": "Bob moved to Madrid"})
    results = store.search(ns, query="where does Bob live?")
    assert [(r.key, r.value["text"]) for r in results] == [("city", "Bob moved to Madrid")]


def test_fields_and_index_false(store, service, bank):
    from langgraph.store.engram import EngramStore

    ns = ("idx",)
    store.put(ns, "hidden", {"text": "the secret launch code is banana"}, index=False)
    store.put(ns, "shown", {"text": "bananas are yellow fruit"})
    store.put(ns, "titled", {"title": "banana bread recipe", "body": "flour sugar eggs"}, index=["title"])
    assert {r.key for r in store.search(ns, query="banana")} == {"shown", "titled"}
    assert store.get(ns, "hidden").value["text"].endswith("banana")  # still stored and listed
    assert "hidden" in {i.key for i in store.search(ns)}
    url, token = service
    with EngramStore(url, token, bank=bank, index={"dims": 1, "fields": ["body"]}) as only_body:
        only_body.put(("idx2",), "r", {"title": "zebra", "body": "giraffe"})
        assert [r.key for r in only_body.search(("idx2",), query="giraffe")] == ["r"]


def test_list_namespaces(store):
    for ns in [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"), ("a", "c", "f"), ("x", "y")]:
        store.put(ns, "k", {"n": 1})
    store.put(("a", "b", "c"), "k2", {"n": 2})  # two items, one namespace
    assert store.list_namespaces() == sorted([("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"), ("a", "c", "f"), ("x", "y")])
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")]
    assert store.list_namespaces(max_depth=1) == [("a",), ("x",)]
    assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a",), suffix=("*", "e")) == [("a", "b", "d", "e")]
    assert store.list_namespaces(prefix=("a",), limit=2, offset=1) == [("a", "b", "d", "e"), ("a", "b", "d", "i")]
    assert store.list_namespaces(prefix=("nope",)) == []
    store.delete(("x", "y"), "k")
    assert ("x", "y") not in store.list_namespaces()


def test_batch_mixes_operations_reads_before_writes(store):
    store.put(("b",), "old", {"v": 0})
    results = store.batch([
        PutOp(("b",), "new", {"v": 1}),
        GetOp(("b",), "old"),
        GetOp(("b",), "new"),  # reads see the store as it was before the batch
        SearchOp(("b",)),
        ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("b",)),)),
        PutOp(("b",), "new", {"v": 2}),  # the last write of a key wins
        PutOp(("b",), "old", None),
    ])
    assert results[0] is None and results[5] is None and results[6] is None
    assert results[1].value == {"v": 0} and results[2] is None
    assert [i.key for i in results[3]] == ["old"] and results[4] == [("b",)]
    assert store.get(("b",), "new").value == {"v": 2} and store.get(("b",), "old") is None
    assert store.history(("b",), "new") == []  # one write, not two


def test_large_batch_goes_through_the_batch_routes(store):
    ops = [PutOp(("bulk", str(i % 3)), f"k{i}", {"i": i}) for i in range(520)]
    store.batch(ops)
    got = store.batch([GetOp(("bulk", str(i % 3)), f"k{i}") for i in range(520)])
    assert [g.value["i"] for g in got] == list(range(520))
    store.batch([PutOp(("bulk", str(i % 3)), f"k{i}", {"i": -i}) for i in range(0, 520, 2)])
    assert store.get(("bulk", "0"), "k6").value == {"i": -6} and store.get(("bulk", "1"), "k7").value == {"i": 7}
    store.batch([PutOp(("bulk", str(i % 3)), f"k{i}", None) for i in range(520)])
    assert store.list_namespaces(prefix=("bulk",)) == []


def test_ttl_sets_validity_and_reads_refresh_it(store, raw):
    ns = ("ttl",)
    store.put(ns, "k", {"v": 1}, ttl=60)
    head = raw_head(raw, ns, "k")
    t0 = datetime.fromisoformat(head["t_invalid"])
    updated = datetime.fromisoformat(head["metadata"]["langgraph"]["updated_at"])
    assert abs((t0 - updated).total_seconds() - 3600) < 1e-3
    store.get(ns, "k", refresh_ttl=False)
    assert datetime.fromisoformat(raw_head(raw, ns, "k")["t_invalid"]) == t0
    store.get(ns, "k")  # refresh_ttl defaults to True
    t1 = datetime.fromisoformat(raw_head(raw, ns, "k")["t_invalid"])
    assert t1 > t0
    store.search(ns)
    t2 = datetime.fromisoformat(raw_head(raw, ns, "k")["t_invalid"])
    assert t2 > t1
    store.search(ns, refresh_ttl=False)
    assert datetime.fromisoformat(raw_head(raw, ns, "k")["t_invalid"]) == t2
    item = store.get(ns, "k")
    assert item.updated_at == updated.astimezone(timezone.utc)  # a refresh is not an update
    store.put(ns, "forever", {"v": 2})
    assert raw_head(raw, ns, "forever")["t_invalid"] is None


def test_expired_items_are_gone_and_swept(store, raw):
    ns = ("exp",)
    store.put(ns, "gone", {"v": 1}, ttl=0)  # expires as it is written
    store.put(ns, "kept", {"v": 2}, ttl=60)
    assert store.get(ns, "gone") is None
    assert [i.key for i in store.search(ns)] == ["kept"]
    assert [i.key for i in store.search(ns, query="v")] == ["kept"]
    store.put(("exp2",), "gone", {"v": 1}, ttl=0)
    assert store.list_namespaces() == [("exp",)]
    head = raw_head(raw, ns, "gone")  # still stored until swept
    assert store.sweep_ttl() == 2
    assert raw.get(f"/memory/{head['id']}").status_code == 404
    assert store.get(ns, "kept").value == {"v": 2}
    store.put(ns, "gone", {"v": 3})
    assert store.get(ns, "gone").value == {"v": 3}
    store.put(("exp3",), "k", {"v": 1}, ttl=0)
    store.put(("exp3",), "k", {"v": 2})  # a new life for an expired key: created anew, no history of it
    again = store.get(("exp3",), "k")
    assert again.value == {"v": 2} and again.created_at == again.updated_at and store.history(("exp3",), "k") == []


def test_ttl_config_defaults(service, bank, raw):
    from langgraph.store.engram import EngramStore

    url, token = service
    with EngramStore(url, token, bank=bank, ttl={"default_ttl": 30, "refresh_on_read": False}) as s:
        s.put(("tc",), "k", {"v": 1})
        head = raw_head(raw, ("tc",), "k")
        assert head["metadata"]["langgraph"]["ttl"] == 30 and head["t_invalid"]
        s.get(("tc",), "k")
        assert raw_head(raw, ("tc",), "k")["t_invalid"] == head["t_invalid"]  # refresh_on_read: False
        s.get(("tc",), "k", refresh_ttl=True)
        assert raw_head(raw, ("tc",), "k")["t_invalid"] > head["t_invalid"]
        s.put(("tc",), "none", {"v": 1}, ttl=None)
        assert raw_head(raw, ("tc",), "none")["t_invalid"] is None


def test_invalid_namespaces_and_values(store):
    with pytest.raises(InvalidNamespaceError):
        store.put(("a.b",), "k", {})
    with pytest.raises(InvalidNamespaceError):
        store.put((), "k", {})
    with pytest.raises(InvalidNamespaceError):
        store.put(("langgraph", "x"), "k", {})
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(("",), "k", {})])
    with pytest.raises(InvalidNamespaceError):
        store.batch([SearchOp(("a.b",))])
    with pytest.raises(ValueError, match="NaN"):
        store.put(("v",), "k", {"x": float("nan")})
    with pytest.raises(TypeError, match="keys must be strings"):
        store.put(("v",), "k", {"x": {1: "int key"}})
    with pytest.raises(TypeError):
        store.put(("v",), "k", ["not", "a", "dict"])
    with pytest.raises(TypeError, match="JSON"):
        store.put(("v",), "k", {"x": object()})
    with pytest.raises(ValueError, match="too long"):
        store.put(tuple(f"label-{i}-" + "x" * 30 for i in range(8)), "k", {})
    # The service's own limits come back as clear errors (metadata is at most 64 KiB by default).
    with pytest.raises(EngramRequestError, match="metadata"):
        store.put(("v",), "big", {"blob": "x" * 70_000})
    assert store.get(("v",), "k") is None and store.get(("v",), "big") is None  # nothing half-written
