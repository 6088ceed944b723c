"""The per-candidate score components, as pure functions.

Each function reproduces one AutoMem definition (the file it comes from is named in its
docstring) unless it belongs to the `engram` profile (`idf_keyword_share`, `bm25_normalized`).
The larger ones live in modules of their own and are named here too: metadata terms
(metadata_terms.py), the metadata sidecar (metadata_sidecar.py), the IDF keyword share
(idf_share.py).
"""

from __future__ import annotations

from functools import lru_cache

import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from scoring.idf_share import idf_keyword_share, idf_keyword_share_in_thread
from scoring.keywords import content_words
from scoring.metadata_sidecar import metadata_score, requested_metadata_fields
from scoring.metadata_terms import METADATA_FIELDS, as_term_set, metadata_terms
from scoring.weights import RecencyConfig

SECONDS_PER_DAY = 86400.0

# --- keyword arm (automem/search/runtime_recall_helpers.py `_graph_keyword_search`) ---------
KEYWORD_CONTENT_POINTS = 2  # "content CONTAINS kw THEN 2"
KEYWORD_TAG_POINTS = 1  # "any(tag IN tags WHERE tag CONTAINS kw) THEN 1"
PHRASE_CONTENT_POINTS = 2  # "content CONTAINS $phrase THEN 2"
PHRASE_TAG_POINTS = 1  # "any(tag ... CONTAINS $phrase) THEN 1"
MIN_PHRASE_LENGTH = 3  # "phrase = normalized if len(normalized) >= 3 else ''"


# --------------------------------------------------------------------------------------------
# vector


def cosine_from_lucene(score: float) -> float:
    """Cosine similarity from a Lucene `cosinesimil` kNN score, which is (1 + cos) / 2."""
    return max(-1.0, min(1.0, 2.0 * float(score) - 1.0))


# --------------------------------------------------------------------------------------------
# keyword


def keyword_share(keywords: Sequence[str], content: str | None) -> float:
    """Share of the query keywords found in the content's word set.

    AutoMem's keyword component for vector-arm results (automem/utils/scoring.py; pinned by its
    tests: "AutoJack debugging notes" for [autojack, recall] gives 0.5).
    """
    if not keywords:
        return 0.0
    words = content_words(content)
    return sum(1 for keyword in keywords if keyword in words) / len(keywords)


def keyword_points(
    keywords: Sequence[str], query: str | None, content: str | None, tags: Iterable[str]
) -> float:
    """AutoMem's keyword-arm score (automem/search/runtime_recall_helpers.py).

    +2 per keyword contained in the lowercased content, +1 per keyword contained in some
    lowercased tag, +2 / +1 when the whole lowercased query (if it has >= 3 characters) is
    contained in the content / a tag; divided by the maximum, `3 * len(keywords) + 3` when
    there is a phrase (3 when there are no keywords but a phrase), and capped at 1.
    Containment is substring containment, as Cypher's CONTAINS.
    """
    normalized = (query or "").strip().lower()
    phrase = normalized if len(normalized) >= MIN_PHRASE_LENGTH else ""
    if not keywords and not phrase:
        return 0.0
    text = (content or "").lower()
    tag_texts = [str(tag).lower() for tag in tags]
    points = 0
    for keyword in keywords:
        if keyword in text:
            points += KEYWORD_CONTENT_POINTS
        if any(keyword in tag for tag in tag_texts):
            points += KEYWORD_TAG_POINTS
    per_keyword = KEYWORD_CONTENT_POINTS + KEYWORD_TAG_POINTS
    per_phrase = PHRASE_CONTENT_POINTS + PHRASE_TAG_POINTS
    if phrase:
        if phrase in text:
            points += PHRASE_CONTENT_POINTS
        if any(phrase in tag for tag in tag_texts):
            points += PHRASE_TAG_POINTS
    if keywords:
        max_points = per_keyword * len(keywords) + (per_phrase if phrase else 0)
    else:
        max_points = per_phrase
    return min(1.0, points / max_points)


def bm25_normalized(bm25: float | None, max_bm25: float) -> float:
    """engram profile, keyword option B: BM25 divided by the best BM25 of the candidate set."""
    if bm25 is None or max_bm25 is None or max_bm25 <= 0:
        return 0.0
    return max(0.0, min(1.0, float(bm25) / float(max_bm25)))


# --------------------------------------------------------------------------------------------
# metadata terms, tag, exact


def tag_score(
    keywords: Sequence[str],
    tags: Iterable[str],
    metadata_terms: Iterable[str],
    *,
    token_cap: int = 0,
) -> float:
    """Share of query keywords equal to a whole lowercased tag or metadata term, capped at 1.

    spec 001 "Tag: min(1, matched_tokens / total_query_tokens)". `token_cap` is AutoMem's
    SEARCH_TAG_SCORE_TOKEN_CAP (automem/config.py): a positive cap replaces the denominator by
    min(len(keywords), cap); 0 (the default) keeps the full keyword count.
    """
    if not keywords:
        return 0.0
    tag_terms = _lowered_tags(tags)
    terms = as_term_set(metadata_terms)
    hits = 0
    for keyword in keywords:
        if keyword in tag_terms or keyword in terms:
            hits += 1
    denominator = min(len(keywords), token_cap) if token_cap > 0 else len(keywords)
    return min(1.0, hits / denominator)


def _lowered_tags(tags: Iterable[str]) -> frozenset[str] | set[str]:
    if type(tags) is tuple:
        try:
            return _lowered(tags)
        except TypeError:  # an unhashable stored value: read it uncached
            pass
    return {str(tag).lower() for tag in tags}


# Cached: a memory's tags come back recall after recall, and many memories share one tag set.
@lru_cache(maxsize=16384)
def _lowered(tags: tuple) -> frozenset[str]:
    return frozenset(str(tag).lower() for tag in tags)


def exact_from_terms(query: str | None, terms: Iterable[str]) -> float:
    """1.0 when the whole lowercased, stripped query is one of the metadata terms."""
    normalized = (query or "").strip().lower()
    if not normalized:
        return 0.0
    return 1.0 if normalized in as_term_set(terms) else 0.0


def exact_score(query: str | None, metadata: Mapping[str, Any] | None) -> float:
    """spec 001 "Exact": whole-query exact match against metadata terms.

    1.0 when the lowercased stripped query equals a whitelisted metadata string value
    (<= 256 characters) or one of its tokens (automem/utils/scoring.py), else 0.0.
    """
    return exact_from_terms(query, metadata_terms(metadata))


# --------------------------------------------------------------------------------------------
# dates (engram profile)


def date_match(query_dates: Sequence[Sequence[str]], date_terms: Iterable[str]) -> float:
    """Share of the query's dates the memory meets: a date is met when one of its terms (the
    days, months or years it names) is among the memory's `date_terms` (its timestamp's date and
    the dates its content speaks of, resolved at write time). 0.0 when the query names no date."""
    if not query_dates:
        return 0.0
    have = set(date_terms)
    return sum(1 for terms in query_dates if have.intersection(terms)) / len(query_dates)


# --------------------------------------------------------------------------------------------
# recency


def as_utc(moment: datetime) -> datetime:
    """A timezone-aware datetime; naive ones are taken as UTC (automem/utils/time.py)."""
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment


def recency_score(timestamp: datetime | None, now: datetime, cfg: RecencyConfig) -> float:
    """spec 001 "Recency": age decay from the memory's timestamp.

    linear: max(0, 1 - age_days / window); exp: 0.5 ** (age_days / window). A missing
    timestamp scores 0.0, a timestamp at or after `now` scores 1.0.
    """
    if timestamp is None:
        return 0.0
    age_days = (as_utc(now) - as_utc(timestamp)).total_seconds() / SECONDS_PER_DAY
    if age_days <= 0:
        return 1.0
    if cfg.curve == "exp":
        return math.pow(0.5, age_days / cfg.window_days)
    return max(0.0, 1.0 - age_days / cfg.window_days)


__all__ = [
    "METADATA_FIELDS",
    "as_utc",
    "bm25_normalized",
    "cosine_from_lucene",
    "date_match",
    "exact_from_terms",
    "exact_score",
    "idf_keyword_share",
    "idf_keyword_share_in_thread",
    "keyword_points",
    "keyword_share",
    "metadata_score",
    "metadata_terms",
    "recency_score",
    "requested_metadata_fields",
    "tag_score",
]
