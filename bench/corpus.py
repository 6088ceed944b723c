"""Synthetic memory corpora for the latency and ingest benchmarks, written through the bulk import path.

    python -m bench.corpus --size 10000                       # into the `bench` node, INDEX_PREFIX bench-corpus-10000
    python -m bench.corpus --size 100000 --vectors synthetic  # clustered unit vectors (fast), not the model
    python -m bench.corpus --size 5000 --jsonl /tmp/c.jsonl   # write JSONL for `python -m service.cli.importer`

What a corpus looks like (deterministic for a --seed):
- content: 40-1,000 characters (log-normal lengths, median ~220) of decisions, incidents, meeting
  notes, preferences and habits about ~30 projects x their areas, people, tools and channels;
- tags: `project:<p>:<area>` always, `slack:channel:<c>` (half), `entity:people:<name>` (60%),
  plain topic tags; a type (Decision, Insight, Context, ...), importance ~ Beta(2, 3);
- timestamps uniform over the two years before now; 3% archived, 3% expired (t_invalid in the
  past), 1% not valid yet (t_valid in the future);
- edges: 0-3 per memory (mean ~1.3) to earlier memories, mostly in the same project area
  (RELATES_TO, LEADS_TO, PART_OF, ...), ~1% EVOLVED_INTO / INVALIDATED_BY supersessions;
- vectors: `model` = embedded by the service's embedder (slow: ~100-200 memories/s on 2 cores),
  `synthetic` = unit vectors around the model's embedding of each project area's description,
  with Gaussian noise (cosine to the centre ~0.55-0.8, like real memories of one topic), so that
  model-embedded queries land near the right clusters. `auto` = model up to 10,000, else synthetic.

Loading goes through `service.cli.importer.Importer` (validation, document building, bulk requests,
edges through the association service) with the indices' refresh_interval set to -1 during the
load and restored afterwards.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from service.storage.bootstrap import drop_prefix  # noqa: F401 - the benchmarks' C.drop_prefix

ROOT = Path(__file__).resolve().parent.parent
NODE_NAME = "bench"
NODE_HEAP = "2g"
MODEL_VECTORS_MAX = 10_000  # --vectors auto: the model embeds corpora up to this size

PROJECTS = [
    "atlas", "borealis", "cobalt", "dynamo", "ember", "falcon", "granite", "harbor", "ion", "juniper",
    "kestrel", "lumen", "meridian", "nimbus", "onyx", "polaris", "quartz", "raven", "sierra", "tundra",
    "umbra", "vector", "willow", "xenon", "yarrow", "zephyr", "aurora", "basalt", "cirrus", "delta",
]
AREAS = ["api", "db", "frontend", "infra", "billing", "auth", "search", "mobile", "data", "ci", "docs", "ml"]
AREA_WORDS = {
    "api": "REST endpoints, request validation, rate limits and API versioning",
    "db": "the PostgreSQL schema, migrations, indexes and query performance",
    "frontend": "the React web app, components, accessibility and page load time",
    "infra": "Kubernetes clusters, Terraform, networking and capacity",
    "billing": "invoices, subscriptions, Stripe webhooks and pricing plans",
    "auth": "login, OAuth, session tokens, SSO and permissions",
    "search": "OpenSearch indexing, ranking, relevance and query latency",
    "mobile": "the iOS and Android apps, push notifications and offline sync",
    "data": "the data pipeline, Kafka topics, dbt models and the warehouse",
    "ci": "the CI pipeline, flaky tests, build caches and release automation",
    "docs": "developer documentation, runbooks, onboarding guides and ADRs",
    "ml": "model training, feature stores, evaluation and inference serving",
}
CHANNELS = ["ops", "eng", "incidents", "design", "product", "support", "standup", "releases", "security", "data-team", "random", "sales"]
FIRST = [
    "dana", "li", "omar", "priya", "jonas", "mei", "carlos", "fatima", "noah", "aiko", "lena", "ravi", "sofia", "tariq", "yuki",
    "emma", "kofi", "ines", "mateo", "hana", "arjun", "chloe", "diego", "elif", "felix", "grace", "hugo", "isla", "jin", "kara",
]
LAST = ["smith", "chen", "garcia", "okafor", "novak", "tanaka", "silva", "khan", "muller", "rossi", "kim", "haddad", "berg", "ito", "moreau"]
TECH = [
    "PostgreSQL", "MongoDB", "Redis", "Kafka", "Kubernetes", "Terraform", "React", "FastAPI", "OpenSearch", "gRPC", "GraphQL",
    "S3", "Snowflake", "dbt", "Airflow", "Sentry", "Grafana", "Prometheus", "Vault", "Envoy", "Celery", "SQLite", "Rust", "Go",
]
REASONS = [
    "the p95 latency doubled under load", "it halves the hosting bill", "the team already knows it well",
    "the vendor contract ends in March", "it removes a single point of failure", "the old library is unmaintained",
    "customers kept hitting the timeout", "it makes local development much simpler", "security review flagged the old setup",
    "the migration can be done without downtime", "it keeps the on-call load manageable", "the benchmark showed a 3x speed-up",
]
TEMPLATES = {
    "Decision": [
        "Decided to move {project} {area} to {tech} because {reason}.",
        "We chose {tech} over {tech2} for {project}'s {area} work; {reason}.",
        "Agreed with {person} that {project} {area} ships behind a feature flag first.",
        "Decision: freeze changes to {project} {area} until the {tech} upgrade lands.",
    ],
    "Pattern": [
        "Every time {project} {area} deploys on a Friday, {tech} alerts fire over the weekend.",
        "Incidents in {project} {area} usually start with {tech} connection pool exhaustion.",
        "When {person} reviews {area} changes, the discussion converges faster with a written proposal.",
    ],
    "Preference": [
        "{person} prefers small pull requests with one reviewer for {project} {area}.",
        "The team prefers {tech} for new {area} services; {tech2} only for legacy code.",
        "{person} likes release notes that link every {area} change to its ticket.",
    ],
    "Style": [
        "Code style for {project} {area}: type hints everywhere, no wildcard imports, tests next to the code.",
        "Write {area} runbooks as numbered steps with the exact commands and expected output.",
    ],
    "Habit": [
        "{person} checks the {tech} dashboards for {project} every morning before standup.",
        "On Mondays the {area} team triages new {project} bugs for thirty minutes.",
    ],
    "Insight": [
        "Most {project} {area} latency comes from {tech}, not from our own code.",
        "Caching {area} lookups in {tech} removed 40% of the load on {project}.",
        "The {project} {area} error budget is spent mostly by retries from the mobile clients.",
    ],
    "Context": [
        "Meeting notes ({project} {area}): {person} walked through the {tech} rollout plan and open risks.",
        "Incident {ticket}: {project} {area} was degraded for {minutes} minutes after a {tech} failover.",
        "Customer asked whether {project} supports {area} exports in bulk; {person} will follow up.",
        "{person} is on call for {project} {area} this week; escalation goes to {person2}.",
        "Sprint retro for {project}: the {area} migration slipped because {reason}.",
        "Code review on {project} {area}: {person} asked for a {tech} load test before merging.",
        "Standup: {person} finished the {area} spike on {tech}; next is the {project} integration.",
    ],
}
FILLER = [
    "Follow-up owner is {person}.", "Ticket {ticket} tracks the remaining work.", "See the {area} runbook for details.",
    "{person2} disagreed and wants numbers first.", "Revisit after the next {tech} release.",
    "The change touches {tech} configuration only.", "Nobody objected in the {channel} channel.",
    "Rollout: 5% of traffic first, then 50%, then everyone.", "Dashboards are linked from the {project} wiki page.",
    "It affects roughly {minutes} customers.", "Budget impact is small.", "This supersedes the note from last quarter.",
]
TYPE_WEIGHTS = {"Decision": 15, "Pattern": 10, "Preference": 10, "Style": 5, "Habit": 5, "Insight": 15, "Context": 40}
TOPIC_TAGS = ["decision", "incident", "bug", "meeting", "customer", "release", "security", "performance", "cost", "onboarding"]
EDGE_TYPES = {"RELATES_TO": 50, "LEADS_TO": 15, "PART_OF": 10, "DERIVED_FROM": 10, "OCCURRED_BEFORE": 10, "EXEMPLIFIES": 3, "REINFORCES": 2}
SUPERSEDE_RATE = 0.01
DAYS = 730


@dataclass(frozen=True)
class Cluster:
    project: str
    area: str

    @property
    def description(self) -> str:
        return f"{self.project} {self.area}: {AREA_WORDS[self.area]}"


def clusters() -> list[Cluster]:
    """Each project works on 6 of the areas (fixed by the project's position): 180 topic clusters."""
    return [Cluster(p, AREAS[(i + k * 2) % len(AREAS)]) for i, p in enumerate(PROJECTS) for k in range(6)]


def people(rng: random.Random, n: int = 200) -> list[str]:
    names = sorted({f"{f}-{l}" for f in FIRST for l in LAST})
    rng.shuffle(names)
    return names[:n]


class CorpusGenerator:
    def __init__(self, size: int, *, seed: int = 7, now: datetime | None = None):
        self.size = size
        self.seed = seed
        self.rng = random.Random(seed)
        self.np_rng = np.random.default_rng(seed)
        self.now = (now or datetime.now(timezone.utc)).replace(microsecond=0)
        self.clusters = clusters()
        self.people = people(random.Random(seed))
        # Topic popularity is skewed (a few busy project areas, a long tail), as in real teams.
        weights = np.array([1.0 / (i + 1) ** 0.6 for i in range(len(self.clusters))])
        self.cluster_weights = (weights / weights.sum()).tolist()
        self.recent: dict[int, deque[str]] = {i: deque(maxlen=50) for i in range(len(self.clusters))}
        self.all_ids: list[str] = []

    def _slots(self, cluster: Cluster) -> dict[str, str]:
        r = self.rng
        person, person2 = r.sample(self.people, 2)
        tech, tech2 = r.sample(TECH, 2)
        return {
            "project": cluster.project, "area": cluster.area, "tech": tech, "tech2": tech2, "reason": r.choice(REASONS),
            "person": person.split("-")[0].title(), "person2": person2.split("-")[0].title(), "channel": r.choice(CHANNELS),
            "ticket": f"{cluster.project[:3].upper()}-{r.randint(100, 9999)}", "minutes": str(r.randint(3, 240)),
        }

    def content(self, mem_type: str, cluster: Cluster) -> tuple[str, dict[str, str]]:
        r = self.rng
        slots = self._slots(cluster)
        target = int(min(1000, max(40, math.exp(r.gauss(math.log(220), 0.75)))))
        text = r.choice(TEMPLATES[mem_type]).format(**slots)
        while len(text) < target:
            pool = TEMPLATES[r.choice(list(TEMPLATES))] if r.random() < 0.4 else FILLER
            text += " " + r.choice(pool).format(**self._slots(cluster) if r.random() < 0.3 else slots)
        if len(text) > 1000:
            text = text[:1000].rsplit(" ", 1)[0]
        return text, slots

    def records(self) -> Iterator[tuple[dict, int]]:
        """(record without embedding, cluster index) for each memory, in order."""
        r = self.rng
        types, type_w = list(TYPE_WEIGHTS), list(TYPE_WEIGHTS.values())
        edge_types, edge_w = list(EDGE_TYPES), list(EDGE_TYPES.values())
        for n in range(self.size):
            ci = r.choices(range(len(self.clusters)), weights=self.cluster_weights)[0]
            cluster = self.clusters[ci]
            mem_type = r.choices(types, weights=type_w)[0]
            text, slots = self.content(mem_type, cluster)
            mid = f"bench-{self.seed}-{n:07d}"
            when = self.now - timedelta(seconds=r.uniform(0, DAYS * 86400))
            tags = [f"project:{cluster.project}:{cluster.area}"]
            if r.random() < 0.5:
                tags.append(f"slack:channel:{slots['channel']}")
            if r.random() < 0.6:
                tags += [f"entity:people:{p}" for p in r.sample(self.people, r.choice((1, 1, 2)))]
            if r.random() < 0.5:
                tags.append(r.choice(TOPIC_TAGS))
            record: dict = {
                "id": mid, "content": text, "tags": tags, "type": mem_type,
                "importance": round(r.betavariate(2, 3), 2), "timestamp": when.isoformat(),
                "metadata": {"source": r.choice(["slack", "github", "meeting", "agent", "email"]), "project": cluster.project,
                             "author": slots["person"].lower()},
            }
            roll = r.random()
            if roll < 0.03:
                record["archived"] = True
            elif roll < 0.06:  # expired: invalid from some moment between its creation and yesterday
                end = self.now - timedelta(days=1)
                record["t_invalid"] = (when + (end - when) * r.random() if when < end else end).isoformat()
            elif roll < 0.07:
                record["t_valid"] = (self.now + timedelta(days=r.uniform(1, 60))).isoformat()
            edges = []
            if self.all_ids:
                for _ in range(r.choices((0, 1, 2, 3), weights=(30, 30, 25, 15))[0]):
                    same = self.recent[ci]
                    target = r.choice(same) if same and r.random() < 0.7 else r.choice(self.all_ids)
                    if target != mid and all(e.get("memory2_id") != target for e in edges):
                        edges.append({"memory2_id": target, "type": r.choices(edge_types, weights=edge_w)[0], "strength": round(r.uniform(0.3, 1.0), 2)})
                if self.recent[ci] and r.random() < SUPERSEDE_RATE:
                    old = r.choice(self.recent[ci])
                    edges.append({"memory1_id": old, "type": r.choice(["EVOLVED_INTO", "INVALIDATED_BY"]), "strength": 0.9})
            if edges:
                record["associations"] = edges
            self.recent[ci].append(mid)
            self.all_ids.append(mid)
            yield record, ci


def cluster_centres(embedder, cs: list[Cluster]) -> np.ndarray:
    return np.asarray(embedder.encode([c.description for c in cs]), dtype=np.float32)


def synthetic_vectors(rng: np.random.Generator, centres: np.ndarray, cluster_ids: list[int]) -> np.ndarray:
    """Unit vectors around each memory's topic centre: centre + a little of another topic + noise.

    Noise per component ~ N(0, s^2), s in [0.035, 0.065]: with 384 dimensions the noise norm is
    ~0.7-1.3, so the cosine to the centre is ~0.55-0.8, as between real memories of one topic.
    """
    dim = centres.shape[1]
    n = len(cluster_ids)
    base = centres[np.asarray(cluster_ids)]
    other = centres[rng.integers(0, len(centres), n)] * rng.uniform(0.0, 0.35, (n, 1)).astype(np.float32)
    noise = rng.standard_normal((n, dim), dtype=np.float32) * rng.uniform(0.035, 0.065, (n, 1)).astype(np.float32)
    v = base + other + noise
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def with_vectors(gen: CorpusGenerator, mode: str, embedder, chunk: int = 500) -> Iterator[dict]:
    """Records with `embedding` (synthetic) or without (model: the importer embeds them)."""
    if mode == "model":
        for record, _ in gen.records():
            yield record
        return
    centres = cluster_centres(embedder, gen.clusters)
    batch: list[tuple[dict, int]] = []

    def flush():
        vectors = np.round(synthetic_vectors(gen.np_rng, centres, [ci for _, ci in batch]), 5)
        for (record, _), v in zip(batch, vectors.tolist()):
            record["embedding"] = v
            yield record

    for item in gen.records():
        batch.append(item)
        if len(batch) >= chunk:
            yield from flush()
            batch = []
    if batch:
        yield from flush()


def vector_mode(mode: str, size: int) -> str:
    return ("model" if size <= MODEL_VECTORS_MAX else "synthetic") if mode == "auto" else mode


def bench_settings(prefix: str, url: str, **overrides):
    from service.config import Settings

    return Settings(opensearch_url=url, index_prefix=prefix, **overrides)


def node_url(url: str | None = None) -> str:
    if url:
        return url
    from service.engine.local_node import LocalNode

    return LocalNode(NODE_NAME, heap=NODE_HEAP).start()


def load(size: int, *, prefix: str, url: str, vectors: str = "auto", seed: int = 7, embedder=None, progress: bool = True,
         workers: int = 3, fresh: bool = True) -> dict:
    """Generate and bulk-load a corpus; returns what was loaded and how long it took."""
    from tqdm import tqdm

    from service.cli.importer import Importer, relaxed_refresh
    from service.embedding import Embedder
    from service.storage.bootstrap import ensure_indices
    from service.storage.client import make_client

    settings = bench_settings(prefix, url)
    client = make_client(url, settings)
    embedder = embedder or Embedder(settings.embedding_model, backend=settings.embedding_backend)
    if fresh:
        drop_prefix(client, prefix)
    ensure_indices(client, settings, embedder.dimension)
    mode = vector_mode(vectors, size)
    gen = CorpusGenerator(size, seed=seed)
    failures: list = []
    bar = tqdm(total=size, unit="mem", desc=f"load {size:,} ({mode} vectors)", disable=not progress, file=sys.stderr, smoothing=0.05)
    importer = Importer(settings, client, embedder, workers=workers, on_failure=failures.append, on_progress=bar.update)
    started = time.perf_counter()
    with relaxed_refresh(client, [settings.memories_alias, settings.edges_alias]):
        report = importer.run(enumerate(with_vectors(gen, mode, embedder), start=1))
    bar.close()
    seconds = time.perf_counter() - started
    if failures:
        print(f"warning: {len(failures)} items failed to load; first: {failures[0]}", file=sys.stderr)
    return {
        "size": size, "prefix": prefix, "vectors": mode, "seed": seed, "generated_at": gen.now.isoformat(),
        "seconds": round(seconds, 1), "memories_per_s": round(report.stored / seconds, 1) if seconds else None,
        "report": report.as_dict(),
    }


def write_jsonl(size: int, path: Path, *, vectors: str, seed: int = 7, embedder=None) -> dict:
    from tqdm import tqdm

    from service.embedding import Embedder

    mode = "none" if vectors == "none" else vector_mode(vectors, size)
    if mode == "model":
        raise SystemExit("--jsonl with --vectors model: leave the vectors out (--vectors none) and let the importer embed")
    gen = CorpusGenerator(size, seed=seed)
    if mode != "none":
        from service.config import Settings

        s = Settings()
        embedder = embedder or Embedder(s.embedding_model, backend=s.embedding_backend)
    import orjson

    with open(path, "wb") as fh:
        records = with_vectors(gen, "model" if mode == "none" else mode, embedder)
        for record in tqdm(records, total=size, unit="mem", desc=f"write {path.name}", file=sys.stderr):
            fh.write(orjson.dumps(record) + b"\n")
    return {"size": size, "path": str(path), "vectors": mode, "seed": seed}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.corpus", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, required=True, help="number of memories")
    parser.add_argument("--vectors", choices=["auto", "model", "synthetic", "none"], default="auto",
                        help=f"how vectors are made (auto: model up to {MODEL_VECTORS_MAX:,}, else synthetic; none: only with --jsonl)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--prefix", help="INDEX_PREFIX to load into (default bench-corpus-SIZE); its indices are replaced")
    parser.add_argument("--url", help=f"OpenSearch URL (default: the local node {NODE_NAME!r}, {NODE_HEAP} heap, started if needed)")
    parser.add_argument("--jsonl", type=Path, help="write a JSONL file for the importer instead of loading")
    parser.add_argument("--workers", type=int, default=3, help="bulk requests in flight (default 3)")
    args = parser.parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.jsonl:
        info = write_jsonl(args.size, args.jsonl, vectors=args.vectors, seed=args.seed)
    else:
        if args.vectors == "none":
            parser.error("--vectors none only makes sense with --jsonl")
        info = load(args.size, prefix=args.prefix or f"bench-corpus-{args.size}", url=node_url(args.url), vectors=args.vectors,
                    seed=args.seed, workers=args.workers)
    print(json.dumps(info, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
