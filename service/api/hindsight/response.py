"""The pipeline's answer (RecallRequest.detail: each result carries its stored memory and what its
arms saw) -> Hindsight's HindsightRecallResponse: scores, the max_tokens cut, the include blocks, the trace.
Pure functions; the source facts of observations are read by the route and passed in."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from service.api.hindsight import views
from service.api.hindsight.models import HindsightRecallBody
from service.api.hindsight.tokens import TokenCounter


def scores_of(result: Mapping[str, Any]) -> dict[str, Any]:
    seen = result.get("retrieval") or {}
    return {"final": result["final_score"], "reranker": None, "semantic": seen.get("semantic"), "keyword": seen.get("keyword")}


def fit_tokens(counts: Sequence[int], max_tokens: int) -> int:
    """How many results, in rank order, fit `max_tokens` (Hindsight counts each fact's text and stops
    at the first that no longer fits)."""
    used = 0
    for n, count in enumerate(counts):
        if used + count > max_tokens:
            return n
        used += count
    return len(counts)


def shaped_results(body: Mapping[str, Any], counter: TokenCounter, max_tokens: int) -> tuple[list[dict], int, int]:
    """(Hindsight results that fit, tokens they use, candidates before the cut). Each result's token
    count is kept under the private key `_tokens` (the include blocks reuse it; `public` drops it)."""
    raw = list(body.get("results", []))
    counts = counter.count_many([r["memory"].get("content") or "" for r in raw])
    keep = fit_tokens(counts, max_tokens)
    results = [{**views.recall_result(r["id"], r["memory"], scores_of(r)), "_tokens": n} for r, n in zip(raw[:keep], counts)]
    return results, sum(counts[:keep]), len(raw)


def public(results: Sequence[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "_tokens"} for r in results]


def entities_block(results: Sequence[dict], counter: TokenCounter, max_tokens: int) -> dict[str, Any]:
    """Each entity the results name, with the results that mention it as its observations, until
    `max_tokens` (of observation text) is spent."""
    out: dict[str, Any] = {}
    used = 0
    for r in results:
        for name in r.get("entities") or ():
            count = r["_tokens"] if "_tokens" in r else counter.count(r["text"])
            if used + count > max_tokens:
                return out
            used += count
            entry = out.setdefault(name, {"entity_id": f"entity:{name.lower()}", "canonical_name": name, "observations": []})
            entry["observations"].append({"text": r["text"], "mentioned_at": r.get("mentioned_at")})
    return out


def chunks_block(results: Sequence[dict], counter: TokenCounter, max_tokens: int, chunk_index: Callable[[str], int | None]) -> dict[str, Any]:
    """The stored chunks the results are (a retained item is stored as its chunks), keyed by
    chunk_id, truncated once `max_tokens` is spent."""
    out: dict[str, Any] = {}
    left = max_tokens
    for r in results:
        cid = r.get("chunk_id")
        if not cid or cid in out:
            continue
        text, cut = counter.truncate(r["text"], left)
        out[cid] = {"id": cid, "text": text, "chunk_index": chunk_index(r["id"]) or 0, "truncated": cut}
        left -= counter.count(text)
        if left <= 0:
            break
    return out


def source_facts_block(
    results: Sequence[dict], facts: Mapping[str, Mapping[str, Any]], counter: TokenCounter, max_tokens: int, per_observation: int,
) -> tuple[dict[str, Any], bool]:
    """Source memories of the observation results (`facts`: id -> stored source), within the total
    and per-observation token caps (-1: unlimited). Returns (facts by id, truncated)."""
    out: dict[str, Any] = {}
    used, truncated = 0, False
    for r in results:
        spent = 0
        for fid in r.get("source_fact_ids") or ():
            source = facts.get(fid)
            if source is None or fid in out:
                continue
            count = counter.count(source.get("content") or "")
            if (max_tokens >= 0 and used + count > max_tokens) or (per_observation >= 0 and spent + count > per_observation):
                truncated = True
                continue
            out[fid] = views.recall_result(fid, source)
            used += count
            spent += count
    return out, truncated


def trace_block(body: Mapping[str, Any], req: HindsightRecallBody, recall_request: Any, *, returned: int, candidates: int, tokens: int, seconds: float) -> dict[str, Any]:
    """What the recall did: the translated request, the arms of each result, the stage timings."""
    arms: dict[str, int] = {}
    for r in body.get("results", [])[:returned]:
        for arm in (r.get("retrieval") or {}).get("arms", []):
            arms[arm] = arms.get(arm, 0) + 1
    window = recall_request.temporal_window
    return {
        "query": req.query,
        "num_results": returned,
        "time_seconds": round(seconds, 4),
        "budget": {"level": req.budget, "limit": recall_request.limit, "expand_relations": recall_request.expand_relations,
                   "expand_entities": recall_request.expand_entities},
        "max_tokens": req.max_tokens, "tokens_used": tokens, "candidates_before_token_cut": candidates,
        "fact_types": list(recall_request.fact_types),
        "temporal_window": window.to_response() if window is not None else None,
        "query_timestamp": recall_request.query_time.isoformat() if recall_request.query_time else None,
        "min_scores": {"semantic": recall_request.semantic_floor, "keyword": recall_request.keyword_floor, "final": recall_request.final_floor},
        "results_by_arm": arms,
        "keywords": body.get("keywords"),
        "vector_search": body.get("vector_search"),
        "score_filter": body.get("score_filter"),
        "reranker": {"used": False, "reason": "no reranker or decision model is configured; results are ordered by the final score"},
        "timings_ms": body.get("timings"),
        "query_time_ms": body.get("query_time_ms"),
    }


def warnings_of(req: HindsightRecallBody) -> list[str]:
    out = []
    if req.rerank is not None and (req.rerank.prune is not None or req.rerank.dedup is not None):
        out.append("rerank options have no effect: no decision model is configured for recall")
    return out
