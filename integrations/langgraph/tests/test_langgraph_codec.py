"""The pure mapping (no service): tags, ids, values, text, filters, namespace conditions."""

from __future__ import annotations

import itertools
import json
import re

import pytest
from langgraph.store.base import MatchCondition

from langgraph.store.engram import _codec as C

LABELS = ["users", "Users", "USERS", "a:b", "a/b", "a,b", "a b", "a%3ab", "%", "~x", "-", "_", "日本", "ü", "a" * 40, "a" * 41,
          "b" * 200, "\ud800", "tab\there", "UPPER-lower_9", " lead", "trail "]


def test_labels_encode_injectively_into_plain_lowercase_segments():
    encoded = [C.encode_label(label) for label in LABELS]
    assert len(set(encoded)) == len(LABELS)
    for label, enc in zip(LABELS, encoded):
        # What the service would otherwise fold or split: case, ':' and '/', ',' in list parameters, spaces.
        assert enc == enc.lower() and not re.search(r"[:/,\s]", enc), (label, enc)
        assert 1 <= len(enc) <= 40
    assert C.encode_label("users") == "users" and C.encode_label("Users") == "%55sers"


def test_prefix_tags_nest_and_stay_within_the_tag_limit():
    ns = ("Org", "team:a", "日本")
    tags = C.namespace_tags(ns)
    assert tags[0] == C.ROOT_TAG and len(tags) == 4
    assert all(b.startswith(a + ":") for a, b in itertools.pairwise(tags))
    assert C.prefix_tag(("a", "b")) != C.prefix_tag(("a:b",)) != C.prefix_tag(("a/b",))
    assert len(C.prefix_tag(tuple("x" * 200 for _ in range(9)))) <= C.TAG_MAX  # long labels are hashed
    with pytest.raises(ValueError, match="too long"):
        C.prefix_tag(tuple(f"l{i}" * 13 for i in range(10)))


def test_ids_are_stable_and_distinct():
    assert C.head_id("b", ("a",), "k") == C.head_id("b", ("a",), "k")
    ids = {C.head_id(bank, ns, key) for bank in (None, "x") for ns in [("a",), ("a", "b"), ("a:b",)] for key in ("k", "K", "a")}
    assert len(ids) == 18
    assert C.key_tag(("a", "b"), "c") != C.key_tag(("a",), "b:c") != C.history_tag(("a", "b"), "c")
    assert C.history_id("h", "t1") != C.history_id("h", "t2")
    assert all(re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.:\-]{0,127}", i) for i in ids)  # the service's id pattern


def test_values_dump_exactly_and_refuse_what_would_not_round_trip():
    value = {"z": 1, "a": [1.0, 2**80, -0.0, "\ud800", {"": None}], "ü": "日本"}
    text = C.dump_value(value)
    text.encode("utf-8")  # always sendable (a lone surrogate is escaped)
    back = json.loads(text)
    assert back == value and json.dumps(back) == json.dumps(value)
    assert C.dump_value({"ü": "x"}) == '{"ü": "x"}'  # no escaping when none is needed
    with pytest.raises(ValueError, match="NaN"):
        C.dump_value({"x": float("inf")})
    with pytest.raises(TypeError, match="strings"):
        C.dump_value({"x": [{2: 1}]})
    with pytest.raises(TypeError, match="dict"):
        C.dump_value([1])
    with pytest.raises(TypeError, match="JSON"):
        C.dump_value({"x": {1, 2}})


def test_content_text():
    value = {"text": "hello", "tags": ["a", "b"], "n": 3, "flag": True, "deep": {"x": "y"}, "none": None}
    assert C.content_text(value, None, "k") == "text: hello\ntags: a, b\nn: 3\ndeep.x: y"
    assert C.content_text(value, ["text", "deep.x"], "k") == "hello\ny"
    assert C.content_text({}, None, "my-key") == "my-key"
    assert C.content_text({"t": "x" * 50_000}, None, "k") == ("t: " + "x" * 50_000)[:C.CONTENT_MAX]
    assert C.content_text({"t": "\ud800"}, None, "k").encode("utf-8")


def test_filters_follow_inmemorystore():
    value = {"a": 1, "s": "x", "nested": {"b": [1, 2]}, "f": 2.5}
    assert C.matches(value, None) and C.matches(value, {})
    assert C.matches(value, {"a": 1, "nested": {"b": [1, 2]}})
    assert not C.matches(value, {"nested": {"b": [1]}}) and not C.matches(value, {"missing": 1})
    assert C.matches(value, {"a": {"$gt": 0, "$lte": 1}, "f": {"$lt": 3}, "s": {"$ne": "y", "$eq": "x"}})
    assert not C.matches(value, {"s": {"$gt": 1}}) and not C.matches(value, {"missing": {"$gte": 0}})
    assert C.matches(value, {"missing": {"$ne": 1}})
    with pytest.raises(ValueError, match="operator"):
        C.check_filter({"a": {"$in": [1]}})
    with pytest.raises(TypeError):
        C.check_filter(["a"])


def test_namespace_conditions():
    ns = ("a", "b", "c")
    assert C.condition_matches(MatchCondition("prefix", ("a", "*")), ns)
    assert not C.condition_matches(MatchCondition("prefix", ("b",)), ns)
    assert C.condition_matches(MatchCondition("suffix", ("*", "c")), ns)
    assert not C.condition_matches(MatchCondition("suffix", ("a", "b", "c", "d")), ns)
    assert C.scan_prefix([MatchCondition("prefix", ("a", "b", "*", "d")), MatchCondition("suffix", ("d",))]) == ("a", "b")
    assert C.scan_prefix([MatchCondition("prefix", ("*", "b"))]) == ()
