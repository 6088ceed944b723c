"""Offline re-scoring on the LoCoMo dev slice: retrieve once, then try scoring variants in Python.

Retrieval (the same arms and filters as GET /recall, real engine, real embeddings) runs once per
question; each variant then re-ranks the same candidates with scoring/ and reports recall@5/10.
Run `python -m bench.locomo` once first: it stores the memories under INDEX_PREFIX=bench-locomo.

    python -m bench.tune_locomo
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from tqdm import tqdm

from bench.locomo import CATEGORIES, DEFAULT_DATA, evidence_ids
from scoring import neighbours
from scoring.floors import apply_score_filter
from scoring.rerank import ScoredCandidate, rank, sort_scored

Variant = Callable[[list[ScoredCandidate], dict], list[ScoredCandidate]]


def gather(limit: int = 10, prefix: str = "bench-locomo", data_path: Path = DEFAULT_DATA, **overrides) -> list[dict]:
    from service.config import Settings
    from service.embedding import Embedder
    from service.engine.local_node import LocalNode
    from service.recall.request import RecallRequest
    from service.recall.pipeline import RecallService, Timings
    from service.storage.client import make_client
    from service.storage.edges import EdgeStore
    from service.storage.memories import MemoryStore

    settings = Settings(index_prefix=prefix, **overrides)
    client = make_client(settings.opensearch_url or LocalNode(settings.local_node_name).start(), settings)
    store = MemoryStore(client, settings.memories_alias)
    embedder = Embedder(settings.embedding_model)
    try:
        svc = RecallService(settings, store, embedder, EdgeStore(client, settings.edges_alias))
    except TypeError:
        svc = RecallService(settings, store, embedder)
    data = json.loads(data_path.read_text())
    now = datetime.now(timezone.utc)
    out = []
    questions = [(s["sample_id"], qa) for s in data for qa in s["qa"] if qa.get("category") in CATEGORIES]
    for sample_id, qa in tqdm(questions, desc="retrieve", file=sys.stderr):
        p = RecallRequest.from_settings(settings, bank=settings.default_bank, query=qa["question"], tags=[f"locomo:{sample_id}"], limit=limit)
        outcome = svc.run_query(p, p.query, limit, now, Timings(), None)
        cands = [h.candidate("vector") for h in outcome.hits.values()]
        prev = {mid: h.source.get("thread_prev") for mid, h in outcome.hits.items()}
        out.append({"qa": qa, "cands": cands, "req": outcome.scoring, "vector": outcome.vector, "prev": prev})
    return out


def add_context_cosines(items: list[dict], model: str | None = None) -> None:
    """Each candidate's cosine to the query had its vector been embedded from its thread context and
    content together ("<context>\n<content>"), in item["context_cosine"]: what embedding the context
    would give, without re-indexing (the candidate pool stays that of the content vectors)."""
    import numpy as np

    from service.config import Settings
    from service.embedding import Embedder

    embedder = Embedder(model or Settings().embedding_model)
    texts = {c.id: f"{c.thread_context}\n{c.content}" for item in items for c in item["cands"] if c.thread_context}
    ids = sorted(texts)
    vectors = dict(zip(ids, np.asarray(embedder.embed_documents([texts[i] for i in ids]), dtype=float)))
    for item in items:
        q = np.asarray(item["vector"], dtype=float)
        q = q / (np.linalg.norm(q) or 1.0)
        item["context_cosine"] = {mid: float(v @ q / (np.linalg.norm(v) or 1.0)) for mid, v in vectors.items() if any(c.id == mid for c in item["cands"])}


def vec_with_context(mix: float):
    """vector = mix x cosine of the context+content vector + (1 - mix) x the content vector's."""
    def fn(s, item):
        ctx = item.get("context_cosine", {}).get(s.candidate.id)
        old = float(s.components["vector"])
        return {"vector": old if ctx is None else mix * max(0.0, ctx) + (1 - mix) * old}

    return fn


def evaluate(items: list[dict], variant: Variant, floor: bool = True, **overrides) -> dict:
    """recall@5 / recall@10 overall and per category; `overrides` replace ScoringRequest fields
    (profile, thread_context_weight, ...)."""
    per_cat: dict[int, list[tuple[float, float]]] = {}
    for item in items:
        req = dataclasses.replace(item["req"], **overrides)
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
        row[f"{name}@10"] = statistics.mean(v[1] for v in per_cat.get(cat, [(0, 0)]))
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


def neighbour_bonus(weight: float, which: str) -> Variant:
    """scoring.neighbours with the memory before it (`prev`), those after it (`next`), or `both`."""

    def variant(ranked: list[ScoredCandidate], item: dict) -> list[ScoredCandidate]:
        return neighbours.neighbour_bonus(ranked, item["prev"], weight, before=which != "next", after=which != "prev")

    return variant


def variants() -> dict[str, tuple[Variant, dict]]:
    """name -> (re-ranking function, ScoringRequest overrides)."""
    engram = {"profile": "engram"}
    out: dict[str, tuple[Variant, dict]] = {
        "automem profile": (identity, {"profile": "automem"}),
        "engram idf (default)": (identity, engram),
        "engram idf, no floor": (identity, {**engram, "floor": False}),
        "engram bm25/max": (reweight(bm25_norm), engram),
        "engram 0.5 idf + 0.5 bm25/max": (reweight(blend(0.5)), engram),
        "engram idf + vector min-max": (reweight(vec_minmax), engram),
        "engram bm25/max + vector min-max": (reweight(both(bm25_norm, vec_minmax)), engram),
        "engram blend + vector min-max": (reweight(both(blend(0.5), vec_minmax)), engram),
        "engram idf + vector x1.5": (reweight(vec_scale(1.5)), engram),
        "engram idf + vector x0.75": (reweight(vec_scale(0.75)), engram),
        "engram idf + vector x0.5": (reweight(vec_scale(0.5)), engram),
        "engram blend + vector x0.75": (reweight(both(blend(0.5), vec_scale(0.75))), engram),
        "engram bm25/max + vector x0.75": (reweight(both(bm25_norm, vec_scale(0.75))), engram),
    }
    # Thread context (SEARCH_THREAD_CONTEXT_WEIGHT): what a keyword found only in the memory before
    # it in its thread counts; 0 scores as before (the candidates still come from the BM25 arm that
    # reads the context unless gathered with --set search_thread_context_weight=0).
    for w in (0.0, 0.25, 0.5, 0.75, 1.0):
        out[f"thread context weight {w}"] = (identity, {**engram, "thread_context_weight": w})
    # Dates (SEARCH_WEIGHT_DATE): the query's dates met by the memory's date terms.
    for w in (0.0, 0.05, 0.1, 0.2, 0.3):
        out[f"date weight {w}"] = (identity, {**engram, "date_weight": w})
    out["no thread context, no dates"] = (identity, {**engram, "thread_context_weight": 0.0, "date_weight": 0.0})
    # A bonus from the best-scored thread neighbour in the pool (the opposite of thread diversity).
    for which in ("prev", "next", "both"):
        for w in (0.05, 0.1, 0.2, 0.3):
            out[f"neighbour bonus {which} {w}"] = (neighbour_bonus(w, which), engram)
    # With --embed-context: the context embedded with the content (instead of, or beside, the content alone).
    for mix in (1.0, 0.5):
        out[f"embedded with context (mix {mix})"] = (reweight(vec_with_context(mix)), engram)
        out[f"embedded with context (mix {mix}), no context keywords"] = (reweight(vec_with_context(mix)), {**engram, "thread_context_weight": 0.0})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tune_locomo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help=f"LoCoMo JSON (default {DEFAULT_DATA})")
    parser.add_argument("--prefix", default="bench-locomo", help="INDEX_PREFIX the memories were stored under by bench.locomo")
    parser.add_argument("--set", action="append", default=[], metavar="SETTING=VALUE",
                        help="a service setting for the retrieval (e.g. search_thread_context_weight=0), repeatable")
    parser.add_argument("--only", action="append", default=[], metavar="TEXT", help="run only variants whose name contains TEXT, repeatable")
    parser.add_argument("--embed-context", action="store_true", help="also embed each candidate with its thread context (the 'embedded with context' variants)")
    args = parser.parse_args(argv)
    overrides = dict(item.split("=", 1) for item in args.set)
    items = gather(prefix=args.prefix, data_path=args.data, **overrides)
    if args.embed_context:
        add_context_cosines(items)
    cats = list(CATEGORIES.values())
    print("| variant | recall@5 | recall@10 | " + " | ".join(f"{c} @5 / @10" for c in cats) + " |")
    print("|---|---|---|" + "---|" * len(cats))
    for name, (fn, options) in variants().items():
        if args.only and not any(text in name for text in args.only) or ("embedded with context" in name and not args.embed_context):
            continue
        options = dict(options)
        floor = options.pop("floor", True)
        r = evaluate(items, fn, floor, **options)
        cells = " | ".join(f"{r[f'{c}@5']:.3f} / {r[f'{c}@10']:.3f}" for c in cats)
        print(f"| {name} | {r['overall@5']:.3f} | {r['overall@10']:.3f} | {cells} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
