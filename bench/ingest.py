"""Ingest throughput: POST /memory/batch and the bulk importer, with vectors given and embedded by the service.

    python -m bench.ingest                        # the default sizes (a few minutes on 2 cores)
    python -m bench.ingest --api 2000 --api-embed 500 --import 10000 --import-embed 1000   # quicker

Every row writes a fresh corpus (bench.corpus memories: 40-1,000 characters, tags, metadata) into
its own INDEX_PREFIX (`bench-ingest-*`, dropped afterwards) in the local node `bench`:

- `POST /memory/batch`: the service as its own process (`python -m service`), batches of --batch
  memories from 1 or --clients clients; WRITE_REFRESH=wait_for (the default: each batch returns once
  its memories are searchable, so a lone client waits for a refresh per batch) and =false;
- `importer`: `python -m service.cli.importer FILE.jsonl --json` as a subprocess; the rate is the
  importer's own (stored / run time), the wall time includes process start and model load;
  with and without the corpus's edges (~1.25 per memory, through the association service);
- `engine alone`: the importer's documents, built beforehand, as raw `_bulk` from 1 and 2 connections
  (refresh off): the engine's own ceiling on this machine.

Service-side embedding uses EMBEDDING_BACKEND (default: the service's, onnx-int8). Writes bench/out/ingest.json and ingest.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import orjson
from tqdm import tqdm

from bench import corpus as C
from bench.serving import OUT, ROOT, TOKEN, ServiceProcess, load_avg
from service.config import Settings


def records(n: int, *, vectors: bool, edges: bool, seed: int, embedder) -> list[dict]:
    gen = C.CorpusGenerator(n, seed=seed)
    out = list(C.with_vectors(gen, "synthetic" if vectors else "model", embedder))
    if not edges:
        for r in out:
            r.pop("associations", None)
    return out


def drop(url: str, prefix: str) -> None:
    from opensearchpy import OpenSearch

    client = OpenSearch(hosts=[url], timeout=120)
    C.drop_prefix(client, prefix)
    client.close()


def via_api(url: str, rows: list[dict], *, batch: int, clients: int, refresh: str, backend: str, label: str) -> dict:
    prefix = f"bench-ingest-api-{os.getpid()}"
    drop(url, prefix)
    svc = ServiceProcess(url, prefix, env={"WRITE_REFRESH": refresh, "EMBEDDING_BACKEND": backend})
    chunks = [rows[i : i + batch] for i in range(0, len(rows), batch)]
    try:
        with svc as base, httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=600,
                                       limits=httpx.Limits(max_connections=clients + 2)) as http:
            bar = tqdm(total=len(rows), desc=label, unit="mem", file=sys.stderr, leave=False)

            def send(chunk: list[dict]) -> None:
                r = http.post("/memory/batch", content=orjson.dumps({"memories": chunk}), headers={"content-type": "application/json"})
                if r.status_code != 201:
                    raise RuntimeError(f"batch failed: {r.status_code} {r.text[:300]}")
                bar.update(len(chunk))

            started = time.perf_counter()
            with ThreadPoolExecutor(clients) as pool:
                list(pool.map(send, chunks))
            seconds = time.perf_counter() - started
            bar.close()
            peak = svc.peak_rss_mb()
    finally:
        drop(url, prefix)
    return {"path": "POST /memory/batch", "label": label, "n": len(rows), "batch": batch, "clients": clients, "write_refresh": refresh,
            "seconds": round(seconds, 2), "memories_per_s": round(len(rows) / seconds, 1), "service_peak_rss_mb": peak}


def via_importer(url: str, rows: list[dict], *, backend: str, label: str, tmp: Path) -> dict:
    prefix = f"bench-ingest-imp-{os.getpid()}"
    drop(url, prefix)
    path = tmp / f"{label.replace(' ', '_')}.jsonl"
    with open(path, "wb") as fh:
        for r in rows:
            fh.write(orjson.dumps(r) + b"\n")
    cmd = [sys.executable, "-m", "service.cli.importer", str(path), "--url", url, "--prefix", prefix, "--json"]
    started = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env={**os.environ, "EMBEDDING_BACKEND": backend}, capture_output=True, text=True)
        wall = time.perf_counter() - started
        if proc.returncode != 0:
            raise RuntimeError(f"importer failed ({proc.returncode}): {proc.stdout[-500:]} {proc.stderr[-1500:]}")
        report = json.loads(proc.stdout.strip().splitlines()[-1])
    finally:
        drop(url, prefix)
    return {"path": "importer", "label": label, "n": len(rows), "batch": report["batch_size"], "clients": report["workers"],
            "seconds": round(report["seconds"], 2), "wall_seconds": round(wall, 2), "memories_per_s": report["memories_per_s"],
            "edges_stored": report["edges_stored"], "embedded": report["embedded"], "failed": report["failed"]}


def via_engine(url: str, rows: list[dict], *, connections: int, embedder, label: str) -> dict:
    """The engine alone: the importer's own documents, built and serialised beforehand, sent as
    `connections` parallel `_bulk` requests of 500 into a fresh memories index with refresh off.
    The ceiling any client of this engine can reach; the importer's rate is below it by what its
    own work (validation, vectors, JSON) takes from the same cores."""
    from opensearchpy import OpenSearch

    from service.admin.importing import Importer
    from service.config import Settings
    from service.storage.bootstrap import render_template

    prefix = f"bench-ingest-raw-{os.getpid()}"
    settings = Settings(opensearch_url=url, index_prefix=prefix)
    client = OpenSearch(hosts=[url], timeout=600)
    drop(url, prefix)
    index = f"{prefix}-memories-v1"
    body = render_template("memories", settings, dimension=embedder.dimension)["template"]
    body["settings"]["index"]["refresh_interval"] = "-1"
    client.indices.create(index=index, body=body)
    importer = Importer(settings, client, embedder)
    lines: list[bytes] = []
    for start in range(0, len(rows), 500):
        batch = importer._prepare(start, list(enumerate(rows[start : start + 500], start)))
        lines += [orjson.dumps({"index": {"_id": it.prepared.memory_id}}) + b"\n" + orjson.dumps(it.prepared.doc) + b"\n" for it in batch.memories]
    chunks = [b"".join(lines[i : i + 500]) for i in range(0, len(lines), 500)]
    try:
        with httpx.Client(base_url=url, timeout=600, limits=httpx.Limits(max_connections=connections + 1)) as http:
            def send(chunk: bytes) -> None:
                r = http.post(f"/{index}/_bulk", content=chunk, headers={"content-type": "application/x-ndjson"})
                if r.status_code != 200 or r.json().get("errors"):
                    raise RuntimeError(f"bulk failed: {r.status_code} {r.text[:300]}")

            started = time.perf_counter()
            with ThreadPoolExecutor(connections) as pool:
                list(tqdm(pool.map(send, chunks), total=len(chunks), desc=label, unit="bulk", file=sys.stderr, leave=False))
            seconds = time.perf_counter() - started
    finally:
        drop(url, prefix)
        client.close()
    return {"path": "engine alone (_bulk)", "label": label, "n": len(lines), "batch": 500, "clients": connections,
            "seconds": round(seconds, 2), "memories_per_s": round(len(lines) / seconds, 1)}


def markdown(res: dict) -> str:
    lines = ["| path | vectors | memories | batch × clients | WRITE_REFRESH | memories/s | notes |", "|---|---|---|---|---|---|---|"]
    for r in res["rows"]:
        notes = []
        if r.get("edges_stored"):
            notes.append(f"+ {r['edges_stored']:,} edges")
        if r.get("wall_seconds"):
            notes.append(f"wall {r['wall_seconds']:.0f} s incl. start-up")
        if r.get("service_peak_rss_mb"):
            notes.append(f"service peak RSS {r['service_peak_rss_mb']:.0f} MB")
        lines.append(
            f"| {r['path']} | {r['vectors']} | {r['n']:,} | {r['batch']} × {r['clients']} | {r.get('write_refresh', '— (refresh paused)')} | "
            f"{r['memories_per_s']:,.0f} | {'; '.join(notes)} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ingest", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--api", type=int, default=5000, help="memories with vectors through POST /memory/batch (default 5000)")
    parser.add_argument("--api-embed", type=int, default=1000, help="memories the service embeds, through POST /memory/batch (default 1000)")
    parser.add_argument("--import", dest="imp", type=int, default=20000, help="memories with vectors through the importer (default 20000)")
    parser.add_argument("--import-embed", type=int, default=2000, help="memories the importer embeds (default 2000)")
    parser.add_argument("--engine", type=int, default=20000, help="memories with vectors sent as raw _bulk, 1 and 2 connections (default 20000)")
    parser.add_argument("--batch", type=int, default=500, help="memories per POST /memory/batch (max 500, default 500)")
    parser.add_argument("--clients", type=int, default=4, help="concurrent clients for the second API row (default 4)")
    parser.add_argument("--url", help=f"OpenSearch URL (default: the local node {C.NODE_NAME!r})")
    parser.add_argument("--backend", default=os.environ.get("EMBEDDING_BACKEND", Settings.model_fields["embedding_backend"].default),
                        help="EMBEDDING_BACKEND (default: the service's)")
    parser.add_argument("--out", type=Path, default=OUT / "ingest.json")
    args = parser.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from service.config import Settings
    from service.embedding import Embedder

    url = C.node_url(args.url)
    embedder = Embedder(Settings().embedding_model, backend=args.backend)
    res: dict = {"backend": args.backend, "load_avg_before": load_avg(), "rows": []}
    plan = [
        ("api", args.api, True, False, dict(clients=1, refresh="wait_for")),
        ("api", args.api, True, False, dict(clients=args.clients, refresh="wait_for")),
        ("api", args.api, True, False, dict(clients=1, refresh="false")),
        ("api", args.api_embed, False, False, dict(clients=1, refresh="wait_for")),
        ("importer", args.imp, True, False, {}),
        ("importer", args.imp, True, True, {}),
        ("importer", args.import_embed, False, False, {}),
        ("engine", args.engine, True, False, dict(connections=1)),
        ("engine", args.engine, True, False, dict(connections=2)),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for i, (path, n, vectors, edges, kw) in enumerate(plan):
            if n <= 0:
                continue
            rows = records(n, vectors=vectors, edges=edges, seed=100 + i, embedder=embedder)
            vec = "given" if vectors else f"embedded by the service ({args.backend})"
            label = f"{path} {'vectors' if vectors else 'embed'}{' edges' if edges else ''} {kw.get('clients', kw.get('connections', ''))}{kw.get('refresh', '')}"
            if path == "engine":
                row = via_engine(url, rows, embedder=embedder, label=label, **kw)
            elif path == "api":
                row = via_api(url, rows, batch=min(args.batch, 500), backend=args.backend, label=label, **kw)
            else:
                row = via_importer(url, rows, backend=args.backend, label=label, tmp=Path(tmp))
            row["vectors"] = vec
            res["rows"].append(row)
            print(f"{label:40s} {row['memories_per_s']:8.0f} memories/s", file=sys.stderr)
    res["load_avg_after"] = load_avg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=2))
    table = markdown(res)
    args.out.with_suffix(".md").write_text(table + "\n")
    print(table)
    print(f"\nload average before {res['load_avg_before']}, after {res['load_avg_after']} (2 cores)")
    print(f"written: {args.out}, {args.out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
