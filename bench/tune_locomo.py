"""Offline re-scoring on the LoCoMo dev slice: retrieve once, then try scoring variants in Python.

Retrieval (the same arms and filters as GET /recall, real engine, real embeddings) runs once per
question; each variant then re-ranks the same candidates with scoring/ and reports recall@5/10.
Run `python -m bench.locomo` once first: it stores the memories under INDEX_PREFIX=bench-locomo.

    python -m bench.tune_locomo
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import sys
from collections.abc import Callable
from datetime import datetime, timezone

from tqdm import tqdm

from bench.locomo import CATEGORIES, DEFAULT_DATA, evidence_ids
from scoring.floors import apply_score_filter
from scoring.keywords import stemmed_words
from scoring.rerank import ScoredCandidate, rank, sort_scored

Variant = Callable[[list[ScoredCandidate], dict], list[ScoredCandidate]]


def gather(limit: int = 10) -> list[dict]:
    from service.config import Settings
    from service.embedding import Embedder
    from service.localnode import LocalNode
    from service.recall.request import RecallRequest
    from service.recall.pipeline import RecallService, Timings
    from service.storage.client import make_client
    from service.storage.edges import EdgeStore
    from service.storage.memories import MemoryStore

    settings = Settings(index_prefix="bench-locomo")
    client = make_client(settings.opensearch_url or LocalNode(settings.local_node_name).start(), settings)
    store = MemoryStore(client, settings.memories_alias)
    embedder = Embedder(settings.embedding_model)
    try:
        svc = RecallService(settings, store, embedder, EdgeStore(client, settings.edges_alias))
    except TypeError:
        svc = RecallService(settings, store, embedder)
    data = json.loads(DEFAULT_DATA.read_text())
    now = datetime.now(timezone.utc)
    out = []
    questions = [(s["sample_id"], qa) for s in data for qa in s["qa"] if qa.get("category") in CATEGORIES]
    for sample_id, qa in tqdm(questions, desc="retrieve", file=sys.stderr):
        p = RecallRequest.from_settings(settings, query=qa["question"], tags=[f"locomo:{sample_id}"], limit=limit)
        outcome = svc.run_query(p, p.query, limit, now, Timings(), None)
        cands = [h.candidate("vector") for h in outcome.hits.values()]
        out.append({"qa": qa, "cands": cands, "req": outcome.scoring})
    return out


def evaluate(items: list[dict], variant: Variant, profile: str = "engram", floor: bool = True) -> dict:
    per_cat: dict[int, list[tuple[float, float]]] = {}
    for item in items:
        req = dataclasses.replace(item["req"], profile=profile)
        ranked = variant(rank(item["cands"], req), item)
        if floor:
            ranked, _ = apply_score_filter(ranked, 0.0, True)
        got = [s.candidate.metadata.get("dia_id") for s in ranked[:10]]
        wanted = evidence_ids(item["qa"])
        if not wanted:
            continue
        per_cat.setdefault(item["qa"]["category"], []).append(
            (len(wanted & set(got[:5])) / len(wanted), len(wanted & set(got[:10])) / len(wanted))
        )
    flat = [v for vals in per_cat.values() for v in vals]
    row = {"overall@5": statistics.mean(v[0] for v in flat), "overall@10": statistics.mean(v[1] for v in flat)}
    for cat, name in CATEGORIES.items():
        row[f"{name}@5"] = statistics.mean(v[0] for v in per_cat.get(cat, [(0, 0)]))
    return row


def reweight(fn: Callable[[ScoredCandidate, dict], dict[str, float]]) -> Variant:
    """Replace some components, recompute final = old + Σ w·(new − old)."""

    def variant(ranked: list[ScoredCandidate], item: dict) -> list[ScoredCandidate]:
        w = item["req"].weights
        out = []
        for s in ranked:
            new = fn(s, item)
            delta = sum(getattr(w, k) * (v - float(s.components[k])) for k, v in new.items())
            out.append(dataclasses.replace(s, final_score=s.final_score + delta, components={**s.components, **new}))
        return sort_scored(out)

    return variant


def identity(ranked, item):
    return ranked


def bm25_norm(s, item):
    best = max((c.bm25 or 0.0) for c in item["cands"]) or 1.0
    return {"keyword": (s.candidate.bm25 or 0.0) / best}


def blend(a: float):
    def fn(s, item):
        best = max((c.bm25 or 0.0) for c in item["cands"]) or 1.0
        return {"keyword": a * float(s.components["keyword"]) + (1 - a) * (s.candidate.bm25 or 0.0) / best}

    return fn


def vec_minmax(s, item):
    cos = [c.vector_cosine for c in item["cands"] if c.vector_cosine is not None]
    lo, hi = min(cos), max(cos)
    v = s.candidate.vector_cosine
    return {"vector": 0.0 if v is None or hi <= lo else (v - lo) / (hi - lo)}


def both(*fns):
    def fn(s, item):
        out = {}
        for f in fns:
            out.update(f(s, item))
        return out

    return fn


def vec_scale(k: float):
    def fn(s, item):
        return {"vector": min(1.0, float(s.components["vector"]) * k)}

    return fn


def main() -> int:
    items = gather()
    variants: dict[str, tuple[Variant, str, bool]] = {
        "automem profile": (identity, "automem", True),
        "engram idf (default)": (identity, "engram", True),
        "engram idf, no floor": (identity, "engram", False),
        "engram bm25/max": (reweight(bm25_norm), "engram", True),
        "engram 0.5 idf + 0.5 bm25/max": (reweight(blend(0.5)), "engram", True),
        "engram idf + vector min-max": (reweight(vec_minmax), "engram", True),
        "engram bm25/max + vector min-max": (reweight(both(bm25_norm, vec_minmax)), "engram", True),
        "engram blend + vector min-max": (reweight(both(blend(0.5), vec_minmax)), "engram", True),
        "engram idf + vector x1.5": (reweight(vec_scale(1.5)), "engram", True),
        "engram idf + vector x0.75": (reweight(vec_scale(0.75)), "engram", True),
        "engram idf + vector x0.5": (reweight(vec_scale(0.5)), "engram", True),
        "engram blend + vector x0.75": (reweight(both(blend(0.5), vec_scale(0.75))), "engram", True),
        "engram bm25/max + vector x0.75": (reweight(both(bm25_norm, vec_scale(0.75))), "engram", True),
    }
    print("| variant | recall@5 | recall@10 | multi-hop@5 | temporal@5 | open@5 | single@5 |")
    print("|---|---|---|---|---|---|---|")
    for name, (fn, profile, floor) in variants.items():
        r = evaluate(items, fn, profile, floor)
        print(
            f"| {name} | {r['overall@5']:.3f} | {r['overall@10']:.3f} | {r['multi-hop@5']:.3f} | "
            f"{r['temporal@5']:.3f} | {r['open-domain@5']:.3f} | {r['single-hop@5']:.3f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
