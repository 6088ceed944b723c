"""The embedding backends side by side: speed, agreement with sentence-transformers fp32, memory.

    python -m bench.embedder                       # all of BACKENDS on 1,000 memories + 200 queries
    python -m bench.embedder --docs 3000 --repeat 3
    python -m bench.embedder --backends onnx,onnx@export --rounds 3   # medians of 3 runs in turn

A backend is an EMBEDDING_BACKEND, optionally with the route its ONNX graph is made by: `onnx` is the
graph the service builds from the model's safetensors (no torch), `onnx@export` the same model
through torch.onnx.export (the route of models the builder does not handle; cached apart).
Each backend runs in its own process (so peak RSS is its own, and torch is only imported where it
is used) with the service's Embedder and EMBEDDING_MODEL. Measured:
- docs/s at batch 16: embed_documents() called on consecutive slices of 16 texts, for corpus
  memories (bench.corpus, 40-1,000 characters, median ~250) and for short texts (their first
  sentence, <= 120 characters); and embed_documents() on all the memories at once (what
  POST /memory/batch and the importer do: texts sorted by length, micro-batches of 16);
- query p50 / p95: embed_query() on distinct questions (bench.queries), one at a time, cache misses;
- agreement with torch fp32: cosine per text (mean, min) and top-10 overlap — for each query, the
  share of its 10 nearest memories (by cosine, within the backend) that torch also ranks top 10;
- peak RSS of the process (ru_maxrss), whether torch was imported, and the load time with the graph
  cached (the first run on a machine also builds it: run twice to compare load times).
Writes bench/out/embedder.json and embedder.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
BACKENDS = ("torch", "onnx", "onnx-int8", "onnx@export", "onnx-int8@export")
BATCH = 16


def texts(n_docs: int, n_queries: int) -> tuple[list[str], list[str], list[str]]:
    from bench.corpus import CorpusGenerator
    from bench.queries import generate

    docs = [r["content"] for r, _ in CorpusGenerator(n_docs, seed=3).records()]
    short = [d.split(". ")[0][:120] for d in docs]
    queries = [q.text for q in generate(n_queries, seed=5)][:n_queries]
    return docs, short, queries


def worker(backend: str, data: Path, out: Path, repeat: int) -> None:
    """Runs in a fresh process: load, measure, save vectors and timings."""
    payload = json.loads(data.read_text())
    t0 = time.perf_counter()
    from service.config import Settings
    from service.embedding import Embedder

    s = Settings()
    name, _, route = backend.partition("@")
    emb = Embedder(s.embedding_model, batch_size=BATCH, backend=name, onnx_route=route or "auto")
    load_s = time.perf_counter() - t0
    result: dict = {"backend": emb.backend, "requested": backend, "load_s": round(load_s, 2), "torch_imported": "torch" in sys.modules}
    emb.embed_documents(payload["short"][:32])  # warm-up
    for name in ("docs", "short"):
        items = payload[name]
        rates = []
        for _ in range(repeat):
            t = time.perf_counter()
            vecs = [v for i in range(0, len(items), BATCH) for v in emb.embed_documents(items[i : i + BATCH])]
            rates.append(len(items) / (time.perf_counter() - t))
        result[f"{name}_per_s"] = round(statistics.median(rates), 1)
        result[f"{name}_per_s_all"] = [round(r, 1) for r in rates]
        if name == "docs":
            np.save(out.with_suffix(".docs.npy"), np.asarray(vecs, dtype=np.float32))
            whole = []
            for _ in range(repeat):  # one call: what POST /memory/batch and the importer do (sorted micro-batches)
                t = time.perf_counter()
                emb.embed_documents(items)
                whole.append(len(items) / (time.perf_counter() - t))
            result["docs_one_call_per_s"] = round(statistics.median(whole), 1)
    lat = []
    qvecs = []
    for q in payload["queries"]:
        t = time.perf_counter()
        qvecs.append(emb.embed_query(q))
        lat.append((time.perf_counter() - t) * 1000)
    np.save(out.with_suffix(".queries.npy"), np.asarray(qvecs, dtype=np.float32))
    lat.sort()
    result["query_p50_ms"] = round(lat[len(lat) // 2], 2)
    result["query_p95_ms"] = round(lat[int(len(lat) * 0.95)], 2)
    result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    result.update(emb.describe())
    out.write_text(json.dumps(result))


def agreement(ref_docs: np.ndarray, ref_q: np.ndarray, docs: np.ndarray, q: np.ndarray, k: int = 10) -> dict:
    cos = np.sum(ref_docs * docs, axis=1)
    ref_top = np.argsort(-(ref_q @ ref_docs.T), axis=1)[:, :k]
    top = np.argsort(-(q @ docs.T), axis=1)[:, :k]
    overlap = [len(set(a) & set(b)) / k for a, b in zip(ref_top, top)]
    return {"cosine_mean": round(float(cos.mean()), 5), "cosine_min": round(float(cos.min()), 5), "top10_overlap": round(float(np.mean(overlap)), 3)}


def markdown(res: dict) -> str:
    lines = [
        "| backend | memories/s, calls of 16 | memories/s, one call of all | short texts/s, calls of 16 | query p50 / p95 ms | cosine to torch fp32 (mean / min) | top-10 overlap | peak RSS | torch loaded | load |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in res["backends"]:
        a = r.get("agreement") or {}
        agree = "reference" if r["requested"] == "torch" else f"{a['cosine_mean']:.4f} / {a['cosine_min']:.4f}"
        overlap = "—" if r["requested"] == "torch" else f"{a['top10_overlap']:.2f}"
        lines.append(
            f"| {r['requested']}{'' if r['backend'] == r['requested'].partition('@')[0] else ' (fell back to ' + r['backend'] + ')'} | {r['docs_per_s']:.0f} | {r['docs_one_call_per_s']:.0f} | "
            f"{r['short_per_s']:.0f} | {r['query_p50_ms']:.1f} / {r['query_p95_ms']:.1f} | {agree} | {overlap} | {r['peak_rss_mb']:.0f} MB | "
            f"{'yes' if r['torch_imported'] else 'no'} | {r['load_s']:.1f} s |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.embedder", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=1000, help="corpus memories to embed (default 1000)")
    parser.add_argument("--queries", type=int, default=200, help="distinct queries (default 200)")
    parser.add_argument("--repeat", type=int, default=2, help="passes over the documents; the median rate is reported")
    parser.add_argument("--backends", default=",".join(BACKENDS), help=f"comma-separated, from {', '.join(BACKENDS)} (default all); torch always runs, as the reference")
    parser.add_argument(
        "--rounds", type=int, default=1,
        help="run the backends (all but the torch reference) this many times in turn and report each rate's "
        "median: on a shared machine, load that comes and goes then hits every backend alike",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=OUT / "embedder.json")
    args = parser.parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.worker:
        worker(args.worker, args.data, args.result, args.repeat)
        return 0
    from tqdm import tqdm

    OUT.mkdir(parents=True, exist_ok=True)
    docs, short, queries = texts(args.docs, args.queries)
    backends = [b for b in args.backends.split(",") if b]
    if "torch" not in backends:
        backends.insert(0, "torch")  # the reference
    res: dict = {"docs": len(docs), "queries": len(queries), "batch": BATCH, "load_avg_before": list(os.getloadavg()), "backends": []}
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "texts.json"
        data.write_text(json.dumps({"docs": docs, "short": short, "queries": queries}))
        runs = [(0, b) for b in backends] + [(n, b) for n in range(1, args.rounds) for b in backends if b != "torch"]
        by_backend: dict[str, list[dict]] = {}
        for n, backend in tqdm(runs, desc="backends", file=sys.stderr):
            result_path = Path(tmp) / f"{backend}-{n}.json"
            cmd = [sys.executable, "-m", "bench.embedder", "--worker", backend, "--data", str(data), "--result", str(result_path), "--repeat", str(args.repeat)]
            subprocess.run(cmd, cwd=ROOT, check=True)
            r = json.loads(result_path.read_text())
            r["_docs"], r["_queries"] = np.load(result_path.with_suffix(".docs.npy")), np.load(result_path.with_suffix(".queries.npy"))
            by_backend.setdefault(backend, []).append(r)
        for backend in backends:
            rounds = by_backend[backend]
            r = rounds[0]
            for key in ("docs_per_s", "docs_one_call_per_s", "short_per_s", "query_p50_ms", "query_p95_ms"):
                r[key] = round(statistics.median(x[key] for x in rounds), 2)
            r["rounds"] = len(rounds)
            res["backends"].append(r)
    ref = res["backends"][0]
    for r in res["backends"]:
        if r is not ref:
            r["agreement"] = agreement(ref["_docs"], ref["_queries"], r["_docs"], r["_queries"])
    for r in res["backends"]:
        del r["_docs"], r["_queries"]
    res["load_avg_after"] = list(os.getloadavg())
    args.out.write_text(json.dumps(res, indent=2))
    table = markdown(res)
    args.out.with_suffix(".md").write_text(table + "\n")
    print(table)
    print(f"\nload average before {res['load_avg_before']}, after {res['load_avg_after']} (2 cores; other work skews the rates)")
    print(f"written: {args.out}, {args.out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
