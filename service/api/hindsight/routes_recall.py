"""POST /v1/default/banks/{bank_id}/memories/recall (spec 002): Hindsight's request becomes the one
RecallRequest, RecallService.recall runs AutoMem's pipeline, and the answer is reshaped."""

from __future__ import annotations

import time

from fastapi import APIRouter, Response

from service.api.hindsight import response as H
from service.api.deps import RecallDep, SettingsDep, StoreDep
from service.api.hindsight.deps import ReadBank, RegistryDep, TokensDep
from service.api.hindsight.errors import HINDSIGHT_ERRORS, HindsightRoute
from service.api.hindsight.models import HindsightRecallBody, HindsightRecallResponse
from service.api.hindsight.request import to_request
from service.api.responses import dumps
from service.errors import BadRequest
from service.stream.emit import EmitDep
from service.clock.instants import utcnow

router = APIRouter(route_class=HindsightRoute, tags=["hindsight: recall"], responses=HINDSIGHT_ERRORS)


@router.post(
    "/v1/default/banks/{bank_id}/memories/recall", response_model=HindsightRecallResponse, summary="Recall memory", operation_id="recall_memories",
)
def recall(body: HindsightRecallBody, scope: ReadBank, service: RecallDep, store: StoreDep, settings: SettingsDep, registry: RegistryDep,
           tokens: TokensDep, emit: EmitDep) -> Response:
    """Hybrid recall (vector, BM25, metadata and temporal arms in one engine round trip, AutoMem's
    ranking, graph expansion by budget), cut to `max_tokens` of result text."""
    started = time.perf_counter()
    limit = settings.hindsight_max_query_tokens
    used = tokens.count(body.query)
    if used > limit:
        raise BadRequest(f"Query too long: {used} tokens exceeds maximum of {limit}. Please shorten your query.")
    now = utcnow()
    req = to_request(body, settings, bank=registry.profile(scope.bank), bank_id=scope.bank, now=now)
    out = service.recall(req, now)
    results, spent, candidates = H.shaped_results(out, tokens, body.max_tokens)
    answer: dict = {"results": H.public(results)}
    include = body.include
    if include.entities is not None:
        answer["entities"] = H.entities_block(results, tokens, include.entities.max_tokens)
    if include.chunks is not None:
        indices = {r["id"]: r["memory"].get("chunk_index") for r in out["results"]}
        answer["chunks"] = H.chunks_block(results, tokens, include.chunks.max_tokens, indices.get)
    if include.source_facts is not None:
        wanted = [fid for r in results for fid in r.get("source_fact_ids") or ()]
        facts = store.get_many(scope.bank, list(dict.fromkeys(wanted))) if wanted else {}
        answer["source_facts"], answer["source_facts_truncated"] = H.source_facts_block(
            results, facts, tokens, include.source_facts.max_tokens, include.source_facts.max_tokens_per_observation,
        )
    if body.trace:
        answer["trace"] = H.trace_block(out, body, req, returned=len(results), candidates=candidates, tokens=spent,
                                        seconds=time.perf_counter() - started)
    warnings = H.warnings_of(body)
    if warnings:
        answer["warnings"] = warnings
    emit.recalled(req, {**out, "count": len(results)})
    return Response(dumps(answer), media_type="application/json")
