"""Recall quality and latency on the LoCoMo development slice, through the public HTTP API.

Every turn becomes one memory ("<speaker>: <text>", the session date as timestamp, dia_id and the
session as `session_id` in metadata, tag `locomo:<sample_id>`, sent in conversation order); each question (categories 1-4; 5 is adversarial and has no
answer) is recalled within its conversation's tag, and recall@5 / recall@10 of the evidence turns
are averaged over questions (see ../shared/data/README.md).

    python -m bench.locomo                       # default settings, in-process server on a free port
    python -m bench.locomo --param scoring_profile=automem
    python -m bench.locomo --url http://127.0.0.1:8001 --token $T   # a running service
    python -m bench.locomo --enrichment --param expand_entities=true  # entities derived first
    python -m bench.locomo --surface hindsight   # Hindsight's API: retain, then POST .../memories/recall
    python -m bench.locomo --set search_thread_context_weight=0       # a setting of the service

Without --url the benchmark starts the service itself (uvicorn on 127.0.0.1, a free port) with
INDEX_PREFIX=bench-locomo against OPENSEARCH_URL or the local node, so latencies include HTTP.

`--surface hindsight` stores the same memories through Hindsight's retain (into the bank `--bank`,
default `locomo`; metadata values as strings; Hindsight's items carry no AutoMem type, so type and
confidence follow the write rules) and recalls through `POST /v1/default/banks/{bank}/memories/recall`
with Hindsight's defaults (budget mid, max_tokens 4096) and `tags: ["locomo:<id>"]`, `tags_match: any_strict`;
the first 5 / 10 results are scored. `--ingest automem` recalls through Hindsight over memories
stored through AutoMem (the default bank), to compare the two recall routes on identical memories.
`--surface signet` recalls the memories stored through AutoMem through Signet's `POST
/api/memory/recall` (`limit` 10, `tags: "locomo:<id>"`, no session: nothing is deduplicated).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import httpx
from tqdm import tqdm

ROOT = Path(__file__).resolve().parent.parent
# LOCOMO_DATA: the LoCoMo JSON (a list of samples with `conversation` and `qa`, as LoCoMo's
# locomo10.json); by default the team's dev slice, which sits beside the repository in our workspace.
DEFAULT_DATA = Path(os.environ.get("LOCOMO_DATA") or ROOT.parent / "shared" / "data" / "locomo-dev.json")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
BATCH = 200


def session_time(text: str) -> str:
    """'1:56 pm on 8 May, 2023' -> ISO 8601 (UTC)."""
    moment = datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")
    return moment.replace(tzinfo=timezone.utc).isoformat()


def memories_for(sample: dict, style: str = "engram", thread_ids: bool = True) -> list[dict]:
    """The memories of one conversation: one per turn, in conversation order. `style` "automem"
    stores them as AutoMem's own LoCoMo benchmark does (tests/benchmarks/test_locomo.py in AutoMem's
    repository): no timestamp (the time of storage), tags `conversation:<id>`, `session:<n>` and
    `speaker:<name>`, metadata `conversation_id` and `session_id` = the session's number (unique
    within its conversation only), `dialog_id`, `speaker`, `session_datetime`. `thread_ids` False
    stores the engram style without `session_id`: tags and the session date only, as a client that
    names no thread (issue 26's first row)."""
    if style == "automem":
        return automem_style_memories(sample)
    conv = sample["conversation"]
    out = []
    sessions = sorted((int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k)))
    for n in sessions:
        when = session_time(conv[f"session_{n}_date_time"])
        for turn in conv[f"session_{n}"]:
            text = turn["text"]
            if turn.get("blip_caption"):
                text = f"{text} [shares a photo: {turn['blip_caption']}]"
            out.append({
                "id": f"{sample['sample_id']}-{turn['dia_id'].replace(':', '_')}",
                "content": f"{turn['speaker']}: {text}",
                "timestamp": when,
                "tags": [f"locomo:{sample['sample_id']}"],
                # session_id: the thread key an agent sends with each turn (thread context links the turns).
                "metadata": {"dia_id": turn["dia_id"], "speaker": turn["speaker"],
                             **({"session_id": f"{sample['sample_id']}/session_{n}"} if thread_ids else {})},
                "type": "Context",
                "importance": 0.5,
            })
    return out


def automem_style_memories(sample: dict) -> list[dict]:
    conv = sample["conversation"]
    out = []
    sessions = sorted((int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k)))
    for n in sessions:
        for turn in conv[f"session_{n}"]:
            if not turn.get("text"):
                continue
            content = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                content += f" [Image: {turn['blip_caption']}]"
            out.append({
                "content": content,
                "tags": ["locomo-test", f"conversation:{sample['sample_id']}", f"session:{n}", f"speaker:{turn['speaker'].lower().replace(' ', '-')}"],
                "metadata": {"source": "locomo_benchmark", "conversation_id": sample["sample_id"], "session_id": str(n),
                             "dialog_id": turn["dia_id"], "speaker": turn["speaker"], "session_datetime": conv[f"session_{n}_date_time"]},
                "type": "Context",
                "importance": 0.5,
            })
    return out


def evidence_ids(qa: dict) -> set[str]:
    return {e for raw in qa.get("evidence", []) for e in re.split(r"[;\s]+", raw) if e}


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    idx = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[idx]


class LocalServer:
    """The service under uvicorn in a background thread, so the benchmark speaks real HTTP."""

    def __init__(self, token: str, prefix: str, **overrides):
        import uvicorn

        from service.config import Settings
        from service.engine.local_node import free_port
        from service.main import create_app

        self.port = free_port()
        settings = Settings(automem_api_token=token, index_prefix=prefix, **overrides)
        config = uvicorn.Config(create_app(settings), host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 300
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the service did not start")
            time.sleep(0.1)
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


def hindsight_item(m: dict) -> dict:
    """A LoCoMo memory as a Hindsight retain item (Hindsight's metadata holds strings)."""
    return {"content": m["content"], "timestamp": m["timestamp"], "tags": m["tags"], "metadata": {k: str(v) for k, v in m["metadata"].items()}}


def ingest(client: httpx.Client, data: list[dict], surface: str = "automem", bank: str = "locomo", style: str = "engram",
           thread_ids: bool = True, documents: bool = False) -> float:
    """Store every turn. `documents` (Hindsight's retain only): no thread id, each session retained
    as one request whose items carry the session as their `document_id` (a Hindsight client that
    retains a conversation document by document)."""
    memories = [m for sample in data for m in memories_for(sample, style, thread_ids and not documents)]
    if documents:
        sessions: dict[str, list[dict]] = {}
        for m in memories:
            sessions.setdefault(m["id"].rsplit("_", 1)[0], []).append(m)
        chunks = list(sessions.items())
    else:
        chunks = [(f"locomo-{i}", memories[i : i + BATCH]) for i in range(0, len(memories), BATCH)]
    started = time.perf_counter()
    with tqdm(total=len(memories), desc=f"ingest ({surface})", unit="mem", file=sys.stderr) as bar:
        for name, chunk in chunks:
            if surface == "hindsight":
                # a fixed operation_id per batch: the ids derive from it, so a re-run overwrites instead of duplicating
                items = [hindsight_item(m) | ({"document_id": name} if documents else {}) for m in chunk]
                resp = client.post(f"/v1/default/banks/{bank}/memories", json={"items": items, "operation_id": name})
                ok = resp.status_code == 200
            else:
                resp = client.post("/memory/batch", json={"memories": chunk})
                ok = resp.status_code == 201
            if not ok:
                raise RuntimeError(f"batch failed: {resp.status_code} {resp.text[:500]}")
            bar.update(len(chunk))
    return len(memories) / (time.perf_counter() - started)


def json_or_text(value: str):
    """--param values for a JSON body: `max_tokens=500`, `types=["world"]`, `budget=high`."""
    try:
        return json.loads(value)
    except ValueError:
        return value


def recall_once(client: httpx.Client, surface: str, bank: str, question: str, sample_id: str, params: dict[str, str], k_max: int,
                style: str = "engram") -> tuple[list[dict], float | None]:
    """(results as [{dia_id, final_score}], server-side ms when the surface reports it)."""
    if surface == "signet":
        body = {"query": question, "tags": f"locomo:{sample_id}", "limit": k_max, **{k: json_or_text(v) for k, v in params.items()}}
        resp = client.post("/api/memory/recall", json=body)
        if resp.status_code != 200:
            raise RuntimeError(f"recall failed: {resp.status_code} {resp.text[:500]}")
        # Signet's rows carry no metadata: the dia_id comes back from the id memories_for gave.
        results = [{"dia_id": r["id"].removeprefix(f"{sample_id}-").replace("_", ":"), "final_score": r["score"]} for r in resp.json()["results"]]
        return results, None
    if surface == "hindsight":
        body = {"query": question, "tags": [f"locomo:{sample_id}"], "tags_match": "any_strict", **{k: json_or_text(v) for k, v in params.items()}}
        resp = client.post(f"/v1/default/banks/{bank}/memories/recall", json=body)
        if resp.status_code != 200:
            raise RuntimeError(f"recall failed: {resp.status_code} {resp.text[:500]}")
        results = resp.json()["results"]
        return [{"dia_id": (r.get("metadata") or {}).get("dia_id"), "final_score": r["scores"]["final"]} for r in results], None
    scope = {"tags": f"conversation:{sample_id}", "tag_match": "exact"} if style == "automem" else {"tags": f"locomo:{sample_id}"}
    query = {"query": question, **scope, "limit": str(k_max), **params}
    resp = client.get("/recall", params=query)
    if resp.status_code != 200:
        raise RuntimeError(f"recall failed: {resp.status_code} {resp.text[:500]}")
    body = resp.json()
    results = [{"dia_id": dialog_id(r["memory"].get("metadata") or {}), "final_score": r.get("final_score", 0.0)} for r in body["results"]]
    return results, body.get("query_time_ms", 0.0)


def dialog_id(metadata: dict) -> str | None:
    return metadata.get("dia_id") or metadata.get("dialog_id")


def wait_for_enrichment(client: httpx.Client, timeout: float = 3600.0) -> dict:
    """Poll GET /enrichment/status until nothing is queued, in flight or pending in the engine."""
    started = time.perf_counter()
    with tqdm(desc="enrichment", unit="mem", file=sys.stderr) as bar:
        while True:
            status = client.get("/enrichment/status").json()
            if status.get("status") != "running":
                raise RuntimeError(f"enrichment is not running: {status}")
            bar.n = status["stats"]["successes"]
            bar.refresh()
            if not (status["queue_size"] or status["inflight"] or status["pending"] or status["stored"]["pending"]):
                return {"seconds": time.perf_counter() - started, "status": status}
            if time.perf_counter() - started > timeout:
                raise RuntimeError(f"enrichment did not finish in {timeout:.0f} s: {status}")
            time.sleep(0.5)


NAMES = ("recall@5", "recall@10", "recall@10_by_score", "recall@all", "all@5", "all@10")


def scores(wanted: set[str], got: list, by_score: list) -> tuple[float, ...]:
    """One question's figures, in NAMES' order: the share of its evidence in the top 5 / 10 (as
    returned; the top 10 by final_score; everything returned), and whether ALL its evidence is in
    the top 5 / 10 (all-evidence@k: a multi-hop answer needs every piece)."""
    at5, at10 = wanted & set(got[:5]), wanted & set(got[:10])
    return (len(at5) / len(wanted), len(at10) / len(wanted), len(wanted & set(by_score[:10])) / len(wanted),
            len(wanted & set(got)) / len(wanted), float(at5 == wanted), float(at10 == wanted))


def summary(records: list[tuple[str, int, tuple[float, ...]]]) -> dict:
    """(sample_id, category, scores) per question -> rows per category, overall, and per conversation."""
    def row(vals):
        return {"n": len(vals), **{name: statistics.mean(v[i] for v in vals) for i, name in enumerate(NAMES)}}

    rows = {name: row([v for _, c, v in records if c == cat]) for cat, name in CATEGORIES.items() if any(c == cat for _, c, _ in records)}
    rows["overall"] = row([v for _, _, v in records])
    conversations = {sample: row([v for s, _, v in records if s == sample]) for sample in dict.fromkeys(s for s, _, _ in records)}
    return {"quality": rows, "conversations": conversations}


def evaluate(client: httpx.Client, data: list[dict], params: dict[str, str], k_max: int, surface: str = "automem", bank: str = "locomo",
             style: str = "engram") -> dict:
    """recall@5 / recall@10 of the results in the order returned, all-evidence@5 / @10, per category,
    overall and per conversation; with graph expansion (which appends expanded memories after the
    `limit` seeds) also recall@10 of all results re-sorted by final_score and recall over everything returned."""
    records: list[tuple[str, int, tuple[float, ...]]] = []
    latencies: list[float] = []
    server_ms: list[float] = []
    returned: list[int] = []
    questions = [(s["sample_id"], qa) for s in data for qa in s["qa"] if qa.get("category") in CATEGORIES]
    for sample_id, qa in tqdm(questions, desc="recall", unit="q", file=sys.stderr):
        wanted = evidence_ids(qa)
        if not wanted:
            continue
        started = time.perf_counter()
        results, server = recall_once(client, surface, bank, qa["question"], sample_id, params, k_max, style)
        latencies.append((time.perf_counter() - started) * 1000)
        if server is not None:
            server_ms.append(server)
        returned.append(len(results))
        got = [r["dia_id"] for r in results]
        by_score = [r["dia_id"] for r in sorted(results, key=lambda r: -r["final_score"])]
        records.append((sample_id, qa["category"], scores(wanted, got, by_score)))
    return {
        **summary(records),
        "returned_mean": statistics.mean(returned) if returned else 0.0,
        "latency_ms": {
            "client_p50": percentile(latencies, 50), "client_p95": percentile(latencies, 95),
            "server_p50": percentile(server_ms, 50), "server_p95": percentile(server_ms, 95),
        },
    }


def markdown(result: dict) -> str:
    expanded = result.get("returned_mean", 0) > 10
    head = "| category | n | recall@5 | recall@10 | all@5 | all@10 |" + (" recall@10 by final_score | recall over all returned |" if expanded else "")
    lines = [head, "|---|---|---|---|---|---|" + ("---|---|" if expanded else "")]
    rows = [*result["quality"].items(), *((f"conversation {c}", r) for c, r in result.get("conversations", {}).items())]
    for name, row in rows:
        extra = f" {row['recall@10_by_score']:.3f} | {row['recall@all']:.3f} |" if expanded else ""
        lines.append(f"| {name} | {row['n']} | {row['recall@5']:.3f} | {row['recall@10']:.3f} | {row['all@5']:.3f} | {row['all@10']:.3f} |{extra}")
    if expanded:
        lines.append(f"\n{result['returned_mean']:.1f} results per recall on average (expanded memories come after the `limit` seeds)")
    lat = result["latency_ms"]
    lines.append("")
    server = "" if lat["server_p50"] != lat["server_p50"] else f" (server-side query_time_ms p50 {lat['server_p50']:.1f}, p95 {lat['server_p95']:.1f})"
    lines.append(f"recall latency over HTTP: p50 {lat['client_p50']:.1f} ms, p95 {lat['client_p95']:.1f} ms{server}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.locomo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help=f"LoCoMo JSON (default {DEFAULT_DATA})")
    parser.add_argument("--url", help="a running service (default: start one in-process)")
    parser.add_argument("--token", default=os.environ.get("AUTOMEM_API_TOKEN"), help="API token for --url")
    parser.add_argument("--prefix", default="bench-locomo", help="INDEX_PREFIX of the in-process service")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="extra /recall parameter, repeatable")
    parser.add_argument("--skip-ingest", action="store_true", help="reuse memories stored by an earlier run")
    parser.add_argument("--out", type=Path, help="write the JSON result here (default bench/out/locomo-<label>.json)")
    parser.add_argument("--label", default=None, help="name of this run in the output")
    parser.add_argument("--enrichment", action=argparse.BooleanOptionalAction, default=True,
                        help="run the in-process service with enrichment (the default setting) and wait for it after ingest; "
                             "--no-enrichment: without")
    parser.add_argument("--threads", choices=("both", "ids", "none", "document"), default="both",
                        help="store the turns with their session as metadata.session_id (ids), without any thread id (none: tags "
                             "and the session date only), or both (default: each into its own prefix, <prefix>-ids and <prefix>-none); "
                             "document (Hindsight's retain only): no thread id, each session retained as a document (document_id)")
    parser.add_argument("--wait-enrichment", action="store_true", help="with --url: wait until the service's enrichment is done before recalling")
    parser.add_argument("--surface", choices=("automem", "hindsight", "signet"), default="automem",
                        help="the API recalled through: AutoMem's GET /recall (default), Hindsight's POST .../memories/recall "
                             "or Signet's POST /api/memory/recall (over memories stored through AutoMem's API)")
    parser.add_argument("--ingest", choices=("automem", "hindsight"), default=None,
                        help="the API the memories are stored through (default: --surface's)")
    parser.add_argument("--bank", default="locomo", help="with --surface hindsight: the bank (default locomo; 'default' with --ingest automem)")
    parser.add_argument("--style", choices=("engram", "automem"), default="engram",
                        help="how turns are stored: engram (default: session dates as timestamps, session_id unique per "
                             "conversation, tag locomo:<id>) or automem (as AutoMem's own LoCoMo benchmark stores them: no "
                             "timestamp, session_id = the session's number, tags conversation:<id> / session:<n> / speaker:<name>; "
                             "recalled within conversation:<id>, tag_match exact); AutoMem's surface only")
    parser.add_argument("--set", action="append", default=[], metavar="SETTING=VALUE",
                        help="a setting of the in-process service (e.g. recall_rerank_model=/tmp/ce), repeatable")
    args = parser.parse_args(argv)
    params = dict(p.split("=", 1) for p in args.param)
    if not args.data.is_file():
        print(f"error: no LoCoMo data at {args.data}: set LOCOMO_DATA (or --data) to a LoCoMo JSON file "
              "(LoCoMo's locomo10.json, or the team's dev slice locomo-dev.json)", file=sys.stderr)
        return 2
    data = json.loads(args.data.read_text())
    ingest_surface = args.ingest or ("automem" if args.surface == "signet" else args.surface)
    bank = "default" if ingest_surface == "automem" and args.surface == "hindsight" else args.bank
    label = args.label or ("-".join(f"{k}={v}" for k, v in params.items()) or "default")
    if args.surface == "hindsight" and not args.label:
        label = f"hindsight-{label}" + ("-automem-ingest" if ingest_surface == "automem" else "")
    if args.surface == "signet":
        if ingest_surface != "automem":
            parser.error("--surface signet recalls memories stored through AutoMem's API (the default bank)")
        label = args.label or f"signet-{label}"
    if not args.enrichment and not args.label:
        label = f"no-enrichment-{label}"
    if args.style != "engram":
        if args.surface != "automem" or (args.ingest or "automem") != "automem":
            parser.error("--style automem stores and recalls through AutoMem's API only")
        label = args.label or f"{args.style}-style-{label}"

    styles = ("ids", "none") if args.threads == "both" else (args.threads,)
    if args.threads == "document" and ingest_surface != "hindsight":
        parser.error("--threads document retains sessions as Hindsight documents: --surface hindsight")
    if args.url and len(styles) > 1:
        parser.error("--url stores into one service: choose --threads ids or --threads none")

    def run(url: str, token: str, thread_ids: bool) -> dict:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=120) as client:
            rate = None if args.skip_ingest else ingest(client, data, ingest_surface, bank, args.style, thread_ids, args.threads == "document")
            enrichment = wait_for_enrichment(client) if (args.enrichment and not args.url) or args.wait_enrichment else None
            result = evaluate(client, data, params, 10, args.surface, bank, args.style)
            result["ingest_memories_per_s"] = rate
            if enrichment:
                stats = enrichment["status"]["stats"]
                result["enrichment"] = {"wait_s": enrichment["seconds"], "stats": stats, "stored": enrichment["status"]["stored"]}
            return result

    results: dict[str, dict] = {}
    for style in styles:
        if args.url:
            if not args.token:
                parser.error("--url needs --token or AUTOMEM_API_TOKEN")
            results[style] = run(args.url, args.token, style == "ids")
        else:
            token = "bench-token"
            settings = dict(item.split("=", 1) for item in args.set)
            prefix = f"{args.prefix}-{style}" if len(styles) > 1 else args.prefix
            with LocalServer(token, prefix, enrichment_enabled=args.enrichment, **settings) as url:
                results[style] = run(url, token, style == "ids")
    result = results[styles[0]] if len(styles) == 1 else {"by_thread_ids": results}
    result.update(label=label, params=params, data=str(args.data), surface=args.surface, ingest=ingest_surface, style=args.style,
                  threads=args.threads, enrichment_enabled=args.enrichment, settings=args.set)
    out = args.out or ROOT / "bench" / "out" / f"locomo-{re.sub(r'[^A-Za-z0-9_.=-]+', '_', label)}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    for style, one in results.items():
        what = {"ids": "with thread ids (metadata.session_id)", "none": "without thread ids (tags and the session date only)",
                "document": "without thread ids, each session retained as a document (document_id)"}[style]
        print(f"\nLoCoMo dev slice — {label}, turns stored {what}\n")
        print(markdown(one))
        if one.get("ingest_memories_per_s"):
            route = f"POST /v1/default/banks/{bank}/memories" if ingest_surface == "hindsight" else "POST /memory/batch"
            print(f"ingest through {route}: {one['ingest_memories_per_s']:.0f} memories/s (service-side embedding)")
        if one.get("enrichment"):
            e = one["enrichment"]
            print(f"enrichment: {e['stats']['successes']} memories, {e['stats']['entities']} entities, "
                  f"{e['stats']['similar_edges']} SIMILAR_TO and {e['stats']['preceded_edges']} PRECEDED_BY edges; "
                  f"done {e['wait_s']:.1f} s after ingest ({e['stats']['memories_per_worker_second']} memories/s per busy worker thread)")
    print(f"\nwritten to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
