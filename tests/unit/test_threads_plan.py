"""Thread context planning (service/threads/plan.py): keys, positions, the DSL, who gets which context."""

from __future__ import annotations

import pytest

from service.threads.plan import (
    CONTEXT_MAX_CHARS, Links, Member, context_fields, context_of, epoch_ms, neighbour_query, plan_links,
    stored_updates, successors_query, thread_key, thread_position, burst_key, inferred,
)


@pytest.mark.parametrize(
    ("tags", "metadata", "expected"),
    [
        ([], {"session_id": "s-1"}, "session:s-1"),
        ([], {"conversation_id": " c 9 "}, "conversation:c 9"),
        ([], {"thread_id": 42}, "thread:42"),
        # every id given names the thread together: ids are often unique only within another
        ([], {"session_id": "a", "thread_id": "b"}, "session:a/thread:b"),
        ([], {"conversation_id": "conv-26", "session_id": "1"}, "session:1/conversation:conv-26"),
        ([], {"conversation_id": "conv-30", "session_id": 1}, "session:1/conversation:conv-30"),
        (["locomo-test", "conversation:conv-26", "session:1", "speaker:x"], {}, "session:1/conversation:conv-26"),
        (["session:a", "session:b"], {}, "session:a"),  # the first of each
        ([], {"session_id": True}, None),  # a boolean names no thread
        ([], {"session_id": "  "}, None),
        (["work", "Session/Alpha"], {}, "session:alpha"),
        (["conversation:x:y"], {}, "conversation:x:y"),
        (["session"], {}, None),  # a root without an id
        (["project:alpha"], {}, None),  # other tags name no thread: no context across unrelated notes
        (["session:t"], {"thread_id": "m"}, "thread:m"),  # metadata wins over tags
        ([], {"session_id": "x" * 300}, "session:" + "x" * 248),
    ],
)
def test_thread_key(tags, metadata, expected):
    assert thread_key(tags, metadata) == expected


def test_thread_position():
    assert thread_position([], {"session_id": "s"}, "2023-05-08T13:56:00+00:00") == {"thread_key": "session:s", "thread_at": 1683554160000}
    assert thread_position(["misc"], {}, "2023-05-08T13:56:00+00:00") == {"thread_key": None, "thread_at": None}
    assert epoch_ms("1969-12-31T23:59:59+00:00") == -1000 and epoch_ms(None) is None


T = "2023-05-08T13:56:00+00:00"


def test_a_hindsight_document_is_a_thread_when_nothing_is_named():
    assert thread_position([], {}, T, document_id="doc-1") == {"thread_key": "document:doc-1", "thread_at": 1683554160000}
    # a named thread wins over the document; a blank document id names nothing
    assert thread_position([], {"session_id": "s"}, T, document_id="doc-1")["thread_key"] == "session:s"
    assert thread_position([], {}, T, document_id="  ")["thread_key"] is None


def test_a_burst_is_the_tag_set_at_one_stated_instant():
    burst = thread_position(["locomo:conv-26"], {"dia_id": "D1:1"}, T, stated=True)
    assert burst == {"thread_key": burst_key(["locomo:conv-26"], 1683554160000), "thread_at": 1683554160000}
    assert inferred(burst["thread_key"]) and not inferred("session:s") and not inferred(None)
    # the same tag set in any order, case or repetition is the same burst; another set or instant is another
    assert burst_key(["B", "a", "a"], 5) == burst_key(["a", "b"], 5) != burst_key(["a"], 5)
    assert burst_key(["a"], 5) != burst_key(["a"], 6)
    assert burst_key([], 5).startswith("burst:")  # untagged memories stated at one instant too


def test_no_burst_without_a_stated_timestamp_or_when_switched_off():
    # the service's own "now" says nothing of how the client grouped its writes
    assert thread_position(["notes"], {}, T, stated=False) == {"thread_key": None, "thread_at": None}
    assert thread_position(["notes"], {}, T, stated=True, infer=False) == {"thread_key": None, "thread_at": None}
    assert thread_position(["notes"], {}, None, stated=True) == {"thread_key": None, "thread_at": None}
    # a named thread is kept whatever the inference
    assert thread_position([], {"session_id": "s"}, T, stated=True, infer=False)["thread_key"] == "session:s"


def test_context_of_keeps_the_end_cut_at_a_word():
    assert context_of("  short turn ") == "short turn"
    assert context_of("") is None and context_of(None) is None
    long = "intro " * 300 + "What have you been up to?"
    kept = context_of(long)
    assert kept.endswith("What have you been up to?") and len(kept) <= CONTEXT_MAX_CHARS and kept.startswith("intro")
    unbroken = "x" * (CONTEXT_MAX_CHARS + 50)
    assert context_of(unbroken) == "x" * CONTEXT_MAX_CHARS


def test_neighbour_query_dsl():
    m = Member("b", "session:s", 1000, 7)
    assert neighbour_query("default", m, ["b", "a", "b"], before=True) == {
        "size": 1, "_source": ["thread_key", "thread_at", "thread_seq", "thread_prev", "thread_context", "content"],
        "query": {"bool": {
            "filter": [{"term": {"bank": "default"}}, {"term": {"thread_key": "session:s"}}],
            "must_not": [{"ids": {"values": ["a", "b"]}}],
            "should": [
                {"range": {"thread_at": {"lt": 1000}}},
                {"bool": {"filter": [{"term": {"thread_at": 1000}}, {"range": {"thread_seq": {"lt": 7}}}]}},
            ],
            "minimum_should_match": 1,
        }},
        "sort": [{"thread_at": "desc"}, {"thread_seq": "desc"}, {"id": "desc"}],
    }
    after = neighbour_query("b2", m, [], before=False, size=3)
    assert after["size"] == 3 and after["query"]["bool"]["must_not"] == []
    assert after["query"]["bool"]["should"][0] == {"range": {"thread_at": {"gt": 1000}}}
    assert after["query"]["bool"]["should"][1]["bool"]["filter"][1] == {"range": {"thread_seq": {"gt": 7}}}
    assert after["sort"] == [{"thread_at": "asc"}, {"thread_seq": "asc"}, {"id": "asc"}]


def test_successors_query_dsl():
    assert successors_query("default", ["b", "a"], ["a"], size=12) == {
        "size": 12, "_source": ["thread_key", "thread_at", "thread_seq", "thread_prev", "thread_context", "content"],
        "query": {"bool": {"filter": [{"term": {"bank": "default"}}, {"terms": {"thread_prev": ["a", "b"]}}],
                           "must_not": [{"ids": {"values": ["a"]}}]}},
        "sort": [{"id": "asc"}],
    }


def member(mid: str, at: int, seq: int = 0, key: str = "session:s", prev: str | None = None, context: str | None = None) -> Member:
    return Member(mid, key, at, seq, f"text of {mid}", prev, context)


def test_in_order_batch_after_a_stored_member():
    stored = member("a", 1)
    b, c = member("b", 2, 5), member("c", 2, 6)
    links = plan_links([c, b], before={"b": stored}, after={"b": None})
    assert links.prev == {"b": stored, "c": b}
    assert links.repoint == {}


def test_equal_timestamps_keep_the_order_sent():
    first, second = member("z", 5, 100), member("a", 5, 101)
    assert plan_links([second, first], {}, {}).prev == {"z": None, "a": first}


def test_a_memory_written_out_of_order_is_linked_in():
    a, c = member("a", 1), member("c", 3, prev="a", context="text of a")
    b = member("b", 2)
    links = plan_links([b], before={"b": a}, after={"b": c})
    assert links.prev == {"b": a}
    assert links.repoint == {"c": (c, b)}
    assert stored_updates(links) == [("c", {"thread_prev": "b", "thread_context": "text of b"})]


def test_only_the_stored_member_right_after_the_batch_member_is_repointed():
    # stored: a(1) d(4); batch: b(2) e(5) -> d follows b (no batch member between), nothing follows e.
    a, d = member("a", 1), member("d", 4, prev="a")
    b, e = member("b", 2), member("e", 5)
    links = plan_links([b, e], before={"b": a, "e": d}, after={"b": d, "e": None})
    assert links.prev == {"b": a, "e": d}
    assert set(links.repoint) == {"d"} and links.repoint["d"][1] == b
    # stored: f(6) right after two batch members c(3) and e(5): only the later one precedes it.
    c, f = member("c", 3), member("f", 6)
    links = plan_links([c, e], before={"c": None, "e": None}, after={"c": f, "e": f})
    assert links.repoint == {"f": (f, e)} and links.prev["e"] == c


def test_threads_are_planned_apart():
    x1, y1 = member("x1", 1, key="session:x"), member("y1", 1, key="session:y")
    x2, y2 = member("x2", 2, key="session:x"), member("y2", 2, key="session:y")
    assert plan_links([x2, y2], before={"x2": x1, "y2": y1}, after={}).prev == {"x2": x1, "y2": y1}


def test_stale_successors_of_a_deleted_memory_take_the_one_before_it():
    # b was deleted: c's context came from it; the stored member before c is now a.
    a = member("a", 1)
    c = member("c", 3, prev="b", context="text of b")
    links = plan_links([], {}, {}, stale=[c], stale_before={"c": a})
    assert stored_updates(links) == [("c", {"thread_prev": "a", "thread_context": "text of a"})]
    # The first of its thread: its context is cleared.
    links = plan_links([], {}, {}, stale=[c], stale_before={"c": None})
    assert stored_updates(links) == [("c", {"thread_prev": None, "thread_context": None})]


def test_a_rewritten_memory_refreshes_its_successor_and_nothing_else():
    b_new = member("b", 2)  # rewritten in place with new content
    c = member("c", 3, prev="b", context="old text of b")
    links = plan_links([b_new], before={"b": member("a", 1)}, after={"b": c}, stale=[c], stale_before={"c": member("a", 1)})
    assert stored_updates(links) == [("c", {"thread_prev": "b", "thread_context": "text of b"})]
    unchanged = member("c", 3, prev="b", context="text of b")
    assert stored_updates(plan_links([b_new], {}, {"b": unchanged}, stale=[unchanged])) == []


def test_a_memory_moved_to_another_thread_leaves_its_old_successor_to_its_old_predecessor():
    moved = member("b", 2, key="session:other")
    c = member("c", 3, key="session:s", prev="b", context="text of b")
    a = member("a", 1, key="session:s")
    links = plan_links([moved], before={"b": None}, after={"b": None}, stale=[c], stale_before={"c": a})
    assert links.prev == {"b": None}
    assert stored_updates(links) == [("c", {"thread_prev": "a", "thread_context": "text of a"})]


def test_context_fields():
    assert context_fields(None) == {"thread_prev": None, "thread_context": None}
    assert context_fields(member("a", 1)) == {"thread_prev": "a", "thread_context": "text of a"}
    assert stored_updates(Links()) == []


def test_member_of_a_stored_source():
    src = {"thread_key": "session:s", "thread_at": 5, "thread_seq": 9, "content": "hi", "thread_prev": "p", "thread_context": "ctx"}
    assert Member.of("m", src) == Member("m", "session:s", 5, 9, "hi", "p", "ctx")
    assert Member.of("m", {"content": "no thread"}) is None
    assert Member.of("m", {"thread_key": "session:s", "thread_at": 5}).seq == 0  # imported without a sequence number


def test_export_lines_keep_the_thread_context_and_drop_what_the_write_path_rebuilds():
    from service.admin.records import memory_line

    source = {"content": "Went to the lake.", "thread_key": "session:s", "thread_at": 5, "thread_seq": 9, "thread_prev": "q",
              "thread_context": "What did you do?", "date_terms": ["y:2023"]}
    assert memory_line("a", source) == {"id": "a", "content": "Went to the lake.", "thread_seq": 9, "thread_prev": "q", "thread_context": "What did you do?"}
