"""scoring.components: each component against AutoMem's definition."""

from datetime import datetime, timedelta, timezone

import pytest

from scoring.components import (
    METADATA_FIELDS,
    bm25_normalized,
    cosine_from_lucene,
    date_match,
    exact_score,
    idf_keyword_share,
    idf_keyword_share_in_thread,
    keyword_points,
    keyword_share,
    metadata_score,
    metadata_terms,
    recency_score,
    tag_score,
)
from scoring.weights import RecencyConfig

pytestmark = pytest.mark.unit

NOW = datetime(2025, 3, 10, 10, 30, tzinfo=timezone.utc)
EXAMPLE_CONTENT = "Chose PostgreSQL over MongoDB for the primary database."
EXAMPLE_KEYWORDS = ["postgresql", "database", "decisions"]


@pytest.mark.parametrize(
    ("score", "expected"),
    [(1.0, 1.0), (0.5, 0.0), (0.91, 0.82), (0.0, -1.0), (1.0000001, 1.0), (-0.1, -1.0)],
)
def test_cosine_from_lucene(score, expected):
    assert cosine_from_lucene(score) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("AutoJack recall debugging notes", 1.0),  # AutoMem tests/test_app.py
        ("AutoJack debugging notes", 0.5),
        ("Unrelated debugging notes", 0.0),
        ("", 0.0),
    ],
)
def test_keyword_share_matches_automem_tests(content, expected):
    assert keyword_share(["autojack", "recall"], content) == expected


def test_keyword_share_of_the_worked_example():
    assert keyword_share(EXAMPLE_KEYWORDS, EXAMPLE_CONTENT) == pytest.approx(2 / 3)
    assert keyword_share([], EXAMPLE_CONTENT) == 0.0


def test_keyword_points_worked_example():
    # postgresql +2, database +2 (content) +1 (tag "database"); phrase absent; max 3*3 + 3
    score = keyword_points(
        EXAMPLE_KEYWORDS,
        "PostgreSQL database decisions",
        EXAMPLE_CONTENT,
        ["project-alpha", "database"],
    )
    assert score == pytest.approx(5 / 12)


def test_keyword_points_phrase_bonus():
    # rate +2 +1 (tag rate-limiting), limiter +2, phrase in content +2; max 3*2 + 3
    score = keyword_points(
        ["rate", "limiter"], "Rate limiter", "We built a rate limiter in Redis", ["rate-limiting"]
    )
    assert score == pytest.approx(7 / 9)


def test_keyword_points_use_substring_containment_like_cypher_contains():
    # "base" is inside "database": +2 for the keyword, +2 for the phrase, of 3 + 3
    assert keyword_points(["base"], "base", "database", []) == pytest.approx(4 / 6)


def test_keyword_points_full_match_is_one():
    assert keyword_points(["redis"], "redis", "redis", ["redis"]) == 1.0


def test_keyword_points_phrase_only_and_nothing():
    assert keyword_points([], "the", "the end", []) == pytest.approx(2 / 3)
    assert keyword_points([], "go", "go home", []) == 0.0


def test_idf_keyword_share_weights_by_idf_and_matches_stems():
    idf = {"postgresql": 3.0, "database": 1.0, "decisions": 2.0}
    assert idf_keyword_share(EXAMPLE_KEYWORDS, EXAMPLE_CONTENT, idf) == pytest.approx(4 / 6)
    assert idf_keyword_share(
        EXAMPLE_KEYWORDS, "Decision: PostgreSQL is our database", idf
    ) == pytest.approx(1.0)


def test_idf_keyword_share_defaults():
    # missing keywords weigh like the rarest known one
    assert idf_keyword_share(
        EXAMPLE_KEYWORDS, EXAMPLE_CONTENT, {"postgresql": 3.0}
    ) == pytest.approx(6 / 9)
    # no idf at all: plain stemmed share
    assert idf_keyword_share(EXAMPLE_KEYWORDS, EXAMPLE_CONTENT, {}) == pytest.approx(2 / 3)
    assert idf_keyword_share([], EXAMPLE_CONTENT, {}) == 0.0


@pytest.mark.parametrize(
    ("content", "context", "weight", "expected"),
    [
        # The answer turn names nothing of the question; the turn before it does.
        ("Went to the lake", "What did you do last weekend?", 0.5, 0.5 * (2 / 3)),
        ("Went to the lake", "What did you do last weekend?", 1.0, 2 / 3),
        ("Went to the lake", "What did you do last weekend?", 0.0, 0.0),
        ("Went to the lake", None, 0.5, 0.0),
        # Found in its own content: the context adds only what the content lacks.
        ("Camping at the lake", "What did you do last weekend?", 0.5, 1 / 3 + 0.5 * (2 / 3)),
        ("Camping last weekend", "Did you go anywhere?", 0.5, 1.0),
        ("Camping at the lake", "And camping again?", 0.5, 1 / 3),
        ("Weekend plans", "Where did you go camping?", 0.5, 1 / 3 + 0.5 * (1 / 3)),
        ("Weekend plans", "Where did you go camping?", 2.0, 2 / 3),  # the weight is capped at 1
    ],
)
def test_idf_keyword_share_in_thread(content, context, weight, expected):
    keywords = ["camping", "last", "weekend"]
    assert idf_keyword_share_in_thread(keywords, content, context, {}, weight) == pytest.approx(expected)
    if not context or weight == 0:
        assert idf_keyword_share_in_thread(keywords, content, context, {}, weight) == idf_keyword_share(keywords, content, {})


def test_idf_keyword_share_in_thread_weighs_by_idf():
    idf = {"camping": 3.0, "weekend": 1.0}
    assert idf_keyword_share_in_thread(["camping", "weekend"], "A weekend away", "Going camping?", idf, 0.5) == pytest.approx(1 / 4 + 0.5 * 3 / 4)


def test_idf_keyword_share_hyphenated_and_stopword_keywords():
    assert idf_keyword_share(["project-alpha"], "Project alpha kickoff", {}) == 1.0
    assert idf_keyword_share(["project-alpha"], "Project kickoff", {}) == 0.0
    assert idf_keyword_share(["their", "database"], "database", {}) == 1.0


@pytest.mark.parametrize(
    ("bm25", "max_bm25", "expected"),
    [(None, 10.0, 0.0), (5.0, 10.0, 0.5), (5.0, 0.0, 0.0), (12.0, 10.0, 1.0), (10.0, 10.0, 1.0)],
)
def test_bm25_normalized(bm25, max_bm25, expected):
    assert bm25_normalized(bm25, max_bm25) == expected


METADATA = {
    "source": "Claude Code",
    "project": ["Engram", "AutoMem"],
    "entities": {"people": ["Rachel Green"], "tools": ["OpenSearch"]},
    "enrichment": {"summary": "not whitelisted"},
    "model": 42,
    "repo": "x" * 257,
}


def test_metadata_fields_are_automems_whitelist():
    assert METADATA_FIELDS == (
        "source", "source_agent", "source_agents", "repo", "project", "tool", "surface",
        "applies_to", "trigger", "provider", "model", "entities",
    )


def test_metadata_terms_flatten_whitelisted_strings_with_tokens():
    assert metadata_terms(METADATA) == [
        "claude code", "claude", "code", "engram", "automem",
        "rachel green", "rachel", "green", "opensearch",
    ]
    assert metadata_terms(METADATA, include_entities=False) == [
        "claude code", "claude", "code", "engram", "automem",
    ]
    assert metadata_terms(None) == []


def test_tag_score_worked_example():
    assert tag_score(EXAMPLE_KEYWORDS, ["project-alpha", "database"], []) == pytest.approx(1 / 3)


def test_tag_score_uses_metadata_terms_and_whole_tags():
    assert tag_score(["locomo", "bench"], ["Bench-Mark"], ["locomo"]) == 0.5
    assert tag_score(["bench-mark"], ["Bench-Mark"], []) == 1.0
    assert tag_score([], ["x"], ["x"]) == 0.0


@pytest.mark.parametrize(
    ("cap", "tags", "expected"),
    [
        (3, ["alpha", "bravo"], 2 / 3),
        (3, ["alpha", "bravo", "charlie", "delta"], 1.0),
        (0, ["alpha", "bravo"], 0.4),
    ],
)
def test_tag_score_token_cap(cap, tags, expected):
    keywords = ["alpha", "bravo", "charlie", "delta", "echo"]
    assert tag_score(keywords, tags, [], token_cap=cap) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("query", "expected"),
    [(" Claude Code ", 1.0), ("claude", 1.0), ("Claude Desktop", 0.0), ("", 0.0), ("42", 0.0)],
)
def test_exact_score(query, expected):
    assert exact_score(query, METADATA) == expected


def test_exact_score_ignores_fields_outside_the_whitelist():
    assert exact_score("claude", {"note": "claude"}) == 0.0


@pytest.mark.parametrize(
    ("query", "metadata", "expected"),
    [
        # both value tokens hit, value exact in the query, no field named
        ("claude code memories", {"source": "claude-code"}, 0.95),
        # field named, one long hit: .15 + .45/2 + .20 + .20
        ("memories from source claude", {"source": "Claude Code", "tool": "claude"}, 0.775),
        # entities only when the query names them; people never
        ("entity tools opensearch", {"entities": {"tools": ["OpenSearch"]}}, 1.0),
        ("opensearch", {"entities": {"tools": ["OpenSearch"]}}, 0.0),
        ("entity rachel", {"entities": {"people": ["Rachel"]}}, 0.0),
        # a named repo must cover every value term of the query
        ("repo verygoodplugins mcp", {"repo": "verygoodplugins/automem"}, 0.0),
        # one short hit is weak evidence
        ("api notes", {"project": "api"}, 0.0),
        # a field other than the named one scores x0.6
        ("source agent claude code", {"tool": "claude code"}, 0.57),
        ("", {"source": "claude"}, 0.0),
        ("claude", None, 0.0),
    ],
)
def test_metadata_score_matches_automem_sidecar(query, metadata, expected):
    assert metadata_score([], query, metadata) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("age_days", "curve", "expected"),
    [
        (54, "linear", 0.7),
        (90, "linear", 0.5),
        (180, "linear", 0.0),
        (200, "linear", 0.0),
        (0, "linear", 1.0),
        (-5, "linear", 1.0),
        (180, "exp", 0.5),
        (360, "exp", 0.25),
    ],
)
def test_recency_score(age_days, curve, expected):
    cfg = RecencyConfig(curve=curve)
    assert recency_score(NOW - timedelta(days=age_days), NOW, cfg) == pytest.approx(expected)


def test_recency_score_window_and_missing_timestamp():
    assert recency_score(NOW - timedelta(days=45), NOW, RecencyConfig(90)) == pytest.approx(0.5)
    assert recency_score(None, NOW, RecencyConfig()) == 0.0


def test_recency_score_treats_naive_datetimes_as_utc():
    naive_then = (NOW - timedelta(days=90)).replace(tzinfo=None)
    assert recency_score(naive_then, NOW, RecencyConfig()) == pytest.approx(0.5)
    assert recency_score(
        NOW - timedelta(days=90), NOW.replace(tzinfo=None), RecencyConfig()
    ) == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("query_dates", "terms", "expected"),
    [
        ((), ("d:2023-05-07",), 0.0),
        ((("m:2023-07",),), ("d:2023-07-03", "m:2023-07", "y:2023"), 1.0),
        ((("m:2023-07",),), ("m:2023-06", "y:2023"), 0.0),
        ((("d:2023-05-01", "d:2023-05-02"),), ("d:2023-05-02",), 1.0),  # "last week": any of its days
        ((("y:2023",), ("mo:06",)), ("y:2023", "mo:05"), 0.5),
    ],
)
def test_date_match(query_dates, terms, expected):
    assert date_match(query_dates, terms) == expected
