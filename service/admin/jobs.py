"""The long jobs as one call each — import a file, restore an archive, back up a bank — with their
progress bar, failures file and resume state; shared by the `engram` command and the admin routes."""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

import orjson
from opensearchpy import OpenSearch

from service.admin import sources
from service.admin.backup import BackupResult, write_backup
from service.admin.importing import BATCH_SIZE, WORKERS, Failure, Importer, ImportReport, memory_fields, relaxed_refresh
from service.admin.expansion import Budget
from service.admin.restore import ArchiveReader, extract, from_directory, new_ids_in
from service.config import Settings
from service.errors import BadRequest


def connect(settings: Settings) -> OpenSearch:
    """The engine the service would use: OPENSEARCH_URL, else the local node (started when needed)."""
    from service.engine.local_node import LocalNode
    from service.storage.client import make_client

    url = settings.opensearch_url or LocalNode(settings.local_node_name).start()
    return make_client(url, settings)


def load_embedder(settings: Settings):
    from service.embedding import Embedder

    return Embedder.from_settings(settings)


def ready(settings: Settings, client: OpenSearch | None, embedder) -> tuple[OpenSearch, Any]:
    """A client and an embedder, and both indices current for that model (migrated when needed)."""
    from service.storage.bootstrap import ensure_indices

    client = client or connect(settings)
    embedder = embedder or load_embedder(settings)
    ensure_indices(client, settings, embedder.dimension, embedder=embedder)
    return client, embedder


class FailureLog:
    """Failures as JSONL (line, id, stage, reason, record), opened on the first one."""

    def __init__(self, path: Path, *, append: bool = False):
        self.path, self.append, self.fh, self.count = path, append, None, 0

    def __call__(self, failure: Failure) -> None:
        if self.fh is None:
            self.fh = open(self.path, "a" if self.append else "w", encoding="utf-8")
        self.fh.write(orjson.dumps(asdict(failure), default=str).decode() + "\n")
        self.count += 1

    def close(self) -> Path | None:
        if self.fh is not None:
            self.fh.close()
        earlier = self.append and self.path.is_file() and self.path.stat().st_size > 0  # a resumed run's first part
        return self.path if self.count or earlier else None


def _bar(total: int | None, initial: int, desc: str, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, unit="rec", desc=desc, disable=not enabled, file=sys.stderr, smoothing=0.1, dynamic_ncols=True)


@contextmanager
def _maybe_paused(client: OpenSearch, settings: Settings, pause: bool) -> Iterator[None]:
    if not pause:
        yield
        return
    with relaxed_refresh(client, [settings.memories_alias, settings.edges_alias]):
        yield


def import_file(
    settings: Settings, source: Path | str, *, embedder=None, client: OpenSearch | None = None, bank: str | None = None,
    fmt: str = "auto", failed_path: Path | None = None, batch_size: int = BATCH_SIZE, workers: int = WORKERS,
    resume: bool = False, state_path: Path | None = None, pause_refresh: bool = False, progress: bool = True,
) -> tuple[ImportReport, Path | None]:
    """Import a JSONL file ('-' for stdin, gzip or not) or a backup archive; the report and the
    failures file (None when nothing failed)."""
    stdin = str(source) == "-"
    path = Path(source)
    if not stdin and not path.exists():
        raise BadRequest(f"no such file: {source}")
    if fmt == "auto":
        fmt = "automem-backup" if not stdin and (path.is_dir() or sources.is_tar_archive(path)) else "jsonl"
    client, embedder = ready(settings, client, embedder)
    if fmt == "automem-backup":
        failed_path = failed_path or restore_failures_path(path)
        report, _ = restore_archive(settings, client, embedder, path, bank=bank, failed_path=failed_path, progress=progress,
                                    batch_size=batch_size, workers=workers)
        return report, (failed_path if report.failed or report.edges_failed else None)
    failed_path = failed_path or (Path("import.failed.jsonl") if stdin else Path(f"{source}.failed.jsonl"))
    if fmt != "jsonl":
        raise BadRequest(f"unknown format {fmt!r}; expected jsonl or automem-backup")
    state_path = state_path or (None if stdin else Path(f"{source}.import-state.json"))
    state = _resume_state(path, state_path, resume) if state_path else None
    log = FailureLog(failed_path, append=resume)
    total = None if stdin else sources.count_records(path)
    skip = state.line if state else 0
    bar = _bar(total, 0, "import", progress)

    def confirmed(line: int, deferred) -> None:
        if state and state_path:
            state.line, state.deferred = line, []
            state.set_deferred(deferred)
            state.save(state_path)

    importer = Importer(settings, client, embedder, bank=bank, batch_size=batch_size, workers=workers, on_failure=log,
                        on_progress=bar.update, on_confirmed=confirmed)
    if state:
        importer.deferred = state.deferred_edges()
    try:
        with _maybe_paused(client, settings, pause_refresh), sources.open_records(source) as stream:
            def records():
                for line, raw in sources.read_lines(stream):
                    if line <= skip:
                        importer.report.skipped += 1
                        bar.update(1)
                        continue
                    yield line, raw
            report = importer.run(records())
        if state_path:
            state_path.unlink(missing_ok=True)  # done: nothing left to resume
    finally:
        bar.close()
        failed = log.close()
    return report, failed


def _resume_state(path: Path, state_path: Path, resume: bool) -> sources.ResumeState:
    head = sources.fingerprint(path)
    if resume:
        state = sources.ResumeState.load(state_path)
        if state is None:
            raise BadRequest(f"--resume: no resume state at {state_path} (nothing was interrupted)")
        if state.head != head:
            raise BadRequest(f"--resume: {path} changed since the interrupted import; run it again without --resume")
        return state
    return sources.ResumeState(str(path), head)


def restore_failures_path(archive: Path, now: datetime | None = None) -> Path:
    """`<archive>.failed-<UTC time>.jsonl` beside the archive: each restore its own file, the last never overwritten."""
    ts = (now or datetime.now(timezone.utc)).strftime("%Y%m%d_%H%M%S")
    base = archive.with_name(f"{archive.name.rstrip('/')}.failed-{ts}")
    path, n = base.with_name(base.name + ".jsonl"), 1
    while path.exists():
        path, n = base.with_name(f"{base.name}-{n}.jsonl"), n + 1
    return path


def restore_archive(
    settings: Settings, client: OpenSearch, embedder, path: Path, *, bank: str | None = None, failed_path: Path | None = None,
    progress: bool = False, batch_size: int = BATCH_SIZE, workers: int = WORKERS, on_failure: Callable[[Failure], None] | None = None,
    new_ids: bool = False, budget: Budget | None = None,
) -> tuple[ImportReport, dict[str, Any]]:
    """Restore a backup archive (.tar.gz, or an AutoMem backup folder) into `bank`; idempotent. With
    `new_ids` every memory gets a new id of its own in `bank` (its edges and references follow)."""
    bank = bank or settings.default_bank
    budget = budget or Budget()
    scratch = Path(tempfile.mkdtemp(prefix="engram-restore-"))
    log = FailureLog(failed_path) if failed_path else None
    try:
        members = from_directory(path) if path.is_dir() else extract(path, scratch, budget)
        reader = ArchiveReader(members, scratch, fields=memory_fields(), dimension=embedder.dimension, budget=budget,
                               new_id=new_ids_in(bank) if new_ids else None)
        bar = _bar(reader.total, 0, "restore", progress)
        sinks = [f for f in (log, on_failure) if f is not None]
        try:
            importer = Importer(settings, client, embedder, bank=bank, batch_size=batch_size, workers=workers,
                                on_failure=lambda failure: [sink(failure) for sink in sinks], on_progress=bar.update)
            report = importer.run(reader.records())
        finally:
            bar.close()
            reader.close()
        return report, reader.report.as_dict()
    finally:
        if log:
            log.close()
        shutil.rmtree(scratch, ignore_errors=True)


def restore_summary(report: ImportReport, about: dict[str, Any], bank: str) -> dict[str, Any]:
    """What a restore did, counted by what was stored (the route's answer and `engram restore`'s)."""
    reused = report.given_vectors + report.reused_vectors
    return {
        "status": "partial_success" if report.failed or report.edges_failed else "success", "bank": bank,
        "memories": {"restored": report.stored, "failed": report.failed, "vectors_reused": reused, "reembedded": report.stored - reused,
                     "duplicates": about["duplicates"]["memories"], "vectors_unusable": about["vectors_unusable"]},
        "edges": {"restored": report.edges_stored, "failed": report.edges_failed, "duplicates": about["duplicates"]["relationships"]},
        "archive": about,
    }


def backup_to(
    settings: Settings, client: OpenSearch, folder: Path, *, bank: str, include: tuple[str, ...], model: str, vector_size: int,
    progress: bool = False,
) -> BackupResult:
    from service.storage import transfer

    total = transfer.count(client, settings.memories_alias, {"term": {"bank": bank}}) if progress else None
    bar = _bar(total, 0, "backup", progress)
    try:
        return write_backup(client, memories_alias=settings.memories_alias, edges_alias=settings.edges_alias, bank=bank,
                            folder=folder, include=include, model=model, vector_size=vector_size, progress=bar.update)
    finally:
        bar.close()


def copy_stream(chunks: Iterator[bytes], out: IO[bytes]) -> int:
    written = 0
    for chunk in chunks:
        out.write(chunk)
        written += len(chunk)
    return written
