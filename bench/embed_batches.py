"""Many texts through one ONNX backend in process (what POST /memory/batch, the importer and a
re-embed do), variants interleaved in rounds: how a batch is split into model calls, and on how many
intra-op threads and callers they run. Texts: the LoCoMo dev slice's turns as bench.locomo stores them
("Speaker: text", median ~100 characters) and corpus memories (bench.corpus, 40-1,000 characters).

    python -m bench.embed_batches [--rounds 5] [--texts 300] [--backend onnx-int8]

Variants, named TEXTS/TOKENS/THREADS/CALLERS: at most TEXTS texts and TOKENS padded tokens a model
call (texts sorted by length), THREADS intra-op threads, CALLERS threads calling the session at once.
Default: 1/256/1/2 (one text a call: int8 before per-row quantisation), 16/256/1/1, 16/256/1/2 (the
int8 default now), 16/256/2/1 (fp32's way).
Prints, per variant and text set, texts/s (wall) and process CPU ms per text (all threads: /proc),
medians over the rounds with every round's figure, the load average, and how far each variant's
vectors are from the first variant's (max abs difference, min cosine): batch invariance.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

from bench.cpu import cpu_seconds
from bench.locomo import DEFAULT_DATA, memories_for

VARIANTS = ("1/256/1/2", "16/256/1/1", "16/256/1/2", "16/256/2/1")


def text_sets(n: int) -> dict[str, list[str]]:
    from bench.corpus import CorpusGenerator

    turns = [m["content"] for sample in json.loads(DEFAULT_DATA.read_text()) for m in memories_for(sample)]
    return {"locomo turns": turns[:n], "corpus": [r["content"] for r, _ in CorpusGenerator(n, seed=3).records()]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.embed_batches", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--texts", type=int, default=300)
    parser.add_argument("--backend", default="onnx-int8", choices=["onnx", "onnx-int8"])
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated TEXTS/TOKENS/THREADS/CALLERS")
    args = parser.parse_args(argv)
    from service.config import Settings
    from service.embedding.embedder import Embedder
    from service.embedding.onnx_runtime import OnnxBackend

    folder = Embedder(Settings().embedding_model, backend=args.backend)._impl.folder
    backends = {}
    for name in args.variants.split(","):
        micro_batch, budget, threads, callers = (int(x) for x in name.split("/"))
        b = OnnxBackend(folder, quantized=args.backend == "onnx-int8", threads=threads, micro_batch=micro_batch, token_budget=budget)
        b.callers = callers
        backends[name] = b
    sets = text_sets(args.texts)
    for b in backends.values():
        b.encode(sets["locomo turns"][:64])  # warm-up
    rows: dict[tuple[str, str], list[tuple[float, float]]] = {}
    vectors: dict[tuple[str, str], np.ndarray] = {}
    pid = os.getpid()
    for r in range(args.rounds):
        order = list(backends.items())
        for name, b in order if r % 2 == 0 else order[::-1]:
            for set_name, texts in sets.items():
                cpu0, t0 = cpu_seconds(pid), time.perf_counter()
                vectors[(name, set_name)] = b.encode(texts)
                wall, cpu = time.perf_counter() - t0, cpu_seconds(pid) - cpu0
                rows.setdefault((name, set_name), []).append((len(texts) / wall, cpu / len(texts) * 1000))
        print(f"round {r + 1}/{args.rounds} done, load {os.getloadavg()[0]:.2f}", file=sys.stderr)
    print(f"{args.backend}, {args.texts} texts per set, {args.rounds} rounds interleaved; load average now {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    first = next(iter(backends))
    for set_name in sets:
        for name in backends:
            v = rows[(name, set_name)]
            ref, got = vectors[(first, set_name)], vectors[(name, set_name)]
            print(f"{set_name:12s} {name:12s} texts/s {statistics.median(x[0] for x in v):6.1f} ({', '.join(f'{x[0]:.0f}' for x in v)})"
                  f"  CPU ms/text {statistics.median(x[1] for x in v):5.2f} ({', '.join(f'{x[1]:.1f}' for x in v)})"
                  f"  vs {first}: max |diff| {np.abs(got - ref).max():.1e}, min cosine {np.sum(got * ref, axis=1).min():.7f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
