"""The metadata sidecar's match score (automem/search/runtime_recall_helpers.py
`_metadata_match_score`): how well the query names a memory's whitelisted metadata values."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from functools import lru_cache
from typing import Any

from scoring.metadata_terms import METADATA_FIELDS

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
