"""A compiled StateGraph whose nodes read and write memories through the store (plain function nodes, no model)."""

from __future__ import annotations

import asyncio
import operator
import uuid
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore


class State(TypedDict, total=False):
    user: str
    fact: str
    question: str
    recalled: list[str]
    profile: dict


class Fan(TypedDict, total=False):
    user: str
    written: Annotated[list[str], operator.add]


def remember(state: State, runtime: Runtime) -> dict:
    """Writes the turn's fact and a running profile (read, changed, written back: a supersession)."""
    store = runtime.store
    ns = ("memories", state["user"])
    store.put(ns, uuid.uuid4().hex, {"text": state["fact"]})
    profile = store.get(("profiles",), state["user"])
    facts = (profile.value["facts"] if profile else 0) + 1
    store.put(("profiles",), state["user"], {"facts": facts})
    return {"profile": {"facts": facts}}


def recall(state: State, store: BaseStore) -> dict:  # the older injection style: a `store` parameter
    found = store.search(("memories", state["user"]), query=state["question"], limit=3)
    return {"recalled": [item.value["text"] for item in found]}


def build(store):
    graph = StateGraph(State)
    graph.add_node("remember", remember)
    graph.add_node("recall", recall)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "recall")
    graph.add_edge("recall", END)
    return graph.compile(store=store)


def test_graph_reads_and_writes_memories(store):
    app = build(store)
    first = app.invoke({"user": "alice", "fact": "Alice's favourite colour is green", "question": "favourite colour"})
    assert first["recalled"] == ["Alice's favourite colour is green"] and first["profile"] == {"facts": 1}
    second = app.invoke({"user": "alice", "fact": "Alice has a dog named Rex", "question": "what pet does Alice have?"})
    assert second["recalled"][0] == "Alice has a dog named Rex"
    assert set(second["recalled"]) == {"Alice has a dog named Rex", "Alice's favourite colour is green"}
    assert second["profile"] == {"facts": 2}
    other = app.invoke({"user": "bob", "fact": "Bob plays the cello", "question": "favourite colour"})
    assert other["recalled"] == ["Bob plays the cello"]  # one user's memories never reach another's
    assert store.get(("profiles",), "alice").value == {"facts": 2}
    assert [i.value for i in store.history(("profiles",), "alice")] == [{"facts": 1}]
    assert store.list_namespaces(prefix=("memories",)) == [("memories", "alice"), ("memories", "bob")]


async def aremember(state: State, runtime: Runtime) -> dict:
    ns = ("memories", state["user"])
    await runtime.store.aput(ns, uuid.uuid4().hex, {"text": state["fact"]})
    profile = await runtime.store.aget(("profiles",), state["user"])
    facts = (profile.value["facts"] if profile else 0) + 1
    await runtime.store.aput(("profiles",), state["user"], {"facts": facts})
    return {"profile": {"facts": facts}}


async def arecall(state: State, runtime: Runtime) -> dict:
    found = await runtime.store.asearch(("memories", state["user"]), query=state["question"], limit=3)
    return {"recalled": [item.value["text"] for item in found]}


def test_async_graph_reads_and_writes_memories(store):
    graph = StateGraph(State)
    graph.add_node("remember", aremember)
    graph.add_node("recall", arecall)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "recall")
    graph.add_edge("recall", END)
    app = graph.compile(store=store)

    async def run():
        await app.ainvoke({"user": "carol", "fact": "Carol speaks Portuguese", "question": "languages"})
        # Two users at once: the runs interleave on one loop and one store.
        return await asyncio.gather(
            app.ainvoke({"user": "carol", "fact": "Carol lives in Porto", "question": "where does Carol live?"}),
            app.ainvoke({"user": "dan", "fact": "Dan is allergic to peanuts", "question": "allergies"}),
        )

    carol, dan = asyncio.run(run())
    assert carol["recalled"][0] == "Carol lives in Porto" and len(carol["recalled"]) == 2
    assert carol["profile"] == {"facts": 2}
    assert dan["recalled"] == ["Dan is allergic to peanuts"] and dan["profile"] == {"facts": 1}


def test_parallel_branches_share_the_store(store):
    """Two sync nodes of one step run in LangGraph's thread pool, each writing through the same store."""
    def writer(name: str):
        def node(state: Fan, runtime: Runtime) -> dict:
            for i in range(5):
                runtime.store.put(("fan", state["user"]), f"{name}-{i}", {"by": name, "i": i})
            return {"written": [name]}
        return node

    def count(state: Fan, runtime: Runtime) -> dict:
        return {"written": [str(len(runtime.store.search(("fan", state["user"]), limit=100)))]}

    graph = StateGraph(Fan)
    for name in ("left", "right"):
        graph.add_node(name, writer(name))
        graph.add_edge(START, name)
    graph.add_node("count", count)
    graph.add_edge(["left", "right"], "count")
    graph.add_edge("count", END)
    out = graph.compile(store=store).invoke({"user": "eve"})
    assert sorted(out["written"][:2]) == ["left", "right"] and out["written"][2] == "10"
