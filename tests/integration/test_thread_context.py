"""Thread context against the real engine: each memory of a thread is indexed with the text of the
one before it, whatever order the memories arrive in, and kept right through PATCH and DELETE."""

from __future__ import annotations

import pytest
from tests.integration.support import ids, recall
from tests.integration.support import mem as put

T0 = "2024-03-01T10:00:00+00:00"


def at(minute: int) -> str:
    return f"2024-03-01T10:{minute:02d}:00+00:00"


def stored(api, mid: str) -> dict:
    api.app.state.memories.refresh_now()
    return api.app.state.client.get(index=api.app.state.memories.alias, id=mid)["_source"]


def context(api, mid: str) -> tuple[str | None, str | None]:
    s = stored(api, mid)
    return s.get("thread_prev"), s.get("thread_context")


def turn(api, mid: str, text: str, minute: int, thread: str = "s-1", **fields) -> str:
    return put(api, text, id=mid, timestamp=at(minute), metadata={"session_id": thread, **fields.pop("metadata", {})}, **fields)


def test_each_turn_is_indexed_with_the_one_before_it(api):
    turn(api, "q1", "What did you do last weekend?", 0)
    turn(api, "a1", "Went to the lake with the kids.", 1)
    turn(api, "q2", "Sounds lovely.", 2)
    assert context(api, "q1") == (None, None)
    assert context(api, "a1") == ("q1", "What did you do last weekend?")
    assert context(api, "q2") == ("a1", "Went to the lake with the kids.")
    s = stored(api, "a1")
    assert s["content"] == "Went to the lake with the kids." and s["thread_key"] == "session:s-1"
    public = api.get("/memory/a1").json()["memory"]
    assert not {"thread_key", "thread_at", "thread_seq", "thread_prev", "thread_context", "date_terms"} & set(public)
    # Another thread, and a memory of no thread, are left alone.
    turn(api, "other", "Unrelated note.", 3, thread="s-2")
    loose = put(api, "A loose note", tags=["misc"])
    assert context(api, "other") == (None, None)
    assert {k: stored(api, loose).get(k) for k in ("thread_key", "thread_prev", "thread_context")} == dict.fromkeys(("thread_key", "thread_prev", "thread_context"))


def test_recall_finds_the_answer_by_the_question_before_it(api):
    turn(api, "q", "What did you do last weekend?", 0)
    turn(api, "a", "Went to the lake with the kids.", 1)
    turn(api, "x", "The quarterly report is due on Friday.", 2, thread="s-2")
    body = recall(api, query="last weekend", limit=3)
    assert ids(body)[:2] == ["q", "a"]
    by = {r["id"]: r for r in body["results"]}
    # The answer's keyword share comes from its context only, at half weight (SEARCH_THREAD_CONTEXT_WEIGHT 0.5).
    assert by["q"]["score_components"]["keyword"] == 1.0 and by["a"]["score_components"]["keyword"] == 0.5
    assert "thread_context" not in by["a"]["memory"] and "thread_key" not in by["a"]["memory"]


def test_the_context_weight_is_a_setting(make_client):
    api = make_client(search_thread_context_weight=0.0)
    turn(api, "q", "What did you do last weekend?", 0)
    turn(api, "a", "Went to the lake with the kids.", 1)
    body = recall(api, query="last weekend", limit=3)
    assert {r["id"]: r["score_components"]["keyword"] for r in body["results"]}.get("a", 0.0) == 0.0


def neighbour(body: dict) -> dict[str, float]:
    return {r["id"]: r["score_components"].get("neighbour", 0.0) for r in body["results"]}


@pytest.mark.own_app('fixed memory ids')
def test_a_turn_gains_from_its_matching_neighbours(api):
    turn(api, "q", "What did you do last weekend?", 0)
    turn(api, "a", "Went to the lake with the kids.", 1)
    turn(api, "r", "It was lovely, thanks.", 2)
    loose = put(api, "Weekend plans are not set yet.", tags=["misc"])
    body = recall(api, query="last weekend", limit=10, adaptive_floor="false")
    got = neighbour(body)
    # SEARCH_THREAD_NEIGHBOUR_WEIGHT 0.2: a (after q, the best match) and r (after a) gain a share of
    # their neighbour's score; the memory of no thread gains nothing.
    assert got["a"] > 0 and got["r"] > 0 and got.get(loose, 0.0) == 0.0
    by = {r["id"]: r for r in body["results"]}
    assert got["r"] < got["a"] <= 0.2 * by["q"]["final_score"] + 1e-9


def test_the_neighbour_weight_is_a_setting(make_client):
    api = make_client(search_thread_neighbour_weight=0.0)
    turn(api, "q", "What did you do last weekend?", 0)
    turn(api, "a", "Went to the lake with the kids.", 1)
    body = recall(api, query="last weekend", limit=3, adaptive_floor="false")
    assert len(body["results"]) == 2 and set(neighbour(body).values()) == {0.0}


def test_disabled_stores_no_context(make_client):
    api = make_client(thread_context_enabled=False)
    turn(api, "q", "What did you do last weekend?", 0)
    turn(api, "a", "Went to the lake.", 1)
    assert context(api, "a") == (None, None)


def test_a_batch_links_its_turns_in_timestamp_then_sent_order(api):
    resp = api.post("/memory/batch", json={"memories": [
        {"id": "b1", "content": "first", "timestamp": T0, "metadata": {"session_id": "s"}},
        {"id": "b2", "content": "second", "timestamp": T0, "metadata": {"session_id": "s"}},
        {"id": "b0", "content": "earlier", "timestamp": "2024-03-01T09:00:00+00:00", "metadata": {"session_id": "s"}},
        {"id": "b3", "content": "third", "timestamp": T0, "metadata": {"session_id": "s"}},
    ]})
    assert resp.status_code == 201, resp.text
    assert [context(api, m)[0] for m in ("b0", "b1", "b2", "b3")] == [None, "b0", "b1", "b2"]
    # The next batch continues the thread from the stored memories.
    resp = api.post("/memory/batch", json={"memories": [{"content": "fourth", "timestamp": T0, "metadata": {"session_id": "s"}}]})
    fourth = resp.json()["memory_ids"][0]
    assert context(api, fourth) == ("b3", "third")


@pytest.mark.own_app('fixed memory ids')
def test_a_memory_that_arrives_late_is_linked_in(api):
    turn(api, "m1", "one", 1)
    turn(api, "m3", "three", 3)
    assert context(api, "m3") == ("m1", "one")
    turn(api, "m2", "two", 2)
    assert context(api, "m2") == ("m1", "one")
    assert context(api, "m3") == ("m2", "two")
    # Its vector survived the update that re-pointed it.
    assert api.app.state.memories.vectors("default", ["m3"])["m3"][0] is not None
    # Late in a batch too: two memories in front of everything stored.
    resp = api.post("/memory/batch", json={"memories": [
        {"id": "m0b", "content": "zero b", "timestamp": at(0), "metadata": {"session_id": "s-1"}},
        {"id": "m0a", "content": "zero a", "timestamp": "2024-03-01T09:59:00+00:00", "metadata": {"session_id": "s-1"}},
    ]})
    assert resp.status_code == 201, resp.text
    assert [context(api, m)[0] for m in ("m0a", "m0b", "m1", "m2", "m3")] == [None, "m0a", "m0b", "m1", "m2"]


def test_patch_and_delete_keep_the_context_right(api):
    for i, text in enumerate(["one", "two", "three", "four"], start=1):
        turn(api, f"p{i}", text, i)
    # New content: the memory after it gets the new text.
    assert api.patch("/memory/p2", json={"content": "two, revised"}).status_code == 200
    assert context(api, "p3") == ("p2", "two, revised")
    # A new timestamp moves it: its old successor takes its old predecessor, its new one takes it.
    assert api.patch("/memory/p2", json={"timestamp": at(10)}).status_code == 200
    assert context(api, "p3") == ("p1", "one")
    assert context(api, "p2") == ("p4", "four")
    # Out of the thread (metadata without a session): cleared, and p4's successor... is nobody.
    assert api.patch("/memory/p2", json={"metadata": {}}).status_code == 200
    assert context(api, "p2") == (None, None) and stored(api, "p2")["thread_key"] is None
    # A deleted memory's text leaves its successor.
    assert api.delete("/memory/p3").status_code == 200
    assert context(api, "p4") == ("p1", "one")
    # Delete by tag: every deleted memory's successor is re-linked at once.
    put(api, "tagged", id="p5", timestamp=at(5), tags=["gone"], metadata={"session_id": "s-1"})
    turn(api, "p6", "six", 6)
    assert context(api, "p6") == ("p5", "tagged")
    assert api.delete("/memory/by-tag", params={"tags": "gone"}).status_code == 200
    assert context(api, "p6") == ("p4", "four")


def test_an_upsert_refreshes_the_successor(api):
    turn(api, "u1", "one", 1)
    turn(api, "u2", "two", 2)
    turn(api, "u1", "one, rewritten", 1)
    assert context(api, "u2") == ("u1", "one, rewritten")
    assert context(api, "u1") == (None, None)


def test_thread_keys_from_tags_and_other_metadata_keys(api):
    put(api, "tagged one", id="g1", timestamp=at(1), tags=["session:abc"])
    put(api, "tagged two", id="g2", timestamp=at(2), tags=["Session/ABC", "work"])
    put(api, "by conversation", id="c1", timestamp=at(1), metadata={"conversation_id": "abc"})
    assert context(api, "g2") == ("g1", "tagged one")
    assert context(api, "c1") == (None, None)  # conversation:abc is another thread than session:abc


def doc_values(api, mid: str) -> dict:
    """What recall's lean hits read of a memory (service/recall/lean.py)."""
    api.app.state.memories.refresh_now()
    body = {"query": {"ids": {"values": [mid]}}, "stored_fields": "_none_", "docvalue_fields": ["content_stems", "context_stems"]}
    hits = api.app.state.client.search(index=api.app.state.memories.alias, body=body)["hits"]["hits"]
    return hits[0].get("fields", {})


def test_the_stems_recall_reads_follow_content_and_context(api):
    """Every write path keeps the stored stems equal to the stems of the texts (service/memory/stems.py):
    a new memory, a PATCH of its content, and the thread linker's update of a neighbour's context."""
    from scoring.keywords import stemmed_words

    turn(api, "s1", "Went to the lake", 0)
    turn(api, "s3", "Sounds lovely", 2)
    assert doc_values(api, "s1") == {"content_stems": sorted(stemmed_words("Went to the lake"))}  # no context
    assert doc_values(api, "s3")["context_stems"] == sorted(stemmed_words("Went to the lake"))
    turn(api, "s2", "Caught three fish", 1)  # between them: s3's context is rewritten by the linker
    assert doc_values(api, "s3")["context_stems"] == sorted(stemmed_words("Caught three fish"))
    assert api.patch("/memory/s2", json={"content": "Caught nothing at all"}).status_code == 200
    assert doc_values(api, "s2")["content_stems"] == sorted(stemmed_words("Caught nothing at all"))
    assert doc_values(api, "s3")["context_stems"] == sorted(stemmed_words("Caught nothing at all"))
    body = recall(api, query="caught nothing", limit=3)
    by = {r["id"]: r for r in body["results"]}
    assert by["s2"]["score_components"]["keyword"] == 1.0 and by["s3"]["score_components"]["keyword"] == 0.5


def test_a_memory_stored_before_the_stems_existed_is_scored_from_its_content(api, os_client):
    """A document without content_stems (written by an earlier version) is read whole before scoring."""
    from tests.integration.support import mem

    fresh = mem(api, "the heating engineer visits on tuesday", tags=["old"])
    api.app.state.memories.refresh_now()
    alias = api.app.state.memories.alias
    doc = os_client.get(index=alias, id=fresh)["_source"]
    vector = api.app.state.memories.vectors(doc["bank"], [fresh])[fresh][0]
    legacy = {k: v for k, v in doc.items() if k not in ("content_stems", "context_stems", "metadata_terms_plain")}
    os_client.index(index=alias, id="legacy-1", body={**legacy, "id": "legacy-1", "embedding": vector}, refresh=True)
    body = recall(api, query="heating engineer", tags="old", limit=5)
    by = {r["id"]: r for r in body["results"]}
    assert by["legacy-1"]["score_components"]["keyword"] == by[fresh]["score_components"]["keyword"] == 1.0
    assert by["legacy-1"]["memory"]["content"] == "the heating engineer visits on tuesday"


def test_the_engine_returns_the_query_stems_a_memory_holds(api):
    """The lean arms' named queries (service/recall/lean.py) give, per stems field, exactly the query's
    stems among the stored ones: [] for a text without stems, absent for no text; and a recall scores
    the keyword share from them as from the texts."""
    from scoring.keywords import stemmed_words
    from service.recall import lean as L

    texts = {"t1": "Caroline went to the LGBTQ support group", "t2": "the and of", "t3": "Groups of painters supported her"}
    for minute, (mid, text) in enumerate(texts.items()):
        turn(api, mid, text, minute)
    api.app.state.memories.refresh_now()
    for stems in (("carolin", "group", "support"), ("paint", "zebra"), ("x",)):
        body = L.lean_body({"query": {"ids": {"values": list(texts)}}, "size": 10}, ("id",), stems)
        hits = api.app.state.client.search(index=api.app.state.memories.alias, body=body)["hits"]["hits"]
        got = {h["fields"]["id"][0]: L.lean_source(h["fields"], h.get("matched_queries", ())) for h in hits}
        for minute, mid in enumerate(texts):
            context = list(texts.values())[minute - 1] if minute else None
            assert set(got[mid]["content_stems"]) == stemmed_words(texts[mid]) & set(stems)
            if context is None:
                assert "context_stems" not in got[mid]
            else:
                assert set(got[mid]["context_stems"]) == stemmed_words(context) & set(stems)
    body = recall(api, query="support groups painters", limit=3)
    by = {r["id"]: r["score_components"]["keyword"] for r in body["results"]}
    assert by["t3"] == 1.0 and 0 < by["t1"] < 1
