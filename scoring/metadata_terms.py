"""Metadata terms: the whitelisted metadata values of a memory as lowercased terms.

They are stored with each memory (the `metadata_terms` keyword field the metadata arm searches) and
read by the tag, exact and context components. AutoMem's `_collect_metadata_terms`
(automem/utils/scoring.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

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


def _strings(value: Any, out: list[str]) -> None:
    """Appends every string in `value`, lists and nested mappings flattened (no generators: this
    runs for every candidate of every recall)."""
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, Mapping):
        for item in value.values():
            _strings(item, out)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            _strings(item, out)


# Cached: metadata values are categorical (sources, projects, tools, names) and recur across the
# memories of every recall.
@lru_cache(maxsize=16384)
def _terms_of(raw: str) -> tuple[str, ...]:
    """The whole stripped lowercased value and its tokens; nothing for an empty or too long value."""
    value = raw.strip()
    if not value or len(value) > MAX_METADATA_TERM_LENGTH:
        return ()
    lowered = value.lower()
    return (lowered, *_METADATA_TERM_TOKEN.findall(lowered))


@lru_cache(maxsize=16384)
def _term_set(raw: str) -> frozenset[str]:
    return frozenset(_terms_of(raw))


_FIELDS = frozenset(METADATA_FIELDS) - {"entities"}
_NONE: frozenset[str] = frozenset()


def metadata_term_sets(metadata: Mapping[str, Any] | None) -> tuple[frozenset[str], frozenset[str]]:
    """`metadata_terms` as sets (with and without `entities`): what the tag, exact and context
    components test membership in, built from cached per-value sets (this runs for every candidate)."""
    if not isinstance(metadata, Mapping):
        return _NONE, _NONE
    strings: list[str] = []
    for name in _FIELDS.intersection(metadata):
        _strings(metadata[name], strings)
    without = _NONE.union(*map(_term_set, strings)) if strings else _NONE
    if "entities" not in metadata:
        return without, without
    strings = []
    _strings(metadata["entities"], strings)
    return (without.union(*map(_term_set, strings)) if strings else without), without


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
    strings: list[str] = []
    for name in METADATA_FIELDS:
        if name in metadata and (include_entities or name != "entities"):
            _strings(metadata[name], strings)
    terms: dict[str, None] = {}
    for raw in strings:
        terms.update(dict.fromkeys(_terms_of(raw)))
    return list(terms)


def as_term_set(terms: Iterable[str]) -> frozenset[str] | set[str]:
    """Terms to test membership in: a set as it is, anything else copied into one."""
    return terms if isinstance(terms, (set, frozenset)) else set(terms)
