"""Restore through a running service: `engram restore ARCHIVE --api URL` of an N-memory backup, the
service's peak RSS, and how fast a decompression bomb is refused.

    python -m bench.restore_api --size 100000 --url http://127.0.0.1:9250

1. a corpus (bench.corpus: synthetic vectors, ~1.3 edges per memory) is imported into <prefix>-a and
   backed up (`engram backup`, against the engine);
2. a service on an empty <prefix>-b (its own process; enrichment off, so its worker does not enrich
   the restored corpus during the measurement) gets the archive from `engram restore --api`: the wall
   time of that command and the service's resident memory before and at its peak (VmHWM);
3. the same service gets the 400 MB-string bomb of issue 23 (a few KB): its answer and time.

Figures go to bench/out/restore_api.json and a markdown table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import httpx

from bench import corpus as C
from bench.serving import TOKEN, ServiceProcess
from bench.lifecycle import OUT, engram

ADMIN = "bench-admin-token"


def rss_mb(pid: int, field: str) -> float:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(field):
            return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError(f"no {field} for {pid}")


def bomb(megabytes: int = 400) -> bytes:
    """tests/integration/test_restore_hostile.one_string_bomb: one node holding a string of `megabytes` MB."""
    import io
    import tarfile
    import zlib

    inner = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [inner.compress(b'{"timestamp": "20240101_000000", "nodes": [{"id": 0, "labels": ["Memory"], "properties": {"id": "m", "content": "')]
    parts += [inner.compress(b"a" * (1 << 20)) for _ in range(megabytes)]
    parts.append(inner.compress(b'"}}], "relationships": []}') + inner.flush())
    data = b"".join(parts)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("falkordb/falkordb_20240101_000000.json.gz")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def run(args) -> dict:
    OUT.mkdir(parents=True, exist_ok=True)
    url = C.node_url(args.url)
    client = httpx.Client(base_url=url, timeout=120)
    a, b = f"{args.prefix}-a", f"{args.prefix}-b"
    engine = lambda prefix: ["--url", url, "--prefix", prefix]  # noqa: E731

    def fresh(prefix: str) -> None:
        """Every index and template of the prefix (a service also makes banks, ledger, consolidation)."""
        client.delete(f"/{prefix}-*")
        templates = client.get(f"/_index_template/{prefix}-*")
        for t in templates.json().get("index_templates", []) if templates.status_code == 200 else []:
            client.delete(f"/_index_template/{t['name']}")

    archive = OUT / f"restore-api-{args.size}.tar.gz"
    results: dict = {"size": args.size, "load_avg_before": os.getloadavg()}
    if not archive.exists():
        source = OUT / f"lifecycle-corpus-{args.size}.jsonl"
        if not source.exists():
            C.write_jsonl(args.size, source, vectors="synthetic", seed=args.seed)
        fresh(a)
        step = engram(["import", str(source), *engine(a), "--json", "--no-progress"])
        print(f"import: {step['seconds']} s", file=sys.stderr)
        step = engram(["backup", *engine(a), "-o", str(archive), "--no-progress"])
        print(f"backup: {step['seconds']} s", file=sys.stderr)
        fresh(a)
    results["archive_bytes"] = archive.stat().st_size

    fresh(b)
    env = {"ADMIN_API_TOKEN": ADMIN, "ENRICHMENT_ENABLED": "false"}
    service = ServiceProcess(url, b, env=env)
    with service as base:
        base_pid = service.proc.pid  # type: ignore[union-attr]
        before = rss_mb(base_pid, "VmRSS")
        step = engram(["restore", str(archive), "--api", base, "--json", "--token", TOKEN, "--admin-token", ADMIN])
        body = json.loads(step["stdout"].strip().splitlines()[-1]) if step["stdout"].strip() else {}
        results["restore"] = {
            "seconds": step["seconds"], "exit": step["exit"], "cli_peak_rss_mb": step["peak_rss_mb"],
            "service_rss_before_mb": before, "service_peak_rss_mb": rss_mb(base_pid, "VmHWM"),
            "restored": body.get("memories", {}).get("restored"), "edges": body.get("edges", {}).get("restored"),
            "vectors_reused": body.get("memories", {}).get("vectors_reused"), "failed": body.get("memories", {}).get("failed"),
            "memories_per_s": round((body.get("memories", {}).get("restored") or 0) / step["seconds"], 1),
        }
        print(f"restore: {results['restore']}", file=sys.stderr)
        data = bomb()
        started = time.perf_counter()
        resp = httpx.post(f"{base}/admin/restore", content=data, timeout=900,
                          headers={"Authorization": f"Bearer {TOKEN}", "X-Admin-Token": ADMIN, "Content-Type": "application/gzip", "X-Bank": "bomb"})
        results["bomb"] = {"archive_bytes": len(data), "status": resp.status_code, "message": resp.json().get("message"),
                           "seconds": round(time.perf_counter() - started, 2), "service_peak_rss_mb": rss_mb(base_pid, "VmHWM")}
        print(f"bomb: {results['bomb']}", file=sys.stderr)
    results["load_avg_after"] = os.getloadavg()
    if not args.keep:
        fresh(b)
        archive.unlink(missing_ok=True)
    return results


def markdown(res: dict) -> str:
    r, x = res["restore"], res["bomb"]
    return "\n".join([
        "| step | wall s | memories/s | service RSS MB (before → peak) | notes |", "|---|---|---|---|---|",
        f"| restore --api | {r['seconds']} | {r['memories_per_s']:,} | {r['service_rss_before_mb']} → {r['service_peak_rss_mb']} | "
        f"{res['archive_bytes'] / 1e6:,.0f} MB archive: {r['restored']:,} memories ({r['vectors_reused']:,} vectors reused), {r['edges']:,} edges; "
        f"CLI peak RSS {r['cli_peak_rss_mb']} MB |",
        f"| bomb | {x['seconds']} | | peak {x['service_peak_rss_mb']} | {x['archive_bytes']:,}-byte archive, one 400 MB string: {x['status']} {x['message']} |",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.restore_api", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100_000, help="memories in the corpus (default 100000)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--url", help=f"OpenSearch URL (default: the local node {C.NODE_NAME!r}, started if needed)")
    parser.add_argument("--prefix", default="bench-restore", help="INDEX_PREFIX stem: <prefix>-a and <prefix>-b are replaced")
    parser.add_argument("--keep", action="store_true", help="keep the restored indices and the archive")
    parser.add_argument("--out", type=Path, default=OUT / "restore_api.json")
    args = parser.parse_args(argv)
    res = run(args)
    args.out.write_text(json.dumps(res, indent=2))
    print(markdown(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
