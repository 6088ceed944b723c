"""The per-candidate score components, as pure functions.

Each function reproduces one AutoMem definition (the file it comes from is named in its
docstring) unless it belongs to the `engram` profile (`idf_keyword_share`, `bm25_normalized`).
"""

from __future__ import annotations

import math
import re
import unicodedata
from functools import lru_cache
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from scoring.keywords import content_words, keyword_stems, stemmed_words
from scoring.weights import RecencyConfig

# automem/search/runtime_recall_helpers.py METADATA_SEARCH_FIELDS: the whitelisted metadata
# fields searched by the sidecar and echoed into the `metadata_terms` keyword field.
METADATA_FIELDS: tuple[str, ...] = (
    "source",
    "source_agent",
    "source_agents",
    "repo",
    "project",
    "tool",
    "surface",
    "applies_to",
    "trigger",
    "provider",
    "model",
    "entities",
)
# automem/utils/scoring.py `_collect_metadata_terms`: longer strings are not terms.
MAX_METADATA_TERM_LENGTH = 256
# automem/utils/scoring.py `_collect_metadata_terms`: the token pattern inside a term.
_METADATA_TERM_TOKEN = re.compile(r"[a-z0-9_\-]+")
SECONDS_PER_DAY = 86400.0

# --- keyword arm (automem/search/runtime_recall_helpers.py `_graph_keyword_search`) ---------
KEYWORD_CONTENT_POINTS = 2  # "content CONTAINS kw THEN 2"
KEYWORD_TAG_POINTS = 1  # "any(tag IN tags WHERE tag CONTAINS kw) THEN 1"
PHRASE_CONTENT_POINTS = 2  # "content CONTAINS $phrase THEN 2"
PHRASE_TAG_POINTS = 1  # "any(tag ... CONTAINS $phrase) THEN 1"
MIN_PHRASE_LENGTH = 3  # "phrase = normalized if len(normalized) >= 3 else ''"

# --- metadata sidecar (automem/search/runtime_recall_helpers.py `_metadata_match_score`) ----
METADATA_FIELD_ALIASES: dict[str, tuple[str, ...]] = {  # METADATA_FIELD_ALIASES
    "source": ("source",),
    "source_agent": ("source agent", "source agents"),
    "source_agents": ("source agents", "source agent"),
    "repo": ("repo", "repository"),
    "project": ("project",),
    "tool": ("tool",),
    "surface": ("surface",),
    "applies_to": ("applies to", "apply to"),
    "trigger": ("trigger",),
    "provider": ("provider",),
    "model": ("model",),
    "entities": ("entity", "entities"),
}
METADATA_QUERY_STOPWORDS = frozenset(  # METADATA_QUERY_STOPWORDS
    {
        "all", "any", "about", "by", "find", "for", "from", "in", "me", "memory", "memories",
        "of", "on", "please", "show", "that", "the", "to", "with",
    }
)
METADATA_FIELD_TOKENS = frozenset(  # METADATA_FIELD_TOKENS: words that name a field
    {
        "source", "agent", "agents", "repo", "repository", "project", "tool", "surface",
        "applies", "apply", "trigger", "provider", "model", "entity", "entities", "metadata",
    }
)
MAX_METADATA_STRING_LENGTH = 96  # MAX_METADATA_STRING_LENGTH: longer values are not matched
MAX_METADATA_ARRAY_LENGTH = 12  # MAX_METADATA_ARRAY_LENGTH: longer lists are not matched
# Entity people are content-derived personal names, never matched by the sidecar.
METADATA_EXCLUDED_ENTITY_CATEGORIES = frozenset({"people"})
MIN_SEARCH_TOKEN_LENGTH = 2  # `_search_tokens`: len(token) >= 2
MIN_METADATA_VALUE_TOKEN_LENGTH = 3  # query value tokens: len(token) >= 3
MIN_STRONG_HIT_LENGTH = 5  # `_metadata_value_has_strong_evidence`: len(hit) < 5 is weak
MIN_REQUESTED_EXACT_HIT_LENGTH = 3  # ... unless the field was requested and the value exact
MAX_QUERY_TOKENS_FOR_EXACT = 3  # ... or the value is exact in a query of <= 3 value tokens
METADATA_BASE = 0.15  # score = 0.15 + 0.45*value_ratio + 0.20*query_ratio + ...
METADATA_VALUE_RATIO_WEIGHT = 0.45
METADATA_QUERY_RATIO_WEIGHT = 0.20
METADATA_EXACT_BONUS = 0.15
METADATA_FIELD_NAMED_BONUS = 0.20
METADATA_UNREQUESTED_FIELD_FACTOR = 0.6  # "if requested_fields and not field_requested"


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


def idf_keyword_share(
    keywords: Sequence[str], content: str | None, idf: Mapping[str, float]
) -> float:
    """engram profile, keyword option A: share of the keywords' IDF mass found in the content.

    A keyword counts as found when all its stems are in the content's stemmed word set (so
    `decisions` finds `decision`). A keyword missing from `idf` weighs as much as the rarest
    known keyword (a term the index has never seen is maximally informative); with an empty
    `idf` every keyword weighs 1. Keywords the `english` analyzer drops as stop words carry no
    mass. Result in [0, 1].
    """
    return _idf_share(keywords, stemmed_words(content), idf)


def idf_keyword_share_in_thread(
    keywords: Sequence[str], content: str | None, thread_context: str | None, idf: Mapping[str, float], weight: float
) -> float:
    """`idf_keyword_share`, where a keyword found only in the memory's thread context (the memory
    before it in its thread) counts `weight` times as much as one found in its own content:
    own + weight x (share over content and context - own). Without context (or weight 0) it is
    `idf_keyword_share` exactly. Result in [0, 1]."""
    own = idf_keyword_share(keywords, content, idf)
    if not thread_context or weight <= 0:
        return own
    both = _idf_share(keywords, stemmed_words(content) | stemmed_words(thread_context), idf)
    return own + min(1.0, weight) * max(0.0, both - own)


def _idf_share(keywords: Sequence[str], words: frozenset[str], idf: Mapping[str, float]) -> float:
    if not keywords:
        return 0.0
    known = [max(0.0, float(value)) for value in idf.values()]
    default_weight = max(known) if known else 1.0
    total = 0.0
    found = 0.0
    for keyword in keywords:
        stems = keyword_stems(keyword)
        if not stems:
            continue
        weight = max(0.0, float(idf[keyword])) if keyword in idf else default_weight
        total += weight
        if all(s in words for s in stems):
            found += weight
    return found / total if total > 0 else 0.0


def bm25_normalized(bm25: float | None, max_bm25: float) -> float:
    """engram profile, keyword option B: BM25 divided by the best BM25 of the candidate set."""
    if bm25 is None or max_bm25 is None or max_bm25 <= 0:
        return 0.0
    return max(0.0, min(1.0, float(bm25) / float(max_bm25)))


# --------------------------------------------------------------------------------------------
# metadata terms, tag, exact


def _visit_strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _visit_strings(item)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield from _visit_strings(item)


def metadata_terms(
    metadata: Mapping[str, Any] | None, *, include_entities: bool = True
) -> list[str]:
    """Lowercased terms of the whitelisted metadata values, in first-seen order.

    For every string value (lists and nested dicts such as `entities: {people: [...]}` are
    flattened) of at most 256 characters: the whole stripped lowercased value and each of its
    `[a-z0-9_-]+` tokens, as AutoMem's `_collect_metadata_terms` (automem/utils/scoring.py).
    `include_entities=False` leaves out the generated `entities`, which AutoMem ignores for the
    tag component.
    """
    if not isinstance(metadata, Mapping):
        return []
    terms: dict[str, None] = {}
    for name in METADATA_FIELDS:
        if name not in metadata or (name == "entities" and not include_entities):
            continue
        for raw in _visit_strings(metadata[name]):
            value = raw.strip()
            if not value or len(value) > MAX_METADATA_TERM_LENGTH:
                continue
            lowered = value.lower()
            terms[lowered] = None
            for token in _METADATA_TERM_TOKEN.findall(lowered):
                terms[token] = None
    return list(terms)


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
    tag_terms = {str(tag).lower() for tag in tags}
    terms = set(metadata_terms)
    hits = sum(1 for keyword in keywords if keyword in tag_terms or keyword in terms)
    denominator = min(len(keywords), token_cap) if token_cap > 0 else len(keywords)
    return min(1.0, hits / denominator)


def exact_from_terms(query: str | None, terms: Iterable[str]) -> float:
    """1.0 when the whole lowercased, stripped query is one of the metadata terms."""
    normalized = (query or "").strip().lower()
    if not normalized:
        return 0.0
    return 1.0 if normalized in set(terms) else 0.0


def exact_score(query: str | None, metadata: Mapping[str, Any] | None) -> float:
    """spec 001 "Exact": whole-query exact match against metadata terms.

    1.0 when the lowercased stripped query equals a whitelisted metadata string value
    (<= 256 characters) or one of its tokens (automem/utils/scoring.py), else 0.0.
    """
    return exact_from_terms(query, metadata_terms(metadata))


# --------------------------------------------------------------------------------------------
# metadata sidecar score


def _ascii_search_text(value: Any) -> str:
    return _ascii_text(str(value))


# Cached: the query and the same metadata values recur for every candidate of a recall.
@lru_cache(maxsize=8192)
def _ascii_text(value: str) -> str:
    text = unicodedata.normalize("NFKD", value).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^A-Za-z0-9]+", " ", text)
    return re.sub(r"\s+", " ", text).strip().lower()


def _search_tokens(value: Any) -> frozenset[str]:
    return _tokens_of(str(value))


@lru_cache(maxsize=8192)
def _tokens_of(value: str) -> frozenset[str]:
    return frozenset(
        token
        for token in re.findall(r"[a-z0-9]+", _ascii_text(value))
        if len(token) >= MIN_SEARCH_TOKEN_LENGTH
    )


def _scalar_values(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        stripped = value.strip()
        if stripped and len(stripped) <= MAX_METADATA_STRING_LENGTH:
            yield stripped
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield str(value)
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)
        if len(items) > MAX_METADATA_ARRAY_LENGTH:
            return
        for item in items:
            yield from _scalar_values(item)


def _sidecar_values(metadata: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    for name in METADATA_FIELDS:
        if name not in metadata:
            continue
        raw = metadata[name]
        if name == "entities":
            if not isinstance(raw, Mapping):
                continue
            for category, values in raw.items():
                category_name = str(category).strip().lower()
                if not category_name or category_name in METADATA_EXCLUDED_ENTITY_CATEGORIES:
                    continue
                if isinstance(values, Mapping):
                    continue
                for item in _scalar_values(values):
                    yield f"entities.{category_name}", item
            continue
        if isinstance(raw, Mapping):
            continue
        for item in _scalar_values(raw):
            yield name, item


@lru_cache(maxsize=1024)
def requested_metadata_fields(query: str | None) -> frozenset[str]:
    """Whitelisted fields the query names ("source agent", "repo", "entities", ...)."""
    normalized = _ascii_search_text(query or "")
    if not normalized:
        return frozenset()
    padded = f" {normalized} "
    requested: set[str] = set()
    by_phrase: set[str] = set()
    for name, aliases in METADATA_FIELD_ALIASES.items():
        for alias in aliases:
            alias_text = _ascii_search_text(alias)
            if " " in alias_text and f" {alias_text} " in padded:
                requested.add(name)
                by_phrase.add(name)
    tokens = set(normalized.split())
    for name, aliases in METADATA_FIELD_ALIASES.items():
        if name in by_phrase:
            continue
        for alias in aliases:
            alias_text = _ascii_search_text(alias)
            if " " in alias_text or alias_text not in tokens:
                continue
            if alias_text == "source" and requested & {"source_agent", "source_agents"}:
                continue
            requested.add(name)
    return frozenset(requested)


def _field_requested(field_name: str, requested: set[str]) -> bool:
    if not requested:
        return True
    base = field_name.split(".", 1)[0]
    if base in {"source_agent", "source_agents"}:
        return bool(requested & {"source_agent", "source_agents"})
    return base in requested


def _strong_evidence(
    *,
    hits: set[str],
    value_tokens: set[str],
    query_tokens: set[str],
    exact_hit: bool,
    field_requested: bool,
    requested: set[str],
) -> bool:
    if len(value_tokens) > 1 and len(hits) >= min(2, len(value_tokens)):
        return True
    if len(hits) != 1:
        return False
    hit = next(iter(hits))
    if field_requested and requested and exact_hit and len(hit) >= MIN_REQUESTED_EXACT_HIT_LENGTH:
        return True
    if len(hit) < MIN_STRONG_HIT_LENGTH:
        return False
    if field_requested and requested:
        return True
    return exact_hit and len(query_tokens) <= MAX_QUERY_TOKENS_FOR_EXACT


def metadata_score(
    keywords: Sequence[str], query: str | None, metadata: Mapping[str, Any] | None
) -> float:
    """The metadata sidecar's match score (automem/search/runtime_recall_helpers.py).

    The best, over the whitelisted values, of
    `min(1, .15 + .45*value_ratio + .20*query_ratio + .15*exact + .20*field_named)` where
    value_ratio = hits / value tokens, query_ratio = hits / query value tokens, exact = the
    whole normalised value occurs in the normalised query, field_named = the query names the
    value's field; a value from a field other than the named ones scores x0.6. A value only
    counts with strong evidence (two hits on a multi-word value, or one long or exact hit).
    Generated `entities` are matched only when the query names them, `entities.people` never.
    0.0 when nothing matches.

    AutoMem tokenises the query itself (ASCII-folded, split on every non-alphanumeric), so
    `keywords` is accepted for a uniform signature and not used.
    """
    del keywords  # see docstring: the sidecar's own tokenisation is AutoMem's
    if not isinstance(metadata, Mapping) or not query:
        return 0.0
    query_tokens = {
        token
        for token in _search_tokens(query)
        if token not in METADATA_FIELD_TOKENS
        and token not in METADATA_QUERY_STOPWORDS
        and len(token) >= MIN_METADATA_VALUE_TOKEN_LENGTH
    }
    if not query_tokens:
        return 0.0
    requested = requested_metadata_fields(query)
    normalized_query = _ascii_search_text(query)
    best = 0.0
    for field_name, value in _sidecar_values(metadata):
        value_text = _ascii_search_text(value)
        value_tokens = _search_tokens(value)
        if not value_text or not value_tokens:
            continue
        hits = query_tokens & value_tokens
        if not hits:
            continue
        exact_hit = value_text in normalized_query
        field_requested = _field_requested(field_name, requested)
        if field_name.startswith("entities.") and "entities" not in requested:
            continue
        if field_name == "repo" and "repo" in requested and not exact_hit:
            if query_tokens - value_tokens:
                continue
        if requested and not field_requested and len(hits) < 2:
            continue
        if not _strong_evidence(
            hits=hits,
            value_tokens=value_tokens,
            query_tokens=query_tokens,
            exact_hit=exact_hit,
            field_requested=field_requested,
            requested=requested,
        ):
            continue
        value_ratio = len(hits) / len(value_tokens)
        query_ratio = len(hits) / len(query_tokens)
        score = min(
            1.0,
            METADATA_BASE
            + METADATA_VALUE_RATIO_WEIGHT * value_ratio
            + METADATA_QUERY_RATIO_WEIGHT * query_ratio
            + (METADATA_EXACT_BONUS if exact_hit else 0.0)
            + (METADATA_FIELD_NAMED_BONUS if requested and field_requested else 0.0),
        )
        if requested and not field_requested:
            score *= METADATA_UNREQUESTED_FIELD_FACTOR
        best = max(best, score)
    return best


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
