"""Signet's response shapes (spec 004), pure: the recall pipeline's results -> Signet rows and `meta`.

A row carries the memory's fields under Signet's names (`created_at` is the stored `timestamp`,
`tags` a comma-separated string of the caller's tags — never those enrichment derived, as in every
surface but AutoMem's (service/memory/codec.py) —, `type` lowercased as Signet's types are), the score, where the
evidence came from (`source`), the temporal facet when a window applied, and `already_recalled`.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from service.api.signet.temporal import Temporal, facet_of, js_iso
from service.clock.instants import stored_datetime
from service.memory import codec

SCORE_DIGITS = 4
# Signet documents `score` in 0..1 (spec 004's 0.92); ours passes 1 when bonuses add to the weighted
# components (1.0243 seen). Above the knee it is compressed smoothly towards 1: strictly increasing
# (the order and the distinctness of scores stay), unchanged below the knee, where clients put their
# thresholds (the SDK's minScore, OpenClaw's min_score).
SCORE_KNEE = 0.95
# Graph stages' match types (expansion), reported as Signet's `graph` source.
GRAPH_MATCHES = ("relation", "entity_expansion")
# The pipeline's stage timings (pipeline.Timings), in the order they run.
PIPELINE_STAGES = ("embed", "search", "score", "state", "rank", "expand", "hydrate")


def evidence_source(components: Mapping[str, Any], match_type: str | None) -> str:
    """hybrid when the memory has lexical and semantic evidence, vector or keyword when only one,
    graph for memories the graph stages added (Signet's source values)."""
    if match_type in GRAPH_MATCHES:
        return "graph"
    vector = float(components.get("vector") or 0.0) > 0
    lexical = float(components.get("keyword") or 0.0) > 0 or float(components.get("exact") or 0.0) > 0
    if vector and lexical:
        return "hybrid"
    if vector:
        return "vector"
    return "keyword"


def signet_score(raw: Any) -> float:
    """A ranking score in Signet's 0..1, order kept (see SCORE_KNEE), rounded to SCORE_DIGITS."""
    s = max(0.0, float(raw or 0.0))
    if s > SCORE_KNEE:  # continuous with slope 1 at the knee; < 1 everywhere (until the rounding)
        s = 1.0 - (1.0 - SCORE_KNEE) * math.exp(-(s - SCORE_KNEE) / (1.0 - SCORE_KNEE))
    return round(s, SCORE_DIGITS)


def created_at(memory: Mapping[str, Any]) -> str | None:
    at = stored_datetime(memory.get("timestamp"))
    return js_iso(at) if at else None


def signet_type(value: Any) -> str | None:
    return value.lower() if isinstance(value, str) else None


def tag_string(tags: Any) -> str:
    return ",".join(str(t) for t in tags or ())


def row(result: Mapping[str, Any], *, temporal: Temporal | None = None, repeated: bool = False) -> dict[str, Any]:
    """One POST /api/memory/recall result from one pipeline result."""
    m = result.get("memory") or {}
    out: dict[str, Any] = {
        "id": result["id"],
        "content": m.get("content", ""),
        "content_length": len(m.get("content") or ""),
        "truncated": False,
        "score": signet_score(result.get("final_score")),
        "source": evidence_source(result.get("score_components") or {}, result.get("match_type")),
        "type": signet_type(m.get("type")),
        "tags": tag_string(codec.caller_tags(m)),
        "pinned": bool(m.get("pinned")),
        "importance": m.get("importance"),
        "who": m.get("who"),
        "project": m.get("project"),
        "created_at": created_at(m),
        "subject_type": "memory",
        "subject_id": result["id"],
        "supplementary": False,
        "already_recalled": repeated,
    }
    if temporal is not None:
        facet = facet_of(m, temporal)
        if facet is not None:
            out["temporal_facet"], out["temporal_start_at"], out["temporal_end_at"] = facet
    return out


def stage_timings(pipeline: Mapping[str, float], extra: Mapping[str, float]) -> list[dict[str, Any]]:
    """[{name, durationMs}]: the pipeline's stages in order, then this surface's own (ledger reads and writes)."""
    stages = [(name, pipeline[name]) for name in PIPELINE_STAGES if name in pipeline]
    stages += [(name, ms) for name, ms in pipeline.items() if name not in PIPELINE_STAGES]
    stages += list(extra.items())
    return [{"name": name, "durationMs": round(float(ms), 3)} for name, ms in stages]


def dedupe_meta(epoch: int | None, suppressed: int = 0, repeated: int = 0) -> dict[str, Any]:
    """meta.dedupe: disabled without a sessionKey (spec 004: "Sessionless recall is unchanged")."""
    if epoch is None:
        return {"enabled": False, "suppressed": 0, "repeatedReturned": 0}
    return {"enabled": True, "contextEpoch": epoch, "suppressed": suppressed, "repeatedReturned": repeated}


def meta(rows: Sequence[Mapping[str, Any]], *, total_ms: float, stages: list[dict[str, Any]], dedupe: dict[str, Any],
         temporal: Temporal | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "totalReturned": len(rows),
        "hasSupplementary": any(r.get("supplementary") for r in rows),
        "noHits": not rows,
        "timings": {"totalMs": round(total_ms, 3), "stages": stages},
        "dedupe": dedupe,
    }
    if temporal is not None:
        out["temporal"] = temporal.to_meta()
    return out


# Aggregate recall needs a language model to plan follow-up queries and to synthesise the answer;
# Engram runs offline, so it answers as spec 004 says for an unavailable planner.
ROUTER_UNAVAILABLE = "aggregate recall needs an inference router (a language model); none is available, so the evidence rows are returned unsynthesised"


def aggregate(query: str, budget: str | None, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "savedMemoryId": None, "saved": False, "deduped": False, "budget": budget or "small",
        "queries": [query], "sourceMemoryIds": [r["id"] for r in rows],
    }
    if not rows:
        return {**out, "stoppedReason": "no_evidence"}
    return {**out, "stoppedReason": "router_unavailable", "partial": True, "message": ROUTER_UNAVAILABLE}


def legacy_row(memory_id: str, source: Mapping[str, Any], score: float | None) -> dict[str, Any]:
    """GET /memory/search: id, content, created_at, who, importance, tags, type, pinned and the score."""
    out = {
        "id": memory_id, "content": source.get("content", ""), "created_at": created_at(source), "who": source.get("who"),
        "importance": source.get("importance"), "tags": tag_string(codec.caller_tags(source)), "type": signet_type(source.get("type")),
        "pinned": bool(source.get("pinned")),
    }
    if score is not None:
        out["score"] = round(float(score), SCORE_DIGITS)
    return out


def similar_row(memory_id: str, source: Mapping[str, Any], cosine: float) -> dict[str, Any]:
    """GET /memory/similar: id, content, type, tags (a list here, as spec 004 shows), score, confidence, created_at."""
    return {
        "id": memory_id, "content": source.get("content", ""), "type": signet_type(source.get("type")),
        "tags": codec.caller_tags(source), "score": round(cosine, SCORE_DIGITS), "confidence": source.get("confidence"),
        "created_at": created_at(source),
    }


def mark_repeated(rows: list[dict[str, Any]], ids: Collection[str]) -> int:
    """Set already_recalled on the rows in `ids`; how many there were."""
    n = 0
    for r in rows:
        if r["id"] in ids:
            r["already_recalled"] = True
            n += 1
    return n
