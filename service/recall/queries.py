"""Pure builders of recall's arms (STYLE.md practice 4): plain values in, dicts out. Every arm shares
one filter (service/filters/clauses.py RecallFilter), built once, and all arms travel in one `_msearch`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from service.filters.clauses import IMPORTANCE_SORT, OBSERVATION_TYPE, SORT_ORDERS, SOURCE, WHOLE_SOURCE, RecallFilter, candidate_must_not, fact_type_clause
from service.filters.scripts import TEMPORAL_SCORE_SCRIPT, with_cosine
from service.filters.tag_groups import groups_clause

# Long queries simply work: the engine refuses a query of more than 1,024 clauses (maxClauseCount)
# and the keyword arm makes one per analysed token and field, so lexical arms see at most this many
# distinct tokens, each at most MAX_TOKEN_CHARS long (word_delimiter_graph splits long mixed tokens
# further). Queries are ~5-30 words; embedding always sees the whole text.
MAX_QUERY_TOKENS = 64
MAX_TOKEN_CHARS = 40
# What the standard tokenizer makes one token of: a run of word characters, or one CJK character.
_TOKENS = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]|[^\W\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
def lexical_text(query: str) -> str:
    """The query as the lexical arms see it: unchanged when short, else its first MAX_QUERY_TOKENS
    distinct tokens (each cut to MAX_TOKEN_CHARS), so no query can pass the engine's clause limit."""
    tokens = _TOKENS.findall(query)
    if len(tokens) <= MAX_QUERY_TOKENS and all(len(t) <= MAX_TOKEN_CHARS for t in tokens):
        return query
    kept: dict[str, None] = {}
    for token in tokens:
        kept.setdefault(token[:MAX_TOKEN_CHARS], None)
        if len(kept) >= MAX_QUERY_TOKENS:
            break
    return " ".join(kept)


def observation_sources(source: dict) -> list[str]:
    """The memories a MetaPattern summarises (consolidation writes them into its metadata)."""
    if source.get("type") != OBSERVATION_TYPE:
        return []
    meta = source.get("metadata") or {}
    consolidation = meta.get("consolidation") if isinstance(meta, dict) else None
    members = consolidation.get("member_ids") if isinstance(consolidation, dict) else None
    return [str(m) for m in members] if isinstance(members, list) else []


def effective_excluded_types(excluded_types: Sequence[str], fact_types: Sequence[str]) -> tuple[str, ...]:
    """RECALL_EXCLUDED_TYPES, less MetaPattern when observations are asked for."""
    if fact_types and "observation" not in fact_types:
        return tuple(excluded_types)
    return tuple(t for t in excluded_types if not (fact_types and t == OBSERVATION_TYPE))


def recall_filter(req, at: datetime, excluded_types: Sequence[str]) -> RecallFilter:
    """The filter every arm of `req` shares. In current mode not-yet-valid and expired memories never
    reach a page (graph.current_state); superseded ones do, so their chain's head can take their place.
    state_debug moves the validity rules to Python so each suppression is named. Tag groups and fact
    types are hard filters (`extra`): graph expansion and chain heads obey them too."""
    must_not = tuple(candidate_must_not(at, in_python=req.state_debug, as_of=req.as_of is not None)) if req.state_mode == "current" else ()
    extra = tuple(c for c in (groups_clause(req.tag_groups), fact_type_clause(req.fact_types)) if c is not None)
    return RecallFilter(
        bank=req.bank, tags=tuple(req.tags), tag_mode=req.tag_mode, tag_match=req.tag_match, exclude_tags=tuple(req.exclude_tags),
        start=req.window.start if req.window else None, end=req.window.end if req.window else None,
        excluded_types=effective_excluded_types(excluded_types, req.fact_types), extra=extra, extra_must_not=must_not,
        window_facets=req.window_facets, who=req.who, project=req.project, pinned=req.pinned, types=tuple(req.types),
        importance_min=req.importance_min, since=req.since, until=req.until, caller_tags=req.caller_tags_only,
    )


def heads_query(ids: Sequence[str], bank: str, head_filter: dict, vector: Sequence[float] | None) -> dict:
    """The next memories of supersession chains; the named query `head` tells which may be returned."""
    query = {"bool": {
        "filter": [{"term": {"bank": bank}}, {"ids": {"values": list(ids)}}],
        "should": [{"bool": {"filter": [head_filter], "_name": "head"}}],
    }}
    return with_cosine({"size": len(ids), "_source": WHOLE_SOURCE, "query": query}, vector)


def bm25_query(query: str, context_boost: float = 0.0) -> dict:
    """Content (english analyzer) and tags, with a phrase boost; with `context_boost`, the thread
    context too (the text of the memory before it in its thread), at that boost."""
    should: list[dict] = [
        {"match": {"content": {"query": query}}},
        {"match": {"tags_text": {"query": query, "boost": 0.5}}},
        {"match_phrase": {"content.exact": {"query": query, "slop": 1, "boost": 2.0}}},
    ]
    if context_boost > 0:
        should.append({"match": {"thread_context": {"query": query, "boost": context_boost}}})
    return {"bool": {"should": should, "minimum_should_match": 1}}


def knn_arm(vector: Sequence[float], k: int, flt: dict) -> dict:
    """Filtered kNN (Lucene HNSW); the hit score is (1 + cos) / 2."""
    return {"size": k, "_source": SOURCE, "query": {"knn": {"embedding": {"vector": list(vector), "k": k, "filter": flt}}}}


def keyword_arm(query: str, size: int, flt: dict, context_boost: float = 0.0) -> dict:
    """BM25 over content and tags (and the thread context with `context_boost`); the hit score is the BM25 score."""
    return {"size": size, "_source": SOURCE, "query": {"bool": {"must": [bm25_query(query, context_boost)], "filter": [flt]}}}


def metadata_arm(query: str, keywords: Sequence[str], size: int, flt: dict) -> dict:
    """The metadata sidecar: whitelisted metadata values matching the query or its keywords."""
    terms = list(dict.fromkeys([query.strip().lower(), *keywords]))
    should: list[dict] = [
        {"terms": {"metadata_terms": terms, "boost": 2.0}},
        {"match": {"metadata_text": {"query": query}}},
    ]
    return {
        "size": size,
        "_source": SOURCE,
        "query": {"bool": {"must": [{"bool": {"should": should, "minimum_should_match": 1}}], "filter": [flt]}},
    }


def doc_counts_arm(flt: dict, keywords: Sequence[str]) -> dict:
    """size-0 counts for the engram keyword component's IDF, in one search: the documents in scope
    (the total) and, per keyword, those whose content matches it (a `filters` aggregation; one search
    per count cost the engine a whole search each)."""
    body: dict = {"size": 0, "track_total_hits": True, "query": {"bool": {"filter": [flt]}}}
    if keywords:
        body["aggs"] = {"df": {"filters": {"filters": {kw: {"match": {"content": {"query": kw}}} for kw in keywords}}}}
    return body


def trending_arm(size: int, flt: dict, sort: str) -> dict:
    """No query (or `*`): high-importance memories, ordered per `sort` (importance first for `score`)."""
    order = SORT_ORDERS.get(sort, IMPORTANCE_SORT)
    return {"size": size, "_source": SOURCE, "query": flt, "sort": order if order is IMPORTANCE_SORT else order + [{"id": "asc"}]}


def with_min_score(arm: dict, score: float | None) -> dict:
    """The arm, keeping only hits scoring at least `score` (the engine's top-level min_score)."""
    return arm if score is None else {**arm, "min_score": score}


def knn_min_score(cosine: float | None) -> float | None:
    """A cosine floor as the kNN hit score it corresponds to: Lucene's cosinesimil scores (1 + cos) / 2."""
    return None if cosine is None else (1.0 + cosine) / 2.0


def temporal_arm(start: datetime | None, end: datetime | None, size: int, flt: dict, vector: Sequence[float] | None) -> dict:
    """Memories dated inside [start, end] (both inclusive; either may be open) that pass the shared
    filter: by cosine to the query when there is a vector, else newest first. A candidate source,
    never a filter on the others."""
    rng: dict = {}
    if start is not None:
        rng["gte"] = start.isoformat()
    if end is not None:
        rng["lte"] = end.isoformat()
    dated = {"bool": {"filter": [flt, {"range": {"timestamp": rng}}]}}
    if vector is None:
        return {"size": size, "_source": SOURCE, "query": dated, "sort": [{"timestamp": {"order": "desc"}}, {"id": "asc"}]}
    scored = {"script_score": {"query": dated, "script": {"source": TEMPORAL_SCORE_SCRIPT, "params": {"query_value": list(vector)}}}}
    return with_cosine({"size": size, "_source": SOURCE, "query": scored}, vector)


def ids_arm(ids: Sequence[str], flt: dict) -> dict:
    """Fetch given ids under every filter (priority_ids)."""
    return {"size": len(ids), "_source": SOURCE, "query": {"bool": {"filter": [flt, {"ids": {"values": list(ids)}}]}}}


def anchor_arm(size: int, flt: dict, tag_keys: Sequence[str], types: Sequence[str]) -> dict | None:
    """Memories matching the context profile (tags, types), to inject as anchors when none ranked."""
    should: list[dict] = []
    if tag_keys:
        should.append({"terms": {"tag_prefixes": list(tag_keys)}})
    if types:
        should.append({"terms": {"type": list(types)}})
    if not should:
        return None
    query = {"bool": {"filter": [flt, {"bool": {"should": should, "minimum_should_match": 1}}]}}
    return {"size": size, "_source": SOURCE, "query": query, "sort": IMPORTANCE_SORT}
