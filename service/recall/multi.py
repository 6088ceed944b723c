"""Several queries in one recall (`queries`, `auto_decompose`): what to run, and merging the answers."""

from __future__ import annotations

import re
from collections.abc import Sequence

from scoring.floors import content_fingerprint
from scoring.keywords import extract_keywords
from scoring.rerank import ScoredCandidate
from service.recall.request import RecallRequest

_NAME = re.compile(r"\b([A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)\b")
_QUESTION_WORDS = {"what", "when", "where", "who", "how", "why", "did", "does", "is"}


def query_list(req: RecallRequest) -> list[str]:
    """`query` first, then `queries`, then auto_decompose's supplementary queries; no repeats."""
    out = list(req.queries)
    if req.query and req.query not in out:
        out.insert(0, req.query)
    if req.auto_decompose and req.query:
        out += [q for q in decompose(req.query) if q not in out]
    return out


def decompose(query: str) -> list[str]:
    """auto_decompose (spec 000): up to three topic keywords; with capitalised names (at most two),
    each name alone and combined with the topic keywords."""
    keywords = extract_keywords(query)
    first_word = query.split()[0] if query.split() else ""
    names = [n for n in dict.fromkeys(_NAME.findall(query)) if n != first_word or n.lower() not in _QUESTION_WORDS][:2]
    name_words = {w.lower() for n in names for w in n.split()}
    topics = [k for k in keywords if k not in name_words][:3]
    if not names:
        return topics
    out: list[str] = []
    for name in names:
        out.append(name)
        if topics:
            out.append(" ".join([name, *topics]))
    return out


def merge(ranked_lists: Sequence[Sequence[ScoredCandidate]]) -> tuple[list[ScoredCandidate], int, dict[str, list[str]]]:
    """spec 000 "Multiple Query Deduplication": dedupe by id, then by content fingerprint; the higher
    score wins. Returns (merged by score, removed, {kept id: ids merged into it by content})."""
    by_id: dict[str, ScoredCandidate] = {}
    removed = 0
    for ranked in ranked_lists:
        for s in ranked:
            prev = by_id.get(s.candidate.id)
            if prev is not None:
                removed += 1
                if s.final_score > prev.final_score:
                    by_id[s.candidate.id] = s
            else:
                by_id[s.candidate.id] = s
    by_print: dict[str, ScoredCandidate] = {}
    deduped_from: dict[str, list[str]] = {}
    out: list[ScoredCandidate] = []
    for s in sorted(by_id.values(), key=lambda x: -x.final_score):
        fp = content_fingerprint(s.candidate.content)
        if fp and fp in by_print:
            removed += 1
            deduped_from.setdefault(by_print[fp].candidate.id, []).append(s.candidate.id)
            continue
        if fp:
            by_print[fp] = s
        out.append(s)
    return out, removed, deduped_from
