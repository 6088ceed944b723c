"""CPU of one recall by stage, in process: RecallService.recall over the corpus `bench.latency
--defaults` stores (run that first), the real embedder, the LoCoMo dev questions twice; the second
pass (query cache warm: no embedding) is reported. No HTTP, no profiler: each stage is the thread
CPU (time.thread_time) of the function the pipeline calls for it, wrapped for the run.

    python -m bench.recall_stages [--url http://127.0.0.1:9250] [--prefix bench-latdef] [--passes 2]

Stages: the `_msearch` round trip (of it, the JSON decode of the response), reading the stored
memories of lean hits (the page's, `hydrate`: a second round trip), the arms' hits merged
(`parse_responses`), hits made `Candidate`s, scoring (`rank`), the thread-neighbour bonus,
placement, current state, shaping, and the teardown: from the pipeline's last step
(`shaping.response_body`) to its return, mostly Python freeing what the recall built. The rest of
`RecallService.recall` is "other". Access tracking is off; with `--access` it
runs inline (the service writes it on a thread of its own: service/storage/access_writer.py), as its own stage, and every pass's clock is set two resolutions
(RECALL_ACCESS_RESOLUTION_SECONDS) further on, so that each page is due to be rewritten once, as on
a store nobody has recalled from (a held-out run's questions mostly are). With `--embed` every recall
embeds its question (the query cache is bypassed: `Embedder.embed_documents`, the work of a cache
miss), as in a held-out run, whose questions are all new: stage `embed`. Run alone, a tight loop of
the same embeddings costs less than inside recalls (docs/perf, "thirteenth session").

With `--kinds unscoped,tag,window,expand,embed` the questions are bench.latency's query set instead
(bench/queries.py, its cached embeddings sent as the `embedding` parameter but for `embed`), over
its corpus: `--prefix bench-lat-100000` for the 100k one. Each kind is reported apart, graph
expansion (`expand`) and the relations of the page (`relations`) as stages of their own.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta

from bench.latency_defaults import PREFIX, questions
from bench.locomo import DEFAULT_DATA


class StageClock:
    """Thread CPU per stage for the current recall: `wrap(owner, attr, stage)` patches a callable."""

    def __init__(self) -> None:
        self.current: dict[str, float] = defaultdict(float)
        self.runs: list[dict[str, float]] = []
        self.depth = 0

    def wrap(self, owner, attr: str, stage: str, *, inner_stage: bool = False) -> None:
        """A stage is the outermost timed call (the `_msearch` graph expansion sends is `expand`'s);
        an `inner_stage` (decode) is counted wherever it runs, as a part of its caller's."""
        inner = getattr(owner, attr)

        def timed(*args, **kwargs):
            if self.depth and not inner_stage:
                return inner(*args, **kwargs)
            self.depth += not inner_stage
            started = time.thread_time()
            try:
                return inner(*args, **kwargs)
            finally:
                self.current[stage] += (time.thread_time() - started) * 1000
                self.depth -= not inner_stage

        setattr(owner, attr, timed)

    def close(self, total_ms: float, teardown_ms: float, group: str) -> None:
        row: dict = dict(self.current)
        row["teardown"] = teardown_ms
        row["other"] = total_ms - sum(v for k, v in row.items() if k != "decode")  # decode is inside msearch
        row["total"] = total_ms
        row["group"] = group
        self.runs.append(row)
        self.current = defaultdict(float)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.recall_stages", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="http://127.0.0.1:9250")
    parser.add_argument("--prefix", default=PREFIX)
    parser.add_argument("--passes", type=int, default=2, help="passes over the questions; the first warms the query cache and is not reported")
    parser.add_argument("--access", action="store_true", help="record accesses inline (stage `access`), every page due (see above)")
    parser.add_argument("--embed", action="store_true", help="embed every question, the query cache bypassed (stage `embed`; see above)")
    parser.add_argument("--kinds", help="bench.latency's query kinds instead of the LoCoMo questions, comma-separated (see above)")
    args = parser.parse_args(argv)
    from service.__main__ import settle_gc
    from service.api.automem.recall_models import RecallQuery
    from service.config import Settings
    from service.embedding.embedder import Embedder
    from service.recall import pipeline, retrieval
    from service.storage.client import make_client
    from service.storage.edges import EdgeStore
    from service.storage.memories import MemoryStore

    settings = Settings(opensearch_url=args.url, index_prefix=args.prefix)
    client = make_client(args.url, settings)
    embedder = Embedder.from_settings(settings)
    memories = MemoryStore(client, settings.memories_alias, refresh=settings.write_refresh, access_resolution_s=settings.recall_access_resolution_seconds)
    service = pipeline.RecallService(settings, memories, embedder, EdgeStore(client, settings.edges_alias, refresh=settings.write_refresh))
    clock = StageClock()
    clock.wrap(memories, "msearch", "msearch")
    clock.wrap(service, "hydrate", "hydrate")
    clock.wrap(memories, "touch", "access")
    service.record_access = memories.touch if args.access else lambda *a: None  # inline, timed; or none
    if args.embed:
        embedder.embed_query = lambda text: embedder.embed_documents([text])[0]  # a cache miss every time
        clock.wrap(embedder, "embed_query", "embed")
    clock.wrap(client.transport.serializer, "loads", "decode", inner_stage=True)
    clock.wrap(pipeline.retrieval, "parse_responses", "parse_responses")
    clock.wrap(retrieval.Hit, "candidate", "candidates")
    clock.wrap(pipeline, "rank", "rank")
    clock.wrap(pipeline, "neighbour_bonus", "neighbour_bonus")
    clock.wrap(pipeline.placement, "place", "placement")
    clock.wrap(pipeline.state, "apply_current_state", "current_state")
    clock.wrap(pipeline.shaping, "shape_result", "shaping")
    last_step: list[float] = [0.0]
    response_body = pipeline.shaping.response_body

    def marked(*a, **k):
        out = response_body(*a, **k)
        last_step[0] = time.thread_time()
        return out

    pipeline.shaping.response_body = marked  # the module attribute the pipeline calls
    clock.wrap(service, "expand", "expand")
    clock.wrap(service, "relations", "relations")
    if args.kinds:
        from bench.queries import build

        kinds = args.kinds.split(",")
        qs = [(q.kind, q.recall_params(with_embedding=q.kind != "embed"), None) for q in build(215, embedder) if q.kind in kinds]
    else:
        qs = [(f"locomo:{sample_id}", {"query": question, "tags": f"locomo:{sample_id}", "limit": "10"}, None)
              for sample_id, question, _ in questions(json.loads(DEFAULT_DATA.read_text()))]
    settle_gc()  # as the service runs (service/__main__.py): a recall's objects die before a collection
    # Past every access stored before: each run starts two resolutions after the latest of them.
    stored = memories.search({"size": 0, "aggs": {"last": {"max": {"field": "last_accessed"}}}})["aggregations"]["last"]["value"]
    due = timedelta(seconds=2 * settings.recall_access_resolution_seconds)
    start = max(datetime.now(UTC), datetime.fromtimestamp((stored or 0) / 1000, UTC)) if args.access else None
    for n in range(args.passes):
        for group, params, _ in qs:
            now = datetime.now(UTC) if start is None else start + due * (n + 1)
            req = RecallQuery.model_validate(params).to_request(settings, dimension=embedder.dimension, now=now, bank=settings.default_bank)
            started = time.thread_time()
            service.recall(req, now)
            ended = time.thread_time()
            clock.close((ended - started) * 1000, (ended - last_step[0]) * 1000, group)
    runs = clock.runs[len(qs):] if args.passes > 1 else clock.runs
    stages = [*(["embed"] if args.embed else []), "msearch", "decode", "hydrate", *(["access"] if args.access else []), "parse_responses", "candidates", "rank", "neighbour_bonus", "expand", "relations", "placement", "current_state", "shaping", "teardown", "other", "total"]
    groups = args.kinds.split(",") if args.kinds else [None]
    print(f"{len(runs)} recalls ({'every question embedded' if args.embed else 'query cache warm'}), thread CPU ms per recall, p50 / mean:")
    print("| stage | " + " | ".join(g or "all" for g in groups) + " |\n|---|" + "---|" * len(groups))
    for stage in stages:
        cells = []
        for g in groups:
            values = [r.get(stage, 0.0) for r in runs if g is None or r["group"] == g] or [0.0]
            cells.append(f"{statistics.median(values):.3f} / {statistics.fmean(values):.3f}")
        note = " (inside the others)" if stage == "decode" else ""
        print(f"| {stage}{note} | " + " | ".join(cells) + " |")
    if args.embed:  # the same texts embedded one after the other, nothing in between
        started = time.thread_time()
        for _, params, _ in qs:
            embedder.embed_documents([params["query"]])
        print(f"the same {len(qs)} questions embedded in a tight loop: {(time.thread_time() - started) * 1000 / len(qs):.3f} ms each")
    client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
