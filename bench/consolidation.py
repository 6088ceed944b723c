"""Consolidation over a synthetic corpus: how long each step takes, what it finds, engine requests.

    python -m bench.consolidation --size 10000 --url http://127.0.0.1:9250
    python -m bench.consolidation --size 2000 --archive-threshold 0.3   # forget enabled

Loads a `bench.corpus` corpus (synthetic clustered vectors) under its own INDEX_PREFIX, runs dry
`full`, `creative` and `cluster` passes, then each mode for real (decay, creative, cluster, forget,
then decay again: the steady state, where only moved scores are rewritten), prints one line per
step and deletes the indices it made (unless --keep).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from bench.corpus import bench_settings, load, node_url
from service.storage.bootstrap import drop_prefix


def counting(client):
    """Record the engine requests made until `restore()`."""
    calls: list[str] = []
    original = client.transport.perform_request

    def wrapped(method, url, *args, **kwargs):
        calls.append(f"{method} {url.split('?')[0]}")
        return original(method, url, *args, **kwargs)

    def restore() -> None:
        client.transport.perform_request = original

    client.transport.perform_request = wrapped
    return calls, restore


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.consolidation", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10_000, help="memories in the corpus (default 10,000)")
    parser.add_argument("--url", help="OpenSearch URL (default: the local `bench` node)")
    parser.add_argument("--archive-threshold", type=float, default=0.3, help="CONSOLIDATION_ARCHIVE_THRESHOLD for the run (default 0.3)")
    parser.add_argument("--keep", action="store_true", help="keep the corpus indices afterwards")
    args = parser.parse_args(argv)

    from service.config import Settings
    from service.consolidation.scheduler import build_consolidation
    from service.embedding import Embedder
    from service.storage.client import make_client
    from service.storage.edges import EdgeStore
    from service.storage.memories import MemoryStore
    from service.writes.writer import MemoryWriter

    url = node_url(args.url)
    prefix = f"bench-consolidation-{args.size}"
    cfg = Settings()
    embedder = Embedder(cfg.embedding_model, backend=cfg.embedding_backend)
    info = load(args.size, prefix=prefix, url=url, vectors="synthetic", embedder=embedder)
    print(f"loaded {info['size']:,} memories in {info['seconds']} s", file=sys.stderr)
    settings = bench_settings(prefix, url, consolidation_archive_threshold=args.archive_threshold, write_refresh="false")
    client = make_client(url, settings)
    from service.storage.bootstrap import ensure_indices

    ensure_indices(client, settings, embedder.dimension)
    memories = MemoryStore(client, settings.memories_alias, refresh="false")
    edges = EdgeStore(client, settings.edges_alias, refresh="false")
    service = build_consolidation(settings, client, memories, edges, MemoryWriter(settings, memories, edges, embedder))
    try:
        plan = (("full", True), ("creative", True), ("cluster", True),
                ("decay", False), ("creative", False), ("cluster", False), ("forget", False), ("decay", False))
        for mode, dry in plan:
            calls, restore = counting(client)
            started = time.perf_counter()
            try:
                result = service.run(settings.default_bank, mode, dry)
            finally:
                restore()
            seconds = time.perf_counter() - started
            print(f"{mode:8s} dry_run={dry!s:5s} {seconds:7.1f} s  {len(calls):5d} engine requests  changes={json.dumps(result['changes'])}")
            for step, stats in result["steps"].items():
                brief = {k: stats[k] for k in stats if k not in ("sample_associations", "sample_clusters", "archived", "deleted", "protected", "distribution")}
                print(f"    {step:9s} {json.dumps(brief)}")
    finally:
        if not args.keep:
            drop_prefix(client, prefix)
    return 0


if __name__ == "__main__":
    sys.exit(main())
