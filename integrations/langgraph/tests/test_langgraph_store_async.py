"""Every BaseStore operation, async, against the real service (plain asyncio.run: no plugin needed)."""

from __future__ import annotations

import asyncio

from langgraph.store.base import GetOp, Item, ListNamespacesOp, PutOp, SearchOp

from langgraph.store.engram import _codec

VALUE = {"text": "Ada prefers tea over coffee", "nested": {"list": [1, 2.5, None, "ü"], "empty": {}}, "big": 2**70}


def test_async_operations(store, raw):
    async def run():
        ns = ("async", "ada")
        assert await store.aget(ns, "pref") is None
        await store.aput(ns, "pref", VALUE)
        item = await store.aget(ns, "pref")
        assert isinstance(item, Item) and item.value == VALUE and item.namespace == ns
        await store.aput(ns, "pref", {"text": "Ada switched to coffee"})
        assert (await store.aget(ns, "pref")).value == {"text": "Ada switched to coffee"}
        assert [i.value for i in await store.ahistory(ns, "pref")] == [VALUE]
        await store.aput(("async", "bob"), "pref", {"text": "Bob drinks water", "n": 3})
        found = await store.asearch(("async",), query="what does Ada drink?")
        assert found[0].key == "pref" and found[0].namespace == ns and isinstance(found[0].score, float)
        assert [i.namespace for i in await store.asearch(("async",), filter={"n": 3})] == [("async", "bob")]
        assert [i.namespace for i in await store.asearch(("async",), limit=1, offset=1)] == [ns]
        assert await store.alist_namespaces(prefix=("async",)) == [("async", "ada"), ("async", "bob")]
        assert await store.alist_namespaces(suffix=("bob",), max_depth=1) == [("async",)]
        await store.adelete(ns, "pref")
        assert await store.aget(ns, "pref") is None and await store.ahistory(ns, "pref") == []
        results = await store.abatch([
            PutOp(("async", "c"), "k", {"v": 1}), GetOp(("async", "bob"), "pref"), SearchOp(("async",)),
            ListNamespacesOp(max_depth=2),
        ])
        assert results[0] is None and results[1].value["n"] == 3
        assert [i.namespace for i in results[2]] == [("async", "bob")] and results[3] == [("async", "bob")]
        assert (await store.aget(("async", "c"), "k")).value == {"v": 1}

    asyncio.run(run())


def test_concurrent_async_writes_and_ttl_refresh(store, raw):
    ns = ("many",)

    async def write_all():
        await asyncio.gather(*(store.aput(ns, f"k{i}", {"i": i}, ttl=60) for i in range(20)))

    async def read_all():
        return await asyncio.gather(*(store.aget(ns, f"k{i}") for i in range(20)))

    asyncio.run(write_all())
    before = {m["metadata"]["langgraph"]["key"]: m["t_invalid"] for m in _all(raw, ns)}
    # A second event loop on the same store: it gets a client of its own.
    items = asyncio.run(read_all())
    assert [i.value["i"] for i in items] == list(range(20))
    after = {m["metadata"]["langgraph"]["key"]: m["t_invalid"] for m in _all(raw, ns)}
    assert len(before) == 20 and all(after[k] > before[k] for k in before)  # every read moved its TTL on
    found = asyncio.run(store.asearch(ns, limit=50, refresh_ttl=False))
    assert len(found) == 20
    assert asyncio.run(store.asweep_ttl()) == 0
    asyncio.run(store.aclose())


def _all(raw, ns):
    body = raw.get("/memory/by-tag", params={"tags": _codec.prefix_tag(ns), "limit": 200}).json()
    return body["memories"]
