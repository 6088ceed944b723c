"""CPU per query embedding in process: the service's ONNX backend as configured (EMBEDDING_BACKEND,
EMBEDDING_THREADS; by default int8 on one intra-op thread) against the other thread count (1 or 2), interleaved in rounds, over the LoCoMo dev slice's questions (each text
embedded once per round; the Embedder's query cache is bypassed: the backend is called directly).

    python -m bench.embed_query_cpu [--rounds 3]

Prints, per variant and round, process CPU (all threads, /proc) and wall time per query.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

from bench.cpu import cpu_seconds
from bench.latency_defaults import questions
from bench.locomo import DEFAULT_DATA


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.embed_query_cpu", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    from service.config import Settings
    from service.embedding.embedder import Embedder
    from service.embedding.onnx_runtime import OnnxBackend

    texts = [q for _, q, _ in questions(json.loads(DEFAULT_DATA.read_text()))]
    shipped = Embedder.from_settings(Settings())._impl  # EMBEDDING_BACKEND as configured (default onnx-int8)
    other = 2 if shipped.threads == 1 else 1
    variants = {f"{shipped.threads} thread(s) (shipped)": shipped,
                f"{other} thread(s)": OnnxBackend(shipped.folder, quantized=shipped.name == "onnx-int8", threads=other)}
    for backend in variants.values():
        backend.encode(texts[:20])  # warm-up
    rows: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
    for r in range(args.rounds):
        for name, backend in variants.items():
            cpu0, t0 = cpu_seconds(os.getpid()), time.perf_counter()
            for text in texts:
                backend.encode([text])
            wall, cpu = time.perf_counter() - t0, cpu_seconds(os.getpid()) - cpu0
            rows[name].append((cpu / len(texts) * 1000, wall / len(texts) * 1000))
            print(f"round {r + 1} {name:20s} CPU {rows[name][-1][0]:.2f} ms/query, wall {rows[name][-1][1]:.2f} ms/query, load {os.getloadavg()[0]:.2f}", file=sys.stderr)
    for name, values in rows.items():
        print(f"{name}: CPU ms/query median {statistics.median(v[0] for v in values):.2f}, wall median {statistics.median(v[1] for v in values):.2f} ({len(texts)} questions x {args.rounds})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
