"""What a recall's return costs: CPU (time.thread_time) of RecallService.recall as a whole, and from
its last step (shaping.response_body, called just before it returns) to its return, which is mostly
Python freeing what the recall built (the `_msearch` response's objects, hits, candidates).

    python -m bench.recall_teardown [--url http://127.0.0.1:9250] [--prefix bench-latdef]

In process, no HTTP: the service's own RecallService over the corpus `bench.latency --defaults`
stores (run that first), the real embedder, the LoCoMo dev questions twice; the second pass (query
cache warm: no embedding) is reported. Access tracking is off (nothing is deferred).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from datetime import UTC, datetime

from bench.latency_defaults import PREFIX, questions
from bench.locomo import DEFAULT_DATA


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.recall_teardown", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="http://127.0.0.1:9250")
    parser.add_argument("--prefix", default=PREFIX)
    args = parser.parse_args(argv)
    from service.api.automem.recall_models import RecallQuery
    from service.config import Settings
    from service.embedding.embedder import Embedder
    from service.recall import pipeline, shaping
    from service.storage.client import make_client
    from service.storage.edges import EdgeStore
    from service.storage.memories import MemoryStore

    settings = Settings(opensearch_url=args.url, index_prefix=args.prefix)
    client = make_client(args.url, settings)
    embedder = Embedder(settings.embedding_model)
    memories = MemoryStore(client, settings.memories_alias, refresh=settings.write_refresh, access_resolution_s=settings.recall_access_resolution_seconds)
    service = pipeline.RecallService(settings, memories, embedder, EdgeStore(client, settings.edges_alias, refresh=settings.write_refresh))
    last_step: list[float] = [0.0]
    response_body = shaping.response_body

    def marked(*a, **k):
        out = response_body(*a, **k)
        last_step[0] = time.thread_time()
        return out

    pipeline.shaping.response_body = marked  # the module attribute the pipeline calls
    qs = questions(json.loads(DEFAULT_DATA.read_text()))
    whole, tail = [], []
    for sample_id, question, _ in qs * 2:
        now = datetime.now(UTC)
        req = RecallQuery.model_validate({"query": question, "tags": f"locomo:{sample_id}", "limit": "10"}).to_request(
            settings, dimension=embedder.dimension, now=now, bank=settings.default_bank)
        started = time.thread_time()
        service.recall(req, now, defer=lambda *a: None)
        ended = time.thread_time()
        whole.append((ended - started) * 1000)
        tail.append((ended - last_step[0]) * 1000)
    n = len(qs)
    print(f"{n} recalls, query cache warm: RecallService.recall CPU p50 {statistics.median(whole[n:]):.2f} ms; "
          f"from its last step to its return p50 {statistics.median(tail[n:]):.3f} ms, mean {statistics.fmean(tail[n:]):.3f} ms")
    client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
