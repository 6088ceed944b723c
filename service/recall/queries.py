"""Pure builders of the OpenSearch DSL for recall (STYLE.md practice 4): plain values in, dicts out.

Every arm shares one filter, built once, and all arms travel in one `_msearch`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from service.dateterms import window_terms
from service.graph.current_state import active_must_not, candidate_must_not
from service.recall.tag_groups import groups_clause
from service.storage.queries import IMPORTANCE_SORT
from service.tags import hierarchy_key, normalize_tag

SOURCE_EXCLUDES = ["embedding", "tags_norm", "metadata_terms"]
# Long queries simply work: the engine refuses a query of more than 1,024 clauses (maxClauseCount)
# and the keyword arm makes one per analysed token and field, so lexical arms see at most this many
# distinct tokens, each at most MAX_TOKEN_CHARS long (word_delimiter_graph splits long mixed tokens
# further). Queries are ~5-30 words; embedding always sees the whole text.
MAX_QUERY_TOKENS = 64
MAX_TOKEN_CHARS = 40
# What the standard tokenizer makes one token of: a run of word characters, or one CJK character.
_TOKENS = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]|[^\W\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
# k-NN's painless extension; the result is the plain cosine in [-1, 1], or null for a memory stored
# without a vector (without the guard, one such hit fails its whole arm).
COSINE_SCRIPT = "if (doc['embedding'].size() == 0) { return null; } return cosineSimilarity(params.query_value, doc['embedding']);"
# The temporal arm ranks the memories dated in its window by 1 + cosine (script_score wants >= 0).
TEMPORAL_SCORE_SCRIPT = "if (doc['embedding'].size() == 0) { return 0.0; } return 1.0 + cosineSimilarity(params.query_value, doc['embedding']);"
# Consolidation's cluster summaries are Hindsight's observations.
OBSERVATION_TYPE = "MetaPattern"


@dataclass(frozen=True)
class RecallFilter:
    bank: str
    tags: tuple[str, ...] = ()
    tag_mode: str = "any"  # any | all
    tag_match: str = "prefix"  # prefix | exact
    exclude_tags: tuple[str, ...] = ()
    start: datetime | None = None
    end: datetime | None = None
    excluded_types: tuple[str, ...] = ()
    extra: tuple[dict, ...] = field(default=())  # more filter clauses
    extra_must_not: tuple[dict, ...] = field(default=())
    window_facets: tuple[str, ...] | None = None  # see window_clause
    who: str | None = None
    project: str | None = None
    pinned: bool | None = None
    types: tuple[str, ...] = ()
    importance_min: float | None = None
    since: datetime | None = None
    until: datetime | None = None


# Temporal facets (spec 004 `time.facets`) and the stored times they read. `session`, `source`,
# `observed` and `occurred` name times Engram does not store: alone they match nothing.
TEMPORAL_FACETS = ("session", "source", "captured", "observed", "occurred", "valid")
FACET_FIELDS = {"captured": "timestamp", "valid": "t_valid..t_invalid"}
MATCH_NOTHING = {"bool": {"must_not": [{"match_all": {}}]}}


def window_clause(start: datetime | None, end: datetime | None, facets: Sequence[str] | None) -> dict:
    """The time window. Without facets: `timestamp`, both bounds inclusive (AutoMem's _result_passes_filters).
    With facets: any of them in [start, end) — `captured` is the timestamp, `valid` a validity interval
    [t_valid, t_invalid) that overlaps the window, `occurred` the dates the memory was written on or
    speaks of (`date_terms`, service/dateterms.py; day resolution, bounded windows only)."""
    if facets is None:
        rng: dict = {}
        if start:
            rng["gte"] = start.isoformat()
        if end:
            rng["lte"] = end.isoformat()
        return {"range": {"timestamp": rng}}
    should: list[dict] = []
    if "captured" in facets:
        rng = {}
        if start:
            rng["gte"] = start.isoformat()
        if end:
            rng["lt"] = end.isoformat()
        should.append({"range": {"timestamp": rng}})
    if "valid" in facets:
        valid: dict = {"filter": [{"exists": {"field": "t_valid"}}]}
        if end:
            valid["filter"].append({"range": {"t_valid": {"lt": end.isoformat()}}})
        if start:
            valid["must_not"] = [{"range": {"t_invalid": {"lte": start.isoformat()}}}]
        should.append({"bool": valid})
    if "occurred" in facets and (terms := window_terms(start, end)):
        should.append({"terms": {"date_terms": terms}})
    if not should:
        return MATCH_NOTHING
    return should[0] if len(should) == 1 else {"bool": {"should": should, "minimum_should_match": 1}}


def attribute_clauses(f: RecallFilter) -> list[dict]:
    """Filters on stored fields: who, project, pinned, types, minimum importance, timestamp bounds."""
    out: list[dict] = []
    if f.who is not None:
        out.append({"term": {"who": f.who}})
    if f.project is not None:
        out.append({"term": {"project": f.project}})
    if f.pinned:
        out.append({"term": {"pinned": True}})
    if f.types:
        out.append({"terms": {"type": list(dict.fromkeys(f.types))}})
    if f.importance_min is not None:
        out.append({"range": {"importance": {"gte": f.importance_min}}})
    if f.since or f.until:
        rng: dict = {}
        if f.since:
            rng["gte"] = f.since.isoformat()
        if f.until:
            rng["lte"] = f.until.isoformat()
        out.append({"range": {"timestamp": rng}})
    return out


def tag_clauses(tags: Sequence[str], tag_mode: str, tag_match: str) -> list[dict]:
    if not tags:
        return []
    if tag_match == "exact":
        field_name, values = "tags_norm", [normalize_tag(t) for t in tags]
    else:
        field_name, values = "tag_prefixes", [hierarchy_key(t) for t in tags]
    values = [v for v in dict.fromkeys(values) if v]
    if tag_mode == "all":
        return [{"term": {field_name: v}} for v in values]
    return [{"terms": {field_name: values}}]


def filter_clauses(f: RecallFilter, *, scoped: bool = True) -> dict:
    """The bool filter every arm shares. `scoped=False` lifts only the tag scope (scope_fallback, expansion)."""
    filters: list[dict] = [{"term": {"bank": f.bank}}]
    if scoped:
        filters += tag_clauses(f.tags, f.tag_mode, f.tag_match)
    if f.start or f.end:
        filters.append(window_clause(f.start, f.end, f.window_facets))
    filters += attribute_clauses(f)
    filters += list(f.extra)
    must_not: list[dict] = [{"term": {"archived": True}}]
    if f.exclude_tags:
        # Hierarchy-aware (a deliberate fix of AutoMem's raw string prefix): excluding
        # conversation_5 drops conversation_5 and conversation_5:x but not conversation_50.
        must_not.append({"terms": {"tag_prefixes": [hierarchy_key(t) for t in f.exclude_tags]}})
    if f.excluded_types:
        must_not.append({"terms": {"type": list(f.excluded_types)}})
    must_not += list(f.extra_must_not)
    return {"bool": {"filter": filters, "must_not": must_not}}


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


def fact_type_clause(types: Sequence[str]) -> dict | None:
    """Hindsight's fact types. A memory stored through retain carries `fact_type`; one stored through
    AutoMem carries none and counts as `world`; consolidation's MetaPattern summaries are the
    `observation`s. None when every type (or none) is asked for."""
    wanted = set(types)
    if not wanted or wanted >= {"world", "experience", "observation"}:
        return None
    should: list[dict] = []
    if "world" in wanted:
        should.append({"term": {"fact_type": "world"}})
        should.append({"bool": {"must_not": [{"exists": {"field": "fact_type"}}, {"term": {"type": OBSERVATION_TYPE}}]}})
    if "experience" in wanted:
        should.append({"term": {"fact_type": "experience"}})
    if "observation" in wanted:
        should.append({"term": {"type": OBSERVATION_TYPE}})
    return {"bool": {"should": should, "minimum_should_match": 1}}


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
    must_not = tuple(candidate_must_not(at, in_python=req.state_debug)) if req.state_mode == "current" else ()
    extra = tuple(c for c in (groups_clause(req.tag_groups), fact_type_clause(req.fact_types)) if c is not None)
    return RecallFilter(
        bank=req.bank, tags=tuple(req.tags), tag_mode=req.tag_mode, tag_match=req.tag_match, exclude_tags=tuple(req.exclude_tags),
        start=req.window.start if req.window else None, end=req.window.end if req.window else None,
        excluded_types=effective_excluded_types(excluded_types, req.fact_types), extra=extra, extra_must_not=must_not,
        window_facets=req.window_facets, who=req.who, project=req.project, pinned=req.pinned, types=tuple(req.types),
        importance_min=req.importance_min, since=req.since, until=req.until,
    )


def fallback_filter(f: RecallFilter) -> dict:
    """scope_fallback fills: every filter but the tag scope, and never an in-scope memory (those are in
    scope by definition: already returned, or dropped by a score filter)."""
    unscoped = filter_clauses(f, scoped=False)
    unscoped["bool"]["must_not"] = unscoped["bool"]["must_not"] + tag_clauses(f.tags, "any", f.tag_match)
    return unscoped


def excluding_ids(flt: dict, ids: Sequence[str]) -> dict:
    """`flt` without these memories (session dedupe: the arms fetch a full pool of the others)."""
    return {"bool": {"filter": [flt], "must_not": [{"ids": {"values": sorted(ids)}}]}}


def only_ids(flt: dict, ids: Sequence[str]) -> dict:
    """`flt` restricted to these memories (session dedupe: the suppressed ones, scored as the others are)."""
    return {"bool": {"filter": [flt, {"ids": {"values": sorted(ids)}}]}}


def strictly_current(flt: dict, at: datetime) -> dict:
    """`flt`, and valid, not expired, not superseded at `at`: chain heads and expanded memories."""
    return {"bool": {"filter": [flt], "must_not": active_must_not(at)}}


def heads_query(ids: Sequence[str], bank: str, head_filter: dict, vector: Sequence[float] | None) -> dict:
    """The next memories of supersession chains; the named query `head` tells which may be returned."""
    query = {"bool": {
        "filter": [{"term": {"bank": bank}}, {"ids": {"values": list(ids)}}],
        "should": [{"bool": {"filter": [head_filter], "_name": "head"}}],
    }}
    return with_cosine({"size": len(ids), "_source": SOURCE, "query": query}, vector)


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


SOURCE = {"excludes": SOURCE_EXCLUDES}


def knn_arm(vector: Sequence[float], k: int, flt: dict) -> dict:
    """Filtered kNN (Lucene HNSW); the hit score is (1 + cos) / 2."""
    return {"size": k, "_source": SOURCE, "query": {"knn": {"embedding": {"vector": list(vector), "k": k, "filter": flt}}}}


def keyword_arm(query: str, size: int, flt: dict, context_boost: float = 0.0) -> dict:
    """BM25 over content and tags (and the thread context with `context_boost`); the hit score is the BM25 score."""
    return {"size": size, "_source": SOURCE, "query": {"bool": {"must": [bm25_query(query, context_boost)], "filter": [flt]}}}


def with_cosine(arm: dict, vector: Sequence[float] | None) -> dict:
    """The arm, with each hit's cosine to the query vector returned as the script field `cosine`.

    An arm that ranks by BM25 keeps its score and still gets every hit's exact cosine from k-NN's
    painless `cosineSimilarity` over the stored vector, in the same request: no second search and
    no vectors in the response.
    """
    return arm if vector is None else {**arm, "script_fields": cosine_fields(vector)}


def cosine_fields(vector: Sequence[float]) -> dict:
    return {"cosine": {"script": {"source": COSINE_SCRIPT, "params": {"query_value": list(vector)}}}}


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


def doc_count_arm(flt: dict, keyword: str | None) -> dict:
    """size-0 count of documents in scope (optionally containing `keyword`): IDF for the engram keyword component."""
    bool_q: dict = {"filter": [flt]}
    if keyword is not None:
        bool_q["must"] = [{"match": {"content": {"query": keyword}}}]
    return {"size": 0, "track_total_hits": True, "query": {"bool": bool_q}}


SORTS = {
    "time_desc": [{"updated_at": {"order": "desc", "missing": "_last"}}, {"timestamp": {"order": "desc", "missing": "_last"}}],
    "updated_desc": [{"updated_at": {"order": "desc", "missing": "_last"}}, {"timestamp": {"order": "desc", "missing": "_last"}}],
    "time_asc": [{"updated_at": {"order": "asc", "missing": "_last"}}, {"timestamp": {"order": "asc", "missing": "_last"}}],
    "updated_asc": [{"updated_at": {"order": "asc", "missing": "_last"}}, {"timestamp": {"order": "asc", "missing": "_last"}}],
    "score": IMPORTANCE_SORT,
}


def trending_arm(size: int, flt: dict, sort: str) -> dict:
    """No query (or `*`): high-importance memories, ordered per `sort` (importance first for `score`)."""
    order = SORTS.get(sort, IMPORTANCE_SORT)
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
