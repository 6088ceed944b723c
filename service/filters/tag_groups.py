"""Boolean tag filters — Hindsight's `tags` + `tags_match` and `tag_groups` — as pure DSL builders.

A memory's scope is its caller tags: the tags it was stored with, not the `entity:...` tags the
enrichment worker derives (those are recorded in `enrichment.derived_tags`). For requested tags T
and a memory's caller tags M, a leaf matches when (Hindsight's definitions, spec 002):

    any         M ∩ T ≠ ∅  or  M = ∅      (untagged memories are global)
    all         T ⊆ M      or  M = ∅
    any_strict  M ∩ T ≠ ∅
    all_strict  T ⊆ M
    exact       M = T as sets; with T = ∅ only untagged memories

Tags compare as given (case-sensitive), as Hindsight's do. A leaf with no tags constrains nothing,
except `exact`, which then selects the untagged. Groups: a list is AND-ed; `{"and": [...]}`,
`{"or": [...]}`, `{"not": ...}` nest. A leaf with `resolve: "fuzzy"` is first rewritten to the
bank's tags that are similar to its own by trigram similarity (`resolve_fuzzy`, pg_trgm's measure).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

MATCHES = ("any", "all", "any_strict", "all_strict", "exact")
RESOLVES = ("exact", "fuzzy")
# pg_trgm's default similarity_threshold: `similarity(a, b) >= 0.3` is its `a % b`.
FUZZY_THRESHOLD = 0.3
# Bank tags read for fuzzy resolution (one terms aggregation); banks with more distinct tags resolve
# against their most used ones.
BANK_TAGS_MAX = 10_000

# Painless over doc values: a memory whose every tag is one enrichment derived has no caller tags.
_CALLER_COUNT = (
    "def derived = doc['enrichment.derived_tags']; int n = 0; "
    "for (def t : doc['tags']) { if (!derived.contains(t)) { n++; } } "
)
ONLY_DERIVED_SCRIPT = _CALLER_COUNT + "return n == 0;"
CALLER_COUNT_SCRIPT = _CALLER_COUNT + "return n == params.n;"
MATCH_NONE = {"bool": {"must_not": [{"match_all": {}}]}}
# Whether a caller tag (one enrichment did not derive) has the hierarchy key params.key or one below
# it: service/memory/tags.py hierarchy_key, in painless (no regex: they are limited by default).
CALLER_PREFIX_SCRIPT = (
    "def derived = doc['enrichment.derived_tags']; "
    "for (def tag : doc['tags']) { if (derived.contains(tag)) { continue; } "
    "String[] parts = tag.toLowerCase().replace('/', ':').splitOnToken(':'); StringBuilder b = new StringBuilder(); "
    "for (String p : parts) { String q = p.trim(); if (q.length() > 0) { if (b.length() > 0) { b.append(':'); } b.append(q); } } "
    "String k = b.toString(); if (k == params.key || k.startsWith(params.key + ':')) { return true; } } "
    "return false;"
)


@dataclass(frozen=True)
class Leaf:
    tags: tuple[str, ...]
    match: str = "any_strict"  # Hindsight's TagGroupLeaf default
    resolve: str = "exact"

    def __post_init__(self) -> None:
        if self.match not in MATCHES:
            raise ValueError(f"match must be one of {', '.join(MATCHES)}; got {self.match!r}")
        if self.resolve not in RESOLVES:
            raise ValueError(f"resolve must be one of {', '.join(RESOLVES)}; got {self.resolve!r}")


@dataclass(frozen=True)
class And:
    children: tuple[Group, ...]


@dataclass(frozen=True)
class Or:
    children: tuple[Group, ...]


@dataclass(frozen=True)
class Not:
    child: Group


Group = Leaf | And | Or | Not


# --- DSL --------------------------------------------------------------------------------------
def untagged_clause() -> dict:
    """Memories without caller tags: no tags at all, or only tags enrichment derived."""
    only_derived = {"bool": {"filter": [
        {"exists": {"field": "enrichment.derived_tags"}},
        {"script": {"script": {"lang": "painless", "source": ONLY_DERIVED_SCRIPT}}},
    ]}}
    return {"bool": {"should": [{"bool": {"must_not": [{"exists": {"field": "tags"}}]}}, only_derived], "minimum_should_match": 1}}


def caller_tag(tag: str) -> dict:
    """Memories carrying `tag` (as given) as a caller tag: not one enrichment derived."""
    return {"bool": {"filter": [{"term": {"tags": tag}}], "must_not": [{"term": {"enrichment.derived_tags": tag}}]}}


def caller_prefix(key: str) -> dict:
    """Memories with a caller tag whose hierarchy key is `key` or below it. Derived tags count only
    for memories enrichment derived no tag on, which is the script-free fast path."""
    return {"bool": {"filter": [{"term": {"tag_prefixes": key}}], "should": [
        {"bool": {"must_not": [{"exists": {"field": "enrichment.derived_tags"}}]}},
        {"script": {"script": {"lang": "painless", "source": CALLER_PREFIX_SCRIPT, "params": {"key": key}}}},
    ], "minimum_should_match": 1}}


def leaf_clause(leaf: Leaf) -> dict | None:
    """The leaf's filter, or None when it constrains nothing."""
    tags = list(dict.fromkeys(leaf.tags))
    if leaf.match == "exact":
        if not tags:
            return untagged_clause()
        count = {"script": {"script": {"lang": "painless", "source": CALLER_COUNT_SCRIPT, "params": {"n": len(tags)}}}}
        return {"bool": {"filter": [*(caller_tag(t) for t in tags), count]}}
    if not tags:
        return None
    each = [caller_tag(t) for t in tags]
    if leaf.match in ("any", "any_strict"):
        tagged: dict = each[0] if len(each) == 1 else {"bool": {"should": each, "minimum_should_match": 1}}
    else:
        tagged = {"bool": {"filter": each}}
    if leaf.match.endswith("_strict"):
        return tagged
    return {"bool": {"should": [tagged, untagged_clause()], "minimum_should_match": 1}}


def group_clause(group: Group) -> dict | None:
    """The group's filter, or None when it constrains nothing."""
    if isinstance(group, Leaf):
        return leaf_clause(group)
    if isinstance(group, And):
        parts = [c for c in (group_clause(g) for g in group.children) if c is not None]
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else {"bool": {"filter": parts}}
    if isinstance(group, Or):
        if not group.children:
            return None
        parts = [group_clause(g) for g in group.children]
        if any(p is None for p in parts):  # one alternative admits every memory
            return None
        return parts[0] if len(parts) == 1 else {"bool": {"should": parts, "minimum_should_match": 1}}
    inner = group_clause(group.child)
    return MATCH_NONE if inner is None else {"bool": {"must_not": [inner]}}


def groups_clause(groups: Sequence[Group]) -> dict | None:
    """The request's groups, AND-ed."""
    return group_clause(And(tuple(groups))) if groups else None


# --- fuzzy resolution -------------------------------------------------------------------------
_WORD = re.compile(r"[^\W_]+")


def trigrams(text: str) -> frozenset[str]:
    """pg_trgm's trigrams: each alphanumeric word, lowercased, padded with two spaces in front and
    one behind, cut into every run of three characters."""
    out: set[str] = set()
    for word in _WORD.findall(text.lower()):
        padded = f"  {word} "
        out.update(padded[i : i + 3] for i in range(len(padded) - 2))
    return frozenset(out)


def similarity(a: str, b: str) -> float:
    """pg_trgm `similarity(a, b)`: shared trigrams over all trigrams of either."""
    ta, tb = trigrams(a), trigrams(b)
    union = ta | tb
    return len(ta & tb) / len(union) if union else 0.0


def leaves(group: Group) -> Iterable[Leaf]:
    if isinstance(group, Leaf):
        yield group
    elif isinstance(group, (And, Or)):
        for g in group.children:
            yield from leaves(g)
    else:
        yield from leaves(group.child)


def has_fuzzy(groups: Sequence[Group]) -> bool:
    return any(leaf.resolve == "fuzzy" for g in groups for leaf in leaves(g))


def resolve_leaf(leaf: Leaf, bank_tags: Sequence[str], threshold: float = FUZZY_THRESHOLD) -> Leaf:
    """The bank's tags similar to any of the leaf's (best first, then alphabetical); the leaf's own
    tags when none is similar enough, so a miss still matches nothing it should not."""
    if leaf.resolve != "fuzzy":
        return leaf
    scored = []
    for tag in bank_tags:
        best = max((similarity(tag, wanted) for wanted in leaf.tags), default=0.0)
        if best >= threshold or tag in leaf.tags:
            scored.append((-best, tag))
    found = tuple(tag for _, tag in sorted(scored))
    return replace(leaf, tags=found or leaf.tags, resolve="exact")


def resolve_fuzzy(group: Group, bank_tags: Sequence[str], threshold: float = FUZZY_THRESHOLD) -> Group:
    if isinstance(group, Leaf):
        return resolve_leaf(group, bank_tags, threshold)
    if isinstance(group, And):
        return And(tuple(resolve_fuzzy(g, bank_tags, threshold) for g in group.children))
    if isinstance(group, Or):
        return Or(tuple(resolve_fuzzy(g, bank_tags, threshold) for g in group.children))
    return Not(resolve_fuzzy(group.child, bank_tags, threshold))


def bank_tags_body(bank: str, size: int = BANK_TAGS_MAX) -> dict:
    """The bank's distinct tags, most used first (one terms aggregation)."""
    return {"size": 0, "query": {"term": {"bank": bank}}, "aggs": {"tags": {"terms": {"field": "tags", "size": size}}}}


def parse_bank_tags(resp: dict) -> list[str]:
    return [b["key"] for b in resp.get("aggregations", {}).get("tags", {}).get("buckets", [])]


def depth(group: Group) -> int:
    if isinstance(group, Leaf):
        return 1
    if isinstance(group, Not):
        return 1 + depth(group.child)
    return 1 + max((depth(g) for g in group.children), default=0)
