"""Hindsight's tag filters as DSL (service/filters/tag_groups.py): tables of input -> expected DSL,
pg_trgm's similarity, fuzzy resolution."""

from __future__ import annotations

import pytest

from service.filters import tag_groups as G

UNTAGGED = G.untagged_clause()


def caller(tag: str) -> dict:
    """A caller tag: carried, and not one enrichment derived (derived tags are never a scope)."""
    return {"bool": {"filter": [{"term": {"tags": tag}}], "must_not": [{"term": {"enrichment.derived_tags": tag}}]}}


A, B = caller("a"), caller("b")
ANY_AB = {"bool": {"should": [A, B], "minimum_should_match": 1}}
ALL_AB = {"bool": {"filter": [A, B]}}


def exact(tags: list[str]) -> dict:
    count = {"script": {"script": {"lang": "painless", "source": G.CALLER_COUNT_SCRIPT, "params": {"n": len(tags)}}}}
    return {"bool": {"filter": [*(caller(t) for t in tags), count]}}


def test_untagged_means_no_caller_tags():
    assert UNTAGGED == {"bool": {"should": [
        {"bool": {"must_not": [{"exists": {"field": "tags"}}]}},
        {"bool": {"filter": [
            {"exists": {"field": "enrichment.derived_tags"}},
            {"script": {"script": {"lang": "painless", "source": G.ONLY_DERIVED_SCRIPT}}},
        ]}},
    ], "minimum_should_match": 1}}


@pytest.mark.parametrize(
    ("leaf", "expected"),
    [
        (G.Leaf(("a", "b"), "any"), {"bool": {"should": [ANY_AB, UNTAGGED], "minimum_should_match": 1}}),
        (G.Leaf(("a", "b"), "all"), {"bool": {"should": [ALL_AB, UNTAGGED], "minimum_should_match": 1}}),
        (G.Leaf(("a", "b"), "any_strict"), ANY_AB),
        (G.Leaf(("a", "b", "a"), "all_strict"), ALL_AB),  # repeats once
        (G.Leaf(("a", "b"), "exact"), exact(["a", "b"])),
        (G.Leaf((), "exact"), UNTAGGED),  # exact and no tags: the untagged only
        (G.Leaf((), "any"), None),  # no tags: no constraint
        (G.Leaf((), "all_strict"), None),
        (G.Leaf(("Foo",), "any_strict"), caller("Foo")),  # as given: case-sensitive
    ],
)
def test_leaf_clause(leaf, expected):
    assert G.leaf_clause(leaf) == expected


@pytest.mark.parametrize(
    ("group", "expected"),
    [
        (G.And((G.Leaf(("a",)), G.Leaf(("b",)))), {"bool": {"filter": [A, B]}}),
        (G.And((G.Leaf(("a",)), G.Leaf((), "any"))), A),  # a None child drops out
        (G.And((G.Leaf((), "any"),)), None),
        (G.Or((G.Leaf(("a",)), G.Leaf(("b",)))), {"bool": {"should": [A, B], "minimum_should_match": 1}}),
        (G.Or((G.Leaf(("a",)), G.Leaf((), "any"))), None),  # one alternative admits everything
        (G.Or(()), None),
        (G.Not(G.Leaf(("a",))), {"bool": {"must_not": [A]}}),
        (G.Not(G.Leaf((), "any")), G.MATCH_NONE),
        (G.Not(G.Not(G.Leaf(("a",)))), {"bool": {"must_not": [{"bool": {"must_not": [A]}}]}}),
    ],
)
def test_group_clause(group, expected):
    assert G.group_clause(group) == expected


def test_groups_are_anded():
    assert G.groups_clause([]) is None
    assert G.groups_clause([G.Leaf(("a",))]) == A
    assert G.groups_clause([G.Leaf(("a",)), G.Not(G.Leaf(("b",)))]) == {"bool": {"filter": [
        A, {"bool": {"must_not": [B]}},
    ]}}


def test_modes_are_checked():
    with pytest.raises(ValueError, match="match must be one of any, all, any_strict, all_strict, exact"):
        G.Leaf(("a",), "some")
    with pytest.raises(ValueError, match="resolve must be one of exact, fuzzy"):
        G.Leaf(("a",), "any", "close")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cat", {"  c", " ca", "cat", "at "}),
        ("Cat", {"  c", " ca", "cat", "at "}),
        ("a-b", {"  a", " a ", "  b", " b "}),  # each word on its own
        ("", set()),
    ],
)
def test_trigrams_as_pg_trgm(text, expected):
    assert G.trigrams(text) == expected


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("typescript", "typsecript", 7 / 15),  # pg_trgm: similarity('typescript', 'typsecript') = 0.466667
        ("word", "two words", 4 / 11),  # pg_trgm's documented example: 0.363636
        ("cat", "cat", 1.0),
        ("cat", "dog", 0.0),
        ("", "", 0.0),
    ],
)
def test_similarity_as_pg_trgm(a, b, expected):
    assert G.similarity(a, b) == pytest.approx(expected)


def test_fuzzy_leaf_resolves_to_the_banks_similar_tags():
    bank = ["typescript", "javascript", "python", "type-safety"]
    leaf = G.Leaf(("typsecript",), "any_strict", "fuzzy")
    assert G.resolve_leaf(leaf, bank) == G.Leaf(("typescript",), "any_strict", "exact")
    # nothing close enough: the literal tags stay, so the leaf still matches only them
    assert G.resolve_leaf(G.Leaf(("rust",), "any", "fuzzy"), bank) == G.Leaf(("rust",), "any", "exact")
    # exact leaves are left alone
    assert G.resolve_leaf(G.Leaf(("typsecript",)), bank) == G.Leaf(("typsecript",))


def test_fuzzy_resolution_walks_the_group():
    group = G.And((G.Not(G.Leaf(("pythn",), "any_strict", "fuzzy")), G.Or((G.Leaf(("x",)),))))
    assert G.has_fuzzy([group]) and not G.has_fuzzy([G.Leaf(("a",))])
    assert G.similarity("pyhton", "python") < G.FUZZY_THRESHOLD  # a swap near the start costs more than a dropped letter
    assert G.resolve_fuzzy(group, ["python", "x"]) == G.And((G.Not(G.Leaf(("python",), "any_strict", "exact")), G.Or((G.Leaf(("x",)),))))


def test_bank_tags_body_and_parse():
    assert G.bank_tags_body("b1", 5) == {"size": 0, "query": {"term": {"bank": "b1"}}, "aggs": {"tags": {"terms": {"field": "tags", "size": 5}}}}
    resp = {"aggregations": {"tags": {"buckets": [{"key": "a", "doc_count": 3}, {"key": "b", "doc_count": 1}]}}}
    assert G.parse_bank_tags(resp) == ["a", "b"]


def test_depth():
    assert G.depth(G.Leaf(("a",))) == 1
    assert G.depth(G.And((G.Leaf(("a",)), G.Not(G.Or((G.Leaf(("b",)),)))))) == 4
