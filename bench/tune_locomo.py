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


def gather(limit: int = 10, prefix: str = "bench-locomo", data_path: Path = DEFAULT_DATA, *, prf: tuple[int, int] | None = None,
           with_edges: bool = False, context_window: int = 1, **overrides) -> list[dict]:
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
        thread = {mid: h.source.get("thread_key") for mid, h in outcome.hits.items()}
        item = {"qa": qa, "sample": sample_id, "cands": cands, "req": outcome.scoring, "vector": outcome.vector, "prev": prev, "thread": thread}
        if prf is not None:
            item["prf"] = second_round(svc, settings, p, qa["question"], sample_id, item, now, *prf)
        out.append(item)
    if with_edges:
        add_similar_edges(out, client, settings)
    if context_window > 1:
        widen_context(out, store, settings.default_bank, context_window)
    return out


def base_ranking(cands, req, prev) -> list[ScoredCandidate]:
    """What GET /recall ranks by default: scoring/, then the thread-neighbour bonus (0.2)."""
    return neighbours.neighbour_bonus(rank(cands, req), prev, 0.2)


def second_round(svc, settings, p, question: str, sample_id: str, item: dict, now, top: int, terms: int) -> dict:
    """Pseudo-relevance feedback: the question plus the `terms` rarest words (IDF over the pool) of
    the first round's `top` results that the question lacks, retrieved and ranked again."""
    import math
    import re
    from dataclasses import replace as dc_replace

    from service.recall.pipeline import Timings

    pool = item["cands"]
    df: dict[str, int] = {}
    for c in pool:
        for w in set(re.findall(r"[a-z]+", c.content.lower())):
            df[w] = df.get(w, 0) + 1
    asked = set(re.findall(r"[a-z]+", question.lower()))
    weight: dict[str, float] = {}
    for s in base_ranking(pool, item["req"], item["prev"])[:top]:
        for w in set(re.findall(r"[a-z]+", s.candidate.content.lower())):
            if len(w) > 3 and w not in asked and df[w] < len(pool) / 4:
                weight[w] = weight.get(w, 0.0) + math.log(len(pool) / df[w])
    expanded = " ".join([question, *sorted(weight, key=lambda w: -weight[w])[:terms]])
    q = dc_replace(p, query=expanded)
    o = svc.run_query(q, expanded, q.limit, now, Timings(), None)
    return {"cands": [h.candidate("vector") for h in o.hits.values()], "req": o.scoring,
            "prev": {mid: h.source.get("thread_prev") for mid, h in o.hits.items()}}


def add_similar_edges(items: list[dict], client, settings) -> None:
    """The SIMILAR_TO edges enrichment wrote, as item["similar"][id] = {other id: strength}."""
    from opensearchpy.helpers import scan

    similar: dict[str, dict[str, float]] = {}
    for h in scan(client, index=settings.edges_alias, query={"query": {"term": {"type": "SIMILAR_TO"}}}):
        e = h["_source"]
        similar.setdefault(e["source_id"], {})[e["target_id"]] = e["strength"]
        similar.setdefault(e["target_id"], {})[e["source_id"]] = e["strength"]
    for item in items:
        item["similar"] = similar


def widen_context(items: list[dict], store, bank: str, window: int) -> None:
    """Each candidate's thread context as the text of the `window` memories before it (oldest
    first), followed along thread_prev: what a wider context would index, without re-indexing."""
    sources: dict[str, dict] = {}

    def fetch(ids):
        todo = sorted({i for i in ids if i and i not in sources})
        if todo:
            sources.update(store.get_many(bank, todo))

    for item in items:
        chain = {c.id: [item["prev"].get(c.id)] for c in item["cands"]}
        for _ in range(window - 1):
            fetch(links[-1] for links in chain.values())
            for links in chain.values():
                links.append((sources.get(links[-1]) or {}).get("thread_prev") if links[-1] else None)
        fetch(i for links in chain.values() for i in links)
        item["cands"] = [dataclasses.replace(c, thread_context=" ".join(
            (sources.get(i) or {}).get("content") or "" for i in reversed(chain[c.id]) if i).strip() or c.thread_context)
            for c in item["cands"]]


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
    """recall@5 / recall@10 overall, per category and per conversation, and all-evidence@5 (every
    evidence turn in the top 5); `overrides` replace ScoringRequest fields (profile, thread_context_weight, ...)."""
    rows: dict[str, list[tuple[float, float, float]]] = {}
    for item in items:
        req = dataclasses.replace(item["req"], **overrides)
        ranked = variant(rank(item["cands"], req), item)
        if floor:
            ranked, _ = apply_score_filter(ranked, 0.0, True)
        got = [s.candidate.metadata.get("dia_id") for s in ranked[:10]]
        wanted = evidence_ids(item["qa"])
        if not wanted:
            continue
        v = (len(wanted & set(got[:5])) / len(wanted), len(wanted & set(got[:10])) / len(wanted), float(wanted <= set(got[:5])))
        for key in ("overall", CATEGORIES[item["qa"]["category"]], item.get("sample", "?")):
            rows.setdefault(key, []).append(v)
    out = {}
    for key, vals in rows.items():
        out[f"{key}@5"], out[f"{key}@10"], out[f"{key}:all@5"] = (statistics.mean(v[i] for v in vals) for i in range(3))
    return out


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


def thread_cap(m: int, k: int = 10) -> Variant:
    """Diversity across threads: at most `m` memories of one thread in the top `k` while another is left."""

    def variant(ranked: list[ScoredCandidate], item: dict) -> list[ScoredCandidate]:
        ranked = neighbours.neighbour_bonus(ranked, item["prev"], 0.2)
        out, rest, count = [], list(ranked), {}
        while rest and len(out) < k:
            key = lambda s: item["thread"].get(s.candidate.id) or s.candidate.id  # noqa: E731
            pick = next((s for s in rest if count.get(key(s), 0) < m), rest[0])
            rest.remove(pick)
            out.append(pick)
            count[key(pick)] = count.get(key(pick), 0) + 1
        return out + rest

    return variant


def rrf(a: list[ScoredCandidate], b: list[ScoredCandidate], weight_b: float, k: int = 60) -> list[ScoredCandidate]:
    """Reciprocal rank fusion of two rankings (scores stay those of the first round where present)."""
    fused: dict[str, float] = {}
    by_id = {s.candidate.id: s for s in b} | {s.candidate.id: s for s in a}
    for w, ranking in ((1.0, a), (weight_b, b)):
        for i, s in enumerate(ranking):
            fused[s.candidate.id] = fused.get(s.candidate.id, 0.0) + w / (k + i)
    return [by_id[mid] for mid in sorted(fused, key=lambda mid: -fused[mid])]


def prf_variant(mode: str, weight_b: float = 1.0) -> Variant:
    """With --prf: the second round alone, or fused with the first (RRF)."""

    def variant(ranked: list[ScoredCandidate], item: dict) -> list[ScoredCandidate]:
        first = neighbours.neighbour_bonus(ranked, item["prev"], 0.2)
        second = base_ranking(item["prf"]["cands"], item["prf"]["req"], item["prf"]["prev"])
        return second if mode == "second" else rrf(first, second, weight_b)

    return variant


def similar_bridge(weight: float, seeds: int) -> Variant:
    """With --edges: a memory SIMILAR_TO one of the top `seeds` gains weight x that seed's score x the edge's strength."""

    def variant(ranked: list[ScoredCandidate], item: dict) -> list[ScoredCandidate]:
        ranked = neighbours.neighbour_bonus(ranked, item["prev"], 0.2)
        score = {s.candidate.id: s.final_score for s in ranked}
        top = [s.candidate.id for s in ranked[:seeds]]
        out = []
        for s in ranked:
            near = item["similar"].get(s.candidate.id, {})
            best = max((score[t] * near[t] for t in top if t in near and t != s.candidate.id), default=0.0)
            out.append(dataclasses.replace(s, final_score=s.final_score + weight * best) if best else s)
        return sort_scored(out)

    return variant


def with_neighbours(ranked, item):
    return neighbours.neighbour_bonus(ranked, item["prev"], 0.2)


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
    # Issue 26: what GET /recall does (the neighbour bonus on), diversity across threads, and the
    # levers that need more gathered: --prf (a second round), --edges (SIMILAR_TO), --context-window.
    out["recall default (neighbour bonus 0.2)"] = (with_neighbours, engram)
    for m in (2, 3, 4):
        out[f"thread cap {m} in the top 10"] = (thread_cap(m), engram)
    out["prf: second round alone"] = (prf_variant("second"), engram)
    out["prf: rrf of both rounds"] = (prf_variant("rrf"), engram)
    out["prf: rrf, second round at 0.5"] = (prf_variant("rrf", 0.5), engram)
    for w in (0.1, 0.2, 0.3):
        for k in (3, 5):
            out[f"similar_to bridge {w} from the top {k}"] = (similar_bridge(w, k), engram)
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
    parser.add_argument("--prf", metavar="TOP:TERMS", help="also retrieve a second round: the question + TERMS rare words of the first round's TOP results (the 'prf' variants)")
    parser.add_argument("--edges", action="store_true", help="read the SIMILAR_TO edges enrichment wrote (the 'similar_to' variants)")
    parser.add_argument("--context-window", type=int, default=1, metavar="N",
                        help="score every candidate with the text of the N memories before it as its thread context (default 1: as stored)")
    args = parser.parse_args(argv)
    overrides = dict(item.split("=", 1) for item in args.set)
    prf = tuple(int(x) for x in args.prf.split(":")) if args.prf else None
    items = gather(prefix=args.prefix, data_path=args.data, prf=prf, with_edges=args.edges, context_window=args.context_window, **overrides)
    if args.embed_context:
        add_context_cosines(items)
    cats = list(CATEGORIES.values())
    samples = list(dict.fromkeys(item["sample"] for item in items))
    print("| variant | recall@5 | recall@10 | all@5 | " + " | ".join(f"{c} @5 / @10" for c in cats) + " | multi-hop all@5 | "
          + " | ".join(f"{s} @5" for s in samples) + " |")
    print("|---|---|---|---|" + "---|" * (len(cats) + 1 + len(samples)))
    for name, (fn, options) in variants().items():
        if args.only and not any(text in name for text in args.only) or ("embedded with context" in name and not args.embed_context):
            continue
        if (name.startswith("prf") and not prf) or (name.startswith("similar_to") and not args.edges):
            continue
        options = dict(options)
        floor = options.pop("floor", True)
        r = evaluate(items, fn, floor, **options)
        cells = " | ".join(f"{r.get(f'{c}@5', 0):.3f} / {r.get(f'{c}@10', 0):.3f}" for c in cats)
        convs = " | ".join(f"{r[f'{s}@5']:.3f}" for s in samples)
        print(f"| {name} | {r['overall@5']:.3f} | {r['overall@10']:.3f} | {r['overall:all@5']:.3f} | {cells} | {r.get('multi-hop:all@5', 0):.3f} | {convs} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
