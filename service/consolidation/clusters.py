"""Clusters of near-duplicate and closely related memories, and their extractive summaries. Pure.

The neighbour pairs come from kNN searches in the engine (cosine >= CONSOLIDATION_CLUSTER_SIMILARITY_THRESHOLD,
0.75); clusters are the connected components of that graph with at least CONSOLIDATION_MIN_CLUSTER_SIZE
(3) members, as in AutoMem's `cluster_similar_memories`. Where AutoMem's MetaPattern content is
"Meta-pattern: <type> cluster with N memories over D days. Theme: <first member's first 100
characters>", ours is extractive and offline: the keywords most members share, and the opening of
the member closest to the cluster's centroid (its most typical member).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from scoring.keywords import ENGLISH_ANALYZER_STOPWORDS, QUESTION_WORDS, extract_keywords

# Words too common to name a theme (on top of AutoMem's keyword stop list).
THEME_STOPWORDS = ENGLISH_ANALYZER_STOPWORDS | QUESTION_WORDS | frozenset(
    {"was", "were", "has", "had", "our", "you", "his", "her", "she", "him", "its", "they", "them", "we", "but", "not"}
)
# A keyword names the cluster's theme when at least this share of members use it.
KEYWORD_SHARE = 0.5
MAX_KEYWORDS = 5
# The representative excerpt: whole sentences of the central member, up to this many characters.
EXCERPT_CHARS = 240
META_ID_PREFIX = "metapattern-"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class Member:
    id: str
    content: str
    type: str | None
    tags: tuple[str, ...]
    importance: float | None
    timestamp_days: float | None  # days since the epoch, for the time span
    vector: tuple[float, ...]


@dataclass(frozen=True)
class Summary:
    meta_id: str
    member_ids: tuple[str, ...]
    central_id: str
    dominant_type: str
    time_span_days: int
    keywords: tuple[str, ...]
    shared_tags: tuple[str, ...]
    importance: float
    content: str
    centroid: tuple[float, ...]


def components(ids: Sequence[str], pairs: Iterable[tuple[str, str]], min_size: int) -> list[list[str]]:
    """Connected components of the neighbour graph with >= min_size members: largest first, each
    sorted by id (so the order is stable whatever order the pairs came in)."""
    parent = {i: i for i in ids}

    def root(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:
        if a in parent and b in parent:
            ra, rb = root(a), root(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    groups: dict[str, list[str]] = {}
    for i in ids:
        groups.setdefault(root(i), []).append(i)
    found = [sorted(g) for g in groups.values() if len(g) >= min_size]
    return sorted(found, key=lambda g: (-len(g), g[0]))


def local_clusters(
    starts: Sequence[str], fetch: Callable[[list[str]], Mapping[str, Sequence[tuple[str, float]]]],
    threshold: float, *, cap: int = 50, budget: int = 2000,
) -> dict[str, str | None]:
    """Which cluster each of `starts` is in, exploring only their own components.

    `fetch(ids)` returns each id's nearest neighbours as (id, cosine); it is called once per id.
    Each start's component is walked breadth-first over edges with cosine >= `threshold`, and the
    edges found are joined in one union-find, so two starts get the same representative exactly
    when a walk connected them. A component larger than `cap`, or a walk that would pass `budget`
    fetched ids in all, is unknown: None (callers then treat the memory as clustered with
    anything). Cost: the size of the components touched, not of the corpus."""
    parent: dict[str, str] = {}
    fetched: dict[str, Sequence[tuple[str, float]]] = {}
    unknown: set[str] = set()
    done: set[str] = set()

    def root(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for start in starts:
        if start in done:
            continue
        seen, frontier = {start}, [start]
        while frontier:
            todo = [x for x in frontier if x not in fetched]
            if len(seen) > cap or len(fetched) + len(todo) > budget:
                unknown.update(seen)
                break
            if todo:
                got = fetch(todo)
                fetched.update({x: got.get(x, ()) for x in todo})
            nxt = []
            for x in frontier:
                for y, cos in fetched[x]:
                    if cos >= threshold:
                        parent[root(y)] = root(x)
                        if y not in seen:
                            seen.add(y)
                            nxt.append(y)
            frontier = nxt
        done.update(seen)
    out: dict[str, str | None] = {}
    for x in set(parent) | set(starts):
        out[x] = None if x in unknown else root(x)
    return out


def normalized(vector: Sequence[float]) -> tuple[float, ...]:
    norm = math.sqrt(sum(v * v for v in vector))
    return tuple(v / norm for v in vector) if norm > 0 else tuple(0.0 for _ in vector)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(y * y for y in b))
    if na == 0 or nb == 0 or len(a) != len(b):
        return 0.0
    return max(-1.0, min(1.0, sum(x * y for x, y in zip(a, b)) / (na * nb)))


def centroid(vectors: Sequence[Sequence[float]]) -> tuple[float, ...]:
    """The unit-length mean direction of the members' (unit-length) vectors."""
    units = [normalized(v) for v in vectors]
    return normalized([sum(col) / len(units) for col in zip(*units)])


def central_member(members: Sequence[Member], center: Sequence[float]) -> Member:
    """The member closest to the centroid; ties go to the smaller id. O(n * d), not O(n^2 * d)."""
    return min(members, key=lambda m: (-cosine(m.vector, center), m.id))


def dominant_type(types: Iterable[str | None]) -> str:
    counts = Counter(t or "Context" for t in types)
    return min(counts, key=lambda t: (-counts[t], t))


def shared_keywords(contents: Sequence[str], share: float = KEYWORD_SHARE, limit: int = MAX_KEYWORDS) -> list[str]:
    """Keywords used by at least `share` of the members (and by two at least), most shared first."""
    df: Counter[str] = Counter()
    for text in contents:
        df.update({k for k in extract_keywords(text) if k not in THEME_STOPWORDS and not k.isdigit()})
    need = max(2, math.ceil(share * len(contents)))
    common = [k for k, n in df.items() if n >= need]
    return sorted(common, key=lambda k: (-df[k], k))[:limit]


def shared_tags(tag_lists: Sequence[Sequence[str]]) -> list[str]:
    """Tags every member carries (case-insensitive; the first member's spelling and order)."""
    if not tag_lists:
        return []
    common = set.intersection(*({t.lower() for t in tags} for tags in tag_lists))
    return [t for t in tag_lists[0] if t.lower() in common]


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """Leading whole sentences up to `limit` characters (the first sentence cut at a word if longer)."""
    text = " ".join(text.split())
    out = ""
    for sentence in _SENTENCE_END.split(text):
        candidate = f"{out} {sentence}".strip()
        if len(candidate) > limit:
            break
        out = candidate
    if not out:
        cut = text[:limit].rsplit(" ", 1)[0] if len(text) > limit else text
        out = cut + ("..." if len(text) > limit else "")
    return out


def meta_id(member_ids: Iterable[str]) -> str:
    """Deterministic: re-clustering the same members rewrites the same summary, never a second one."""
    digest = hashlib.sha1("\n".join(sorted(member_ids)).encode()).hexdigest()[:24]
    return META_ID_PREFIX + digest


def summarize(members: Sequence[Member]) -> Summary:
    center = centroid([m.vector for m in members])
    central = central_member(members, center)
    kind = dominant_type(m.type for m in members)
    days = [m.timestamp_days for m in members if m.timestamp_days is not None]
    span = int(max(days) - min(days)) if days else 0
    keywords = shared_keywords([m.content for m in members])
    theme = f" Shared keywords: {', '.join(keywords)}." if keywords else ""
    content = (
        f"Meta-pattern: {kind} cluster with {len(members)} memories over {span} days.{theme} "
        f"Representative: {excerpt(central.content)}"
    )
    importance = max((m.importance for m in members if isinstance(m.importance, (int, float))), default=0.5)
    return Summary(
        meta_id=meta_id(m.id for m in members), member_ids=tuple(sorted(m.id for m in members)),
        central_id=central.id, dominant_type=kind, time_span_days=span, keywords=tuple(keywords),
        shared_tags=tuple(shared_tags([m.tags for m in members])), importance=float(importance),
        content=content, centroid=center,
    )
