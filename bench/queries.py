"""The latency benchmark's query set: text queries about the corpus's topics, embeddings precomputed.

    python -m bench.queries --per-kind 300           # print a summary; the set is cached in bench/out/

Kinds (each a GET /recall parameter set; all but `embed` carry the precomputed `embedding`, so
the service does exactly what the bare engine does plus its own work):
- `unscoped`  text query over everything;
- `tag`       scoped to one project (`tags=project:<p>`, a prefix: all of its areas);
- `window`    a 30-180 day time window (`start` / `end`);
- `expand`    `expand_relations=true` (graph expansion from the seeds);
- `embed`     text only: the service embeds the query (every text is distinct, so the query LRU
              cache never answers).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from bench.corpus import AREA_WORDS, TECH, clusters

OUT = Path(__file__).resolve().parent / "out"
KINDS = ("unscoped", "tag", "window", "expand", "embed")
LIMIT = 10

QUESTION_TEMPLATES = [
    "what did we decide about {tech} for {project} {area}",
    "why did {project} {area} move to {tech}",
    "{project} {area} incident with {tech}",
    "who is on call for {project} {area}",
    "how do we deploy {project} {area} changes",
    "{tech} latency problems in {area}",
    "preferences for {area} pull requests",
    "meeting notes about the {project} {tech} rollout",
    "customer questions about {project} {area}",
    "{area} runbook steps for {tech}",
    "lessons from the {project} {area} migration",
    "which {area} work is blocked on {tech}",
]


@dataclass
class Query:
    kind: str
    text: str
    params: dict[str, str] = field(default_factory=dict)
    embedding: list[float] | None = None

    def recall_params(self, *, with_embedding: bool = True) -> dict[str, str]:
        out = {"query": self.text, "limit": str(LIMIT), **self.params}
        if with_embedding and self.embedding is not None:
            out["embedding"] = ",".join(f"{x:.6g}" for x in self.embedding)
        return out


def generate(per_kind: int, *, seed: int = 11, now: datetime | None = None) -> list[Query]:
    rng = random.Random(seed)
    now = now or datetime.now(timezone.utc)
    cs = clusters()
    seen: set[str] = set()
    out: list[Query] = []
    for kind in KINDS:
        made = 0
        while made < per_kind:
            c = rng.choice(cs)
            text = rng.choice(QUESTION_TEMPLATES).format(project=c.project, area=c.area, tech=rng.choice(TECH))
            if rng.random() < 0.3:
                text += " " + rng.choice(AREA_WORDS[c.area].replace(",", "").split())
            if text in seen:
                continue
            seen.add(text)
            params: dict[str, str] = {}
            if kind == "tag":
                params["tags"] = f"project:{c.project}"
            elif kind == "window":
                days = rng.randint(30, 180)
                end = now - timedelta(days=rng.randint(0, 500))
                params["start"] = (end - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")
                params["end"] = end.strftime("%Y-%m-%dT%H:%M:%SZ")
            elif kind == "expand":
                params["expand_relations"] = "true"
            out.append(Query(kind, text, params))
            made += 1
    return out


def build(per_kind: int, embedder, *, seed: int = 11) -> list[Query]:
    """The query set with embeddings (cached in bench/out/ per model, backend, size and seed)."""
    key = hashlib.sha256(f"{embedder.model_name}|{embedder.backend}|{per_kind}|{seed}|{QUESTION_TEMPLATES}".encode()).hexdigest()[:12]
    cache = OUT / f"queries-{key}.json"
    if cache.is_file():
        cached = [Query(**q) for q in json.loads(cache.read_text())]
        # Time windows are relative to now: refresh them, keep the texts and embeddings.
        fresh = generate(per_kind, seed=seed)
        for q, f in zip(cached, fresh):
            q.params = f.params
        return cached
    queries = generate(per_kind, seed=seed)
    vectors = embedder.encode([q.text for q in queries])
    for q, v in zip(queries, vectors.tolist()):
        q.embedding = v
    OUT.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps([asdict(q) for q in queries]))
    return queries


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.queries", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-kind", type=int, default=300)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)
    from service.config import Settings
    from service.embedding import Embedder

    s = Settings()
    queries = build(args.per_kind, Embedder(s.embedding_model, backend=s.embedding_backend), seed=args.seed)
    for kind in KINDS:
        sample = next(q for q in queries if q.kind == kind)
        print(f"{kind:9s} {sum(q.kind == kind for q in queries):4d} queries, e.g. {sample.text!r} {sample.params}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
