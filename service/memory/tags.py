"""Tag normalisation and hierarchy prefixes (spec 000: Tag Filtering; spec 003: Notes).

A tag's hierarchy segments are separated by ':' or '/'. `tag_prefixes` stores every segment
prefix of every tag, lowercased and joined with ':', so a prefix filter is an exact `terms`
lookup: `slack` matches `slack:channel:x` but not `slackbot`; `auth/login` matches
`auth:login:password`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

_SEPARATORS = re.compile(r"[:/]")


def clean_tags(tags: Iterable[str]) -> list[str]:
    """Strip whitespace, drop empties and duplicates; keep the caller's spelling and order."""
    seen: set[str] = set()
    out: list[str] = []
    for tag in tags:
        tag = str(tag).strip()
        if tag and tag not in seen:
            seen.add(tag)
            out.append(tag)
    return out


def normalize_tag(tag: str) -> str:
    return tag.strip().lower()


def hierarchy_key(tag: str) -> str:
    """`Auth/Login` -> `auth:login`: the form prefixes are stored and matched in."""
    return ":".join(seg for seg in _SEPARATORS.split(normalize_tag(tag)) if seg)


def tag_prefixes(tags: Iterable[str]) -> list[str]:
    prefixes: dict[str, None] = {}
    for tag in tags:
        segments = [seg for seg in _SEPARATORS.split(normalize_tag(tag)) if seg]
        for i in range(1, len(segments) + 1):
            prefixes[":".join(segments[:i])] = None
    return list(prefixes)


def split_list_param(values: Iterable[str] | str | None) -> list[str]:
    """List parameters accept repeated parameters and comma-separated values alike."""
    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    out: list[str] = []
    for value in values:
        out.extend(part.strip() for part in str(value).split(","))
    return [v for v in out if v]


def unaccented(name: str) -> str:
    """Lowercase without accents ("zurich" for "Zürich", "zoe" for "Zoë"): how a name is looked up in a
    list that spells it otherwise (the census names are ASCII), and how an entity tag's slug spells it.
    Letters that do not decompose ("ø", "ł") are kept."""
    return "".join(ch for ch in unicodedata.normalize("NFKD", name.lower()) if not unicodedata.combining(ch))


# Longer metadata strings are not names (and would not fit a keyword term); as metadata_terms.
MAX_ENTITY_LENGTH = 256


def entity_names(tags: Iterable[str], metadata: dict | None) -> list[str]:
    """Lowercased entity names from `entity:<type>:<slug>` tags and metadata.entities (any type)."""
    names: dict[str, None] = {}
    for tag in tags:
        parts = [p for p in _SEPARATORS.split(normalize_tag(tag)) if p]
        if len(parts) >= 3 and parts[0] == "entity":
            names[":".join(parts[2:])] = None
    entities = (metadata or {}).get("entities")
    stack = [entities]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if item.strip() and len(item) <= MAX_ENTITY_LENGTH:
                names[item.strip().lower()] = None
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))  # reversed: the stack pops in document order
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
    return list(names)
