"""scoring.keywords: AutoMem's keyword extraction and the stemmer."""

import pytest

from scoring.keywords import (
    STOPWORDS,
    content_words,
    extract_keywords,
    keyword_stems,
    stem,
    stemmed_words,
)

pytestmark = pytest.mark.unit


def test_stopwords_are_automems_search_stopwords():
    assert STOPWORDS == {
        "the", "and", "for", "with", "that", "this", "from", "into", "using", "have", "will",
        "your", "about", "after", "before", "when", "then", "than", "also", "just", "very",
        "more", "less", "over", "under",
    }


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("PostgreSQL database decisions", ["postgresql", "database", "decisions"]),
        ("The --fast__ API and the api, API!", ["fast", "api"]),
        ("using the rate limiter with Redis", ["rate", "limiter", "redis"]),
        ("go to db", []),
        ("project-alpha's roadmap", ["project-alpha", "roadmap"]),
        ("snake_case vs camelCase", ["snake_case", "camelcase"]),
        ("", []),
        (None, []),
    ],
)
def test_extract_keywords(query, expected):
    assert extract_keywords(query) == expected


def test_content_words_include_hyphen_parts():
    assert content_words("State-of-the-art, PostgreSQL!") == {
        "state-of-the-art", "state", "of", "the", "art", "postgresql",
    }
    assert content_words(None) == set()


@pytest.mark.parametrize(
    ("word", "expected"),
    [("decisions", "decis"), ("Running", "run"), ("databases", "databas"), ("alpha", "alpha")],
)
def test_stem_is_porter(word, expected):
    assert stem(word) == expected


def test_stemmed_words_drop_possessives_and_analyzer_stopwords():
    assert stemmed_words("The user's decisions about databases") == {
        "user", "decis", "about", "databas",
    }
    assert stemmed_words("") == set()


def test_keyword_stems_split_hyphens_and_skip_stopwords():
    assert keyword_stems("project-alpha") == ("project", "alpha")
    assert keyword_stems("their") == ()


@pytest.mark.unit
@pytest.mark.parametrize(
    ("keywords", "expected"),
    [
        (["did", "caroline", "lgbtq", "support", "group"], ["caroline", "lgbtq", "support", "group"]),
        (["what", "would", "caroline", "political"], ["caroline", "political"]),
        (["how", "does"], ["how", "does"]),  # nothing topical left: keep them all
        ([], []),
    ],
)
def test_topic_keywords_drop_question_words(keywords, expected):
    from scoring.keywords import topic_keywords

    assert topic_keywords(keywords) == expected
