"""Bulk import of memories from JSONL, straight into OpenSearch through the service's own write path.

    python -m service.cli.importer memories.jsonl            # INDEX_PREFIX / OPENSEARCH_URL from the environment
    python -m service.cli.importer memories.jsonl --prefix engram --workers 2
    zcat dump.jsonl.gz | python -m service.cli.importer -

One JSON object per line, with the fields of `POST /memory` (content, id, tags, importance, type,
metadata, timestamp, t_valid, t_invalid, archived, embedding, ...) plus an optional
`associations` list whose items are `{"memory2_id" | "target_id", "type", "strength", ...properties}`:
the edge runs from this memory to the target, as `POST /associate` with memory1_id = this id; an
item with a `memory1_id` and no target runs from that memory to this one (an older memory that
this one supersedes: `{"memory1_id": "old-id", "type": "EVOLVED_INTO"}`).

- Every line goes through the same validation and document building as `POST /memory/batch`
  (MemoryCreate, MemoryWriter.prepare), lines without an `embedding` are embedded by the
  configured model (EMBEDDING_BACKEND), and memories are written with bulk requests (500 per
  request, `--workers` requests in flight while the next batch is prepared).
- Re-runs are idempotent: a line's `id` is its document id (an `index` is an upsert), a line
  without one gets a deterministic id derived from its content, and edge ids are
  `source|TYPE|target`. Running the same file twice leaves the same memories and edges.
- Failed items are never dropped: each is written, with its line number, stage and reason and
  the original record, to `FILE.failed.jsonl` (`--failed`), and counted in the summary; the exit
  status is 1 when anything failed.
- Edges whose target comes later in the file are retried once at the end.
- While it runs, the indices' refresh_interval is set to -1 (no refresh during the load) and
  restored afterwards (`--keep-refresh` leaves it alone); memories become searchable when the
  import ends.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

import orjson
from opensearchpy import OpenSearch
from pydantic import ValidationError

from service.graph.links import AssociationService
from service.config import Settings
from service.embedding import Embedder, EmbeddingError
from service.errors import EngramError
from service.schemas.memory import MemoryCreate
from service.storage.edges import EdgeStore
from service.storage.memories import MemoryStore
from service.timeparse import utcnow
from service.writes import MemoryWriter, Prepared

log = logging.getLogger("engram.importer")

# One bulk request per batch: the memory store's own chunk size (500 actions).
BATCH_SIZE = 500
# Bulk requests in flight while the next batch is validated and embedded. Measured on the 2-core
# machine, 20k memories with vectors and ~1.25 edges each: 1 -> ~750/s, 2 -> ~1,400/s, 3 -> ~1,650/s
# (each worker writes its batch's edges after its memories, so a third one overlaps those).
WORKERS = 3
# Deterministic ids for lines without one (uuid5 of the record): re-running a file never duplicates.
ID_NAMESPACE = uuid.UUID("6f1c1a52-7d0e-4c55-9a6e-3f0f6f0b9e61")


@dataclass
class Failure:
    line: int
    id: str | None
    stage: str  # parse | validate | embed | store | associate
    reason: str
    record: Any


@dataclass
class ImportReport:
    read: int = 0
    stored: int = 0
    failed: int = 0
    embedded: int = 0  # memories the service embedded (no embedding in the line)
    generated_ids: int = 0
    edges_stored: int = 0
    edges_failed: int = 0
    seconds: float = 0.0
    failures_by_stage: dict[str, int] = field(default_factory=dict)

    @property
    def memories_per_s(self) -> float:
        return self.stored / self.seconds if self.seconds else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "memories_per_s": round(self.memories_per_s, 1)}


@dataclass
class _Item:
    line: int
    record: Any
    prepared: Prepared | None = None
    associations: list[dict] = field(default_factory=list)


@contextmanager
def relaxed_refresh(client: OpenSearch, aliases: Iterable[str]) -> Iterator[None]:
    """No refresh while loading (the bulk-load advice of the OpenSearch docs), restored afterwards."""
    saved: dict[str, str | None] = {}
    for alias in aliases:
        for index in client.indices.get_alias(name=alias):
            current = client.indices.get_settings(index=index, name="index.refresh_interval", flat_settings=True)
            saved[index] = current.get(index, {}).get("settings", {}).get("index.refresh_interval")
            client.indices.put_settings(index=index, body={"index": {"refresh_interval": "-1"}})
    try:
        yield
    finally:
        for index, value in saved.items():
            client.indices.put_settings(index=index, body={"index": {"refresh_interval": value}})
            client.indices.refresh(index=index)


class Importer:
    """Validates, embeds and writes memories in batches, then their associations; reports every failure."""

    def __init__(
        self, settings: Settings, client: OpenSearch, embedder: Embedder, *, batch_size: int = BATCH_SIZE, workers: int = WORKERS,
        on_failure: Callable[[Failure], None] | None = None, on_progress: Callable[[int], None] | None = None,
    ):
        self.settings = settings
        self.embedder = embedder
        self.store = MemoryStore(client, settings.memories_alias, refresh="false", bank=settings.default_bank)
        self.edges = EdgeStore(client, settings.edges_alias, refresh="false", bank=settings.default_bank)
        self.writer = MemoryWriter(settings, self.store, self.edges, embedder)
        self.associations = AssociationService(self.store, self.edges)
        self.batch_size = max(1, min(batch_size, BATCH_SIZE))
        self.workers = max(1, workers)
        self.on_failure = on_failure or (lambda f: None)
        self.on_progress = on_progress or (lambda n: None)
        self.report = ImportReport()
        self._deferred: list[tuple[int, dict]] = []  # (line, association item) whose target came later
        self._lock = threading.Lock()  # the report and the failure sink are shared with the writer threads

    # --- the whole run ---------------------------------------------------------------------------
    def run(self, records: Iterable[tuple[int, Any]]) -> ImportReport:
        """`records` yields (line number, record): a dict, a JSON line (str / bytes), or an exception."""
        started = time.perf_counter()
        pending: list[Future] = []
        with ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="import") as pool:
            batch: list[tuple[int, Any]] = []
            for line, record in records:
                batch.append((line, record))
                if len(batch) >= self.batch_size:
                    pending = self._submit(pool, pending, batch)
                    batch = []
            if batch:
                pending = self._submit(pool, pending, batch)
            for fut in pending:
                fut.result()
        self._retry_deferred()
        self.report.seconds = time.perf_counter() - started
        return self.report

    def _submit(self, pool: ThreadPoolExecutor, pending: list[Future], batch: list[tuple[int, Any]]) -> list[Future]:
        items = self._prepare(batch)  # validation and embedding here, while earlier batches are being written
        while len(pending) >= self.workers:
            pending.pop(0).result()
        pending.append(pool.submit(self._write, items))
        return pending

    # --- one batch ---------------------------------------------------------------------------------
    def _fail(self, line: int, mid: str | None, stage: str, reason: str, record: Any) -> None:
        with self._lock:
            self.report.failed += 1
            self.report.failures_by_stage[stage] = self.report.failures_by_stage.get(stage, 0) + 1
            self.on_failure(Failure(line, mid, stage, reason, record))

    def _prepare(self, batch: list[tuple[int, Any]]) -> list[_Item]:
        now = utcnow()
        items: list[_Item] = []
        for line, record in batch:
            self.report.read += 1
            if isinstance(record, Exception):
                self._fail(line, None, "parse", str(record), None)
                continue
            if isinstance(record, (str, bytes)):
                try:
                    record = orjson.loads(record)
                except orjson.JSONDecodeError as exc:
                    self._fail(line, None, "parse", f"invalid JSON: {exc}", record if isinstance(record, str) else record.decode(errors="replace"))
                    continue
            if not isinstance(record, dict):
                self._fail(line, None, "parse", f"expected a JSON object, got {type(record).__name__}", record)
                continue
            fields = record
            if not record.get("id"):
                fields = {**record, "id": str(uuid.uuid5(ID_NAMESPACE, orjson.dumps(record, option=orjson.OPT_SORT_KEYS).decode()))}
                self.report.generated_ids += 1
            try:
                req = MemoryCreate.model_validate(fields)
                if req.supersedes:
                    raise EngramError("supersedes is not imported; give an association of type EVOLVED_INTO or INVALIDATED_BY from the old memory")
                prepared = self.writer.prepare(req, now)
            except ValidationError as exc:
                self._fail(line, fields.get("id"), "validate", _describe(exc), record)
                continue
            except EngramError as exc:
                self._fail(line, fields.get("id"), "validate", exc.message, record)
                continue
            item = _Item(line, record, prepared)
            for raw in record.get("associations") or ():
                if not isinstance(raw, dict):
                    self._edge_failed(line, {"memory1_id": prepared.memory_id, "item": raw}, "each association must be an object")
                    continue
                # The edge runs from this memory to the target, unless the item names another source
                # (an older memory superseded by this one: {"memory1_id": old, "type": "EVOLVED_INTO"}).
                source = raw.get("memory1_id") or prepared.memory_id
                target = raw.get("memory2_id") or raw.get("target_id") or raw.get("target") or (prepared.memory_id if raw.get("memory1_id") else None)
                extra = {k: v for k, v in raw.items() if k not in ("memory1_id", "memory2_id", "target_id", "target")}
                item.associations.append({**extra, "memory1_id": source, "memory2_id": target})
            items.append(item)
        todo = [it for it in items if "embedding" not in it.prepared.doc]
        if todo:
            try:
                vectors = self.embedder.encode([it.prepared.doc["content"] for it in todo])
            except EmbeddingError as exc:
                for it in todo:
                    self._fail(it.line, it.prepared.memory_id, "embed", str(exc), it.record)
                return [it for it in items if "embedding" in it.prepared.doc]
            for it, vector in zip(todo, vectors):
                it.prepared.doc["embedding"] = vector.tolist()
            self.report.embedded += len(todo)
        return items

    def _write(self, items: list[_Item]) -> None:
        if not items:
            return
        try:
            errors = self.store.bulk_put([(it.prepared.memory_id, it.prepared.doc) for it in items], refresh="false")
        except EngramError as exc:
            errors = [exc.message] * len(items)
        stored: list[_Item] = []
        for it, err in zip(items, errors):
            if err:
                self._fail(it.line, it.prepared.memory_id, "store", err, it.record)
            else:
                stored.append(it)
        with self._lock:
            self.report.stored += len(stored)
        self._associate([(it.line, a) for it in stored for a in it.associations], final=False)
        self.on_progress(len(items))

    # --- associations ------------------------------------------------------------------------------
    def _edge_failed(self, line: int, item: Any, reason: str) -> None:
        mid = item.get("memory1_id") if isinstance(item, dict) else None
        with self._lock:
            self.report.edges_failed += 1
            self.report.failures_by_stage["associate"] = self.report.failures_by_stage.get("associate", 0) + 1
            self.on_failure(Failure(line, mid, "associate", reason, item))

    def _associate(self, pairs: list[tuple[int, dict]], *, final: bool) -> None:
        for start in range(0, len(pairs), BATCH_SIZE):
            chunk = pairs[start : start + BATCH_SIZE]
            try:
                outcomes = self.associations.associate([item for _, item in chunk], utcnow())
            except EngramError as exc:
                for line, item in chunk:
                    self._edge_failed(line, item, exc.message)
                continue
            for (line, item), outcome in zip(chunk, outcomes):
                if outcome.error is None:
                    with self._lock:
                        self.report.edges_stored += 1
                elif outcome.status == 404 and not final:
                    with self._lock:
                        self._deferred.append((line, item))  # the target may come later in the file
                else:
                    self._edge_failed(line, item, outcome.error)

    def _retry_deferred(self) -> None:
        deferred, self._deferred = self._deferred, []
        self._associate(deferred, final=True)


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err.get("loc", ()))
        parts.append(f"{where}: {err.get('msg')}" if where else str(err.get("msg")))
    return "; ".join(parts)


# --- command line ------------------------------------------------------------------------------------
def read_lines(stream) -> Iterator[tuple[int, bytes]]:
    for number, raw in enumerate(stream, start=1):
        if raw.strip():
            yield number, raw


def count_lines(path: Path) -> int:
    count = 0
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            count += block.count(b"\n")
    return count


def connect(settings: Settings) -> OpenSearch:
    """The engine the service would use: OPENSEARCH_URL, else the local node (started when needed)."""
    from service.localnode import LocalNode
    from service.storage.client import make_client

    url = settings.opensearch_url or LocalNode(settings.local_node_name).start()
    return make_client(url, settings)


def import_file(
    settings: Settings, source: Path | str, *, embedder: Embedder | None = None, client: OpenSearch | None = None,
    failed_path: Path | None = None, batch_size: int = BATCH_SIZE, workers: int = WORKERS, keep_refresh: bool = False,
    progress: bool = True,
) -> tuple[ImportReport, Path | None]:
    """Import a JSONL file (or '-' for stdin); return the report and the failures file (None when nothing failed)."""
    from tqdm import tqdm

    from service.storage.bootstrap import ensure_indices

    client = client or connect(settings)
    embedder = embedder or Embedder(settings.embedding_model, batch_size=settings.embedding_batch_size, backend=settings.embedding_backend)
    ensure_indices(client, settings, embedder.dimension)
    stdin = str(source) == "-"
    failed_path = failed_path or (Path("import.failed.jsonl") if stdin else Path(f"{source}.failed.jsonl"))
    failed_out: list[TextIO] = []

    def on_failure(f: Failure) -> None:
        if not failed_out:
            failed_out.append(open(failed_path, "w", encoding="utf-8"))
        failed_out[0].write(orjson.dumps(asdict(f), default=str).decode() + "\n")

    total = None if stdin else count_lines(Path(source))
    bar = tqdm(total=total, unit="mem", desc="import", disable=not progress, file=sys.stderr, smoothing=0.1)
    importer = Importer(settings, client, embedder, batch_size=batch_size, workers=workers, on_failure=on_failure, on_progress=bar.update)
    refresh = (lambda: _noop()) if keep_refresh else (lambda: relaxed_refresh(client, [settings.memories_alias, settings.edges_alias]))
    try:
        with refresh():
            if stdin:
                report = importer.run(read_lines(sys.stdin.buffer))
            else:
                with open(source, "rb") as fh:
                    report = importer.run(read_lines(fh))
    finally:
        bar.close()
        if failed_out:
            failed_out[0].close()
    return report, (failed_path if failed_out else None)


@contextmanager
def _noop() -> Iterator[None]:
    yield


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m service.cli.importer",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Settings come from the environment as for the service: OPENSEARCH_URL (else the local node "
        "ENGRAM_NODE_NAME), INDEX_PREFIX, EMBEDDING_MODEL, EMBEDDING_BACKEND.",
    )
    parser.add_argument("file", help="JSONL file of memories, or - for stdin")
    parser.add_argument("--prefix", help="INDEX_PREFIX to import into (default: $INDEX_PREFIX or engram)")
    parser.add_argument("--url", help="OpenSearch URL (default: $OPENSEARCH_URL, else the local node)")
    parser.add_argument("--failed", type=Path, help="where failed items go (default: FILE.failed.jsonl)")
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE, help=f"memories per bulk request (max {BATCH_SIZE})")
    parser.add_argument("--workers", type=int, default=WORKERS, help=f"bulk requests in flight (default {WORKERS})")
    parser.add_argument("--keep-refresh", action="store_true", help="do not pause index refreshes during the import")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if args.file != "-" and not Path(args.file).is_file():
        parser.error(f"no such file: {args.file}")
    overrides: dict[str, Any] = {}
    if args.prefix:
        overrides["index_prefix"] = args.prefix
    if args.url:
        overrides["opensearch_url"] = args.url
    settings = Settings(**overrides)
    try:
        report, failed_file = import_file(
            settings, args.file, failed_path=args.failed, batch_size=args.batch_size, workers=args.workers,
            keep_refresh=args.keep_refresh, progress=not args.no_progress,
        )
    except (EngramError, EmbeddingError) as exc:
        print(f"error: {getattr(exc, 'message', exc)}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({**report.as_dict(), "batch_size": args.batch_size, "workers": args.workers, "failed_file": str(failed_file) if failed_file else None}))
    else:
        print(
            f"{report.stored:,} of {report.read:,} memories stored into {settings.memories_alias} in {report.seconds:.1f} s "
            f"({report.memories_per_s:,.0f}/s; {report.embedded:,} embedded here, {report.generated_ids:,} given content-derived ids); "
            f"{report.edges_stored:,} edges stored"
        )
        if report.failed or report.edges_failed:
            stages = ", ".join(f"{k}: {v}" for k, v in sorted(report.failures_by_stage.items()))
            print(f"FAILED: {report.failed:,} memories and {report.edges_failed:,} edges ({stages}); details in {failed_file}", file=sys.stderr)
    return 1 if (report.failed or report.edges_failed) else 0


if __name__ == "__main__":
    sys.exit(main())
