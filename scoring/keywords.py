"""Query keywords, content word sets and the stemmer.

`extract_keywords` reproduces AutoMem's `_extract_keywords` (automem/utils/text.py): the
response's `keywords` field and every keyword-based component start from it. `stem` and
`stemmed_words` approximate OpenSearch's `english` analyzer (possessive stemmer, lowercase,
English stop words, Porter stemmer) so the engram keyword component sees the same words the
BM25 arm matched.
"""

from __future__ import annotations

from collections.abc import Sequence

import re
import threading
from functools import lru_cache

import snowballstemmer

# automem/utils/text.py SEARCH_STOPWORDS, word for word.
STOPWORDS: frozenset[str] = frozenset(
    {
        "the",
        "and",
        "for",
        "with",
        "that",
        "this",
        "from",
        "into",
        "using",
        "have",
        "will",
        "your",
        "about",
        "after",
        "before",
        "when",
        "then",
        "than",
        "also",
        "just",
        "very",
        "more",
        "less",
        "over",
        "under",
    }
)

# automem/utils/text.py `_extract_keywords`: shorter tokens are dropped.
MIN_KEYWORD_LENGTH = 3
# automem/utils/text.py `_extract_keywords`: the token pattern (applied to lowercased text).
_KEYWORD_TOKEN = re.compile(r"[A-Za-z0-9_\-]+")
# automem/utils/text.py `_extract_keywords`: characters stripped from both ends of a token.
_EDGE_CHARS = "-_"

# Lucene EnglishAnalyzer.ENGLISH_STOP_WORDS_SET, the stop list of OpenSearch's `english`
# analyzer: these words never reach the index, so they never count as a stemmed match.
ENGLISH_ANALYZER_STOPWORDS: frozenset[str] = frozenset(
    {
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into",
        "is", "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then",
        "there", "these", "they", "this", "to", "was", "will", "with",
    }
)
# OpenSearch `english` analyzer: `english_possessive_stemmer` drops a trailing 's (also ’s).
_POSSESSIVE = re.compile(r"['’]s\b")
# Standard tokenizer, approximated: letters, digits and underscores form a word; everything
# else (hyphens, apostrophes, punctuation) separates words. A longer run is cut every 255
# characters (max_token_length), so no stem outgrows the stored stems' ignore_above (256).
_ANALYZER_TOKEN = re.compile(r"[a-z0-9_]{1,255}")
# OpenSearch `english` analyzer ends with `porter_stem`; Snowball's "porter" is the same
# (original) Porter algorithm.
_STEMMER_ALGORITHM = "porter"
_local = threading.local()


# Engram profile only: words that make a query a question but say nothing about its topic.
# Dropping them from the keyword component raised recall@5 on the LoCoMo dev slice from 0.562 to
# 0.581 (bench/tune_locomo.py); AutoMem's own keyword list is left untouched (it is echoed).
QUESTION_WORDS: frozenset[str] = frozenset(
    {
        "what", "which", "who", "whom", "whose", "where", "why", "how", "did", "does", "was",
        "were", "are", "has", "had", "can", "could", "would", "should", "shall", "might", "must",
    }
)


def topic_keywords(keywords: Sequence[str]) -> list[str]:
    """Keywords without question words; all of them when nothing else is left."""
    topical = [k for k in keywords if k not in QUESTION_WORDS]
    return topical or list(keywords)


def extract_keywords(query: str | None) -> list[str]:
    """Lowercase keyword tokens of a query, in order, without stop words or duplicates."""
    if not query:
        return []
    keywords: list[str] = []
    seen: set[str] = set()
    for token in _KEYWORD_TOKEN.findall(query.lower()):
        cleaned = token.strip(_EDGE_CHARS)
        if len(cleaned) < MIN_KEYWORD_LENGTH or cleaned in STOPWORDS or cleaned in seen:
            continue
        seen.add(cleaned)
        keywords.append(cleaned)
    return keywords


def content_words(text: str | None) -> set[str]:
    """The word set a memory's content offers to the keyword share check.

    Tokens are cut and cleaned exactly as query keywords are (so a keyword such as
    `project-alpha` finds itself), and hyphen/underscore-joined tokens also contribute their
    parts (so `state` is found in `state-of-the-art`).
    """
    words: set[str] = set()
    if not text:
        return words
    for token in _KEYWORD_TOKEN.findall(text.lower()):
        cleaned = token.strip(_EDGE_CHARS)
        if not cleaned:
            continue
        words.add(cleaned)
        words.update(part for part in re.split(r"[-_]+", cleaned) if part)
    return words


def _stemmer() -> snowballstemmer.stemmer:
    # Snowball stemmers keep per-call state, so each thread gets its own.
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = snowballstemmer.stemmer(_STEMMER_ALGORITHM)
        _local.stemmer = stemmer
    return stemmer


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Porter stem of one lowercased word (`decisions` -> `decis`)."""
    return _stemmer().stemWord(word.lower())


def analyzer_tokens(text: str | None) -> list[str]:
    """Lowercased words as the `english` analyzer cuts them, before stop words and stemming."""
    if not text:
        return []
    lowered = text.lower()
    if "'" in lowered or "’" in lowered:  # the possessive scan costs more than the tokens themselves
        lowered = _POSSESSIVE.sub("", lowered)
    return _ANALYZER_TOKEN.findall(lowered)


# Cached: the same memories come back query after query (8192 contents ≈ 20 MB).
@lru_cache(maxsize=8192)
def stemmed_words(text: str | None) -> frozenset[str]:
    """Stems of the words of `text`, as OpenSearch's `english` analyzer would index them."""
    # Each distinct word once: contents repeat words, and this runs for every candidate.
    words = set(analyzer_tokens(text))
    words -= ENGLISH_ANALYZER_STOPWORDS
    return frozenset(map(stem, words))


@lru_cache(maxsize=4096)
def keyword_stems(keyword: str) -> tuple[str, ...]:
    """Stems a keyword must find in the content; a hyphenated keyword needs all its parts."""
    return tuple(
        stem(token) for token in analyzer_tokens(keyword) if token not in ENGLISH_ANALYZER_STOPWORDS
    )
