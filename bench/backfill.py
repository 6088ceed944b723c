"""How fast the start-up backfill (service/writes/backfill.py) gives an upgraded store recall's
doc-value fields: N corpus memories (bench.corpus) written as an earlier version stored them (no
stems, no plain metadata terms; random unit vectors, as the backfill only carries them), then one
backfill run, timed.

    python -m bench.backfill [--memories 20000] [--url http://127.0.0.1:9250] [--pause 0.05]

Prints memories/s (wall) and this process's CPU ms per memory (the service's share; the engine's
is not counted), the load average, and checks that no memory is left without the fields. The store
lives under its own INDEX_PREFIX and is dropped afterwards.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid

import numpy as np

from bench.cpu import cpu_seconds


def legacy_docs(n: int, bank: str, dimension: int):
    from bench.corpus import CorpusGenerator

    rng = np.random.default_rng(7)
    for record, _ in CorpusGenerator(n, seed=11).records():
        vector = rng.standard_normal(dimension).astype(np.float32)
        vector /= np.linalg.norm(vector)
        doc = {k: record[k] for k in ("id", "content", "tags", "type", "importance", "timestamp", "metadata")}
        yield {**doc, "bank": bank, "embedding": vector.tolist()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.backfill", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=20_000)
    parser.add_argument("--url", default=os.environ.get("OPENSEARCH_URL", "http://127.0.0.1:9250"))
    parser.add_argument("--pause", type=float, default=None, help="seconds between pages (default: the service's)")
    args = parser.parse_args(argv)
    from opensearchpy import helpers

    from service.config import Settings
    from service.storage.bootstrap import drop_prefix, ensure_indices
    from service.storage.client import make_client
    from service.storage.memories import MemoryStore
    from service.writes import backfill as B

    settings = Settings(opensearch_url=args.url, index_prefix=f"bbf{uuid.uuid4().hex[:8]}")
    client = make_client(args.url, settings)
    dimension = 384
    ensure_indices(client, settings, dimension)
    try:
        store = MemoryStore(client, settings.memories_alias)
        actions = ({"_index": store.alias, "_id": d["id"], "_source": d} for d in legacy_docs(args.memories, settings.default_bank, dimension))
        for ok, item in helpers.streaming_bulk(client, actions, chunk_size=500, raise_on_error=False):
            if not ok:
                print("write failed:", item, file=sys.stderr)
                return 1
        store.refresh_now()
        print(f"{args.memories:,} legacy memories written; missing the fields: {B.missing(store):,}", flush=True)
        pause = B.PAUSE_S if args.pause is None else args.pause
        cpu0, t0 = cpu_seconds(os.getpid()), time.perf_counter()
        result = B.backfill(store, pause_s=pause)
        wall, cpu = time.perf_counter() - t0, cpu_seconds(os.getpid()) - cpu0
        store.refresh_now()
        left = B.missing(store)
        print(f"backfill: {result.written:,} written, {result.skipped} skipped, {result.failed} failed in {wall:.1f} s "
              f"({result.written / wall:,.0f} memories/s, pause {pause} s between pages of {B.PAGE}); "
              f"this process {cpu / max(result.written, 1) * 1e3:.2f} ms CPU per memory; load {os.getloadavg()[0]:.2f}; left {left}")
        return 0 if left == 0 and result.failed == 0 else 1
    finally:
        drop_prefix(client, settings.index_prefix)
        client.close()


if __name__ == "__main__":
    sys.exit(main())
