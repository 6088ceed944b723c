"""`engram import | export | backup | restore | reembed | reenrich`: moving memories in and out of a
store, and deriving what is stored with them again.

Each works directly against the engine (OPENSEARCH_URL / --url, else the local node) with the
service's settings; backup, restore and reembed can instead call a running service (--api).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from service.admin import archive
from service.admin.importing import BATCH_SIZE, WORKERS
from service.cli.common import (AdminTokenOpt, ApiOpt, BankOpt, JsonOpt, NoProgressOpt, PrefixOpt, ServiceClient, TokenOpt, UrlOpt,
                                counted, emit, reported, settings_from, skipped_text)

FORMATS = ("auto", "jsonl", "automem-backup")


def register(app: typer.Typer) -> None:
    app.command("import")(import_command)
    app.command("export")(export_command)
    app.command("backup")(backup_command)
    app.command("restore")(restore_command)
    app.command("reembed")(reembed_command)
    app.command("reenrich")(reenrich_command)


@reported
def import_command(
    file: Annotated[str, typer.Argument(help="JSONL / NDJSON file (gzip or not), '-' for stdin, or a backup archive / AutoMem backup folder")],
    fmt: Annotated[str, typer.Option("--format", help="jsonl, automem-backup, or auto (by the file's content)")] = "auto",
    bank: BankOpt = None, url: UrlOpt = None, prefix: PrefixOpt = None,
    resume: Annotated[bool, typer.Option("--resume", help="continue an interrupted import after its last confirmed line")] = False,
    state: Annotated[Path | None, typer.Option("--state", help="resume state file (default: FILE.import-state.json)", show_default=False)] = None,
    failed: Annotated[Path | None, typer.Option("--failed", help="where failed records go (default: FILE.failed.jsonl; for an archive "
                                                                 "FILE.failed-<UTC time>.jsonl)", show_default=False)] = None,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1, max=BATCH_SIZE, help="records per bulk request")] = BATCH_SIZE,
    workers: Annotated[int, typer.Option("--workers", min=1, max=16, help="bulk requests in flight")] = WORKERS,
    pause_refresh: Annotated[bool, typer.Option("--pause-refresh", help="no index refresh during the load (faster offline; live writes then wait for it)")] = False,
    keep_refresh: Annotated[bool, typer.Option("--keep-refresh", hidden=True)] = False,  # the old default, kept as a no-op
    no_progress: NoProgressOpt = False, as_json: JsonOpt = False,
) -> None:
    """Import memories (one per line, the POST /memory body with id and timestamps; edge lines as
    POST /associate bodies) or an Engram / AutoMem backup archive. Idempotent by id; failures go to a
    file with their line number and reason; the exit status is 1 when anything failed."""
    from service.admin.jobs import import_file

    if fmt not in FORMATS:
        raise typer.BadParameter(f"expected one of {', '.join(FORMATS)}", param_hint="--format")
    settings = settings_from(url, prefix, bank)
    report, failed_file = import_file(
        settings, file, bank=bank, fmt=fmt, failed_path=failed, batch_size=batch_size, workers=workers, resume=resume,
        state_path=state, pause_refresh=pause_refresh, progress=not no_progress,
    )
    summary = {**report.as_dict(), "batch_size": batch_size, "workers": workers, "failed_file": str(failed_file) if failed_file else None}
    text = (
        f"{report.stored:,} of {report.read:,} records stored as memories into {settings.memories_alias} (bank {settings.default_bank}) "
        f"in {report.seconds:.1f} s ({report.memories_per_s:,.0f}/s; {report.embedded:,} embedded, {report.reused_vectors:,} kept their vector"
        f"{f', {report.skipped:,} skipped by --resume' if report.skipped else ''}); {counted(report.edges_stored, 'edge')} stored"
    )
    emit(summary, as_json, text)
    if report.failed or report.edges_failed:
        stages = ", ".join(f"{k}: {v}" for k, v in sorted(report.failures_by_stage.items()))
        print(f"FAILED: {counted(report.failed, 'record')} and {counted(report.edges_failed, 'edge')} ({stages}); details in {failed_file}", file=sys.stderr)
        raise typer.Exit(1)


@reported
def export_command(
    bank: BankOpt = None, url: UrlOpt = None, prefix: PrefixOpt = None,
    tags: Annotated[list[str] | None, typer.Option("--tags", help="only memories with one of these tags (prefix match; repeat or comma-separate)")] = None,
    vectors: Annotated[bool, typer.Option("--vectors", help="include each memory's vector (`embedding`)")] = False,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="write to this file instead of stdout", show_default=False)] = None,
    no_progress: NoProgressOpt = False,
) -> None:
    """Export a bank as JSONL to stdout: memories oldest first (POST /memory bodies with id and
    timestamps), then the edges between them. The same store always gives the same bytes."""
    from tqdm import tqdm

    from service.admin.export import ExportCounts, export_lines
    from service.admin.jobs import connect
    from service.memory.tags import split_list_param

    settings = settings_from(url, prefix, bank)
    client = connect(settings)
    counts = ExportCounts()
    out = open(output, "wb") if output else sys.stdout.buffer
    bar = tqdm(unit="line", desc="export", file=sys.stderr, disable=no_progress or (output is None and sys.stdout.isatty()))
    try:
        for line in export_lines(client, memories_alias=settings.memories_alias, edges_alias=settings.edges_alias, bank=settings.default_bank,
                                 tags=split_list_param(tags), vectors=vectors, counts=counts):
            out.write(line)
            bar.update(1)
    finally:
        bar.close()
        out.flush()
        if output:
            out.close()
    print(f"exported {counted(counts.memories, 'memory', 'memories')} and {counted(counts.edges, 'edge')} of bank {settings.default_bank}", file=sys.stderr)


@reported
def backup_command(
    output: Annotated[str | None, typer.Option("--output", "-o", help="archive path, a folder, or '-' for stdout (default: ./automem-backup-<timestamp>.tar.gz)", show_default=False)] = None,
    include: Annotated[str | None, typer.Option("--include", help="falkordb, qdrant or both (default)", show_default=False)] = None,
    bank: BankOpt = None, url: UrlOpt = None, prefix: PrefixOpt = None, api: ApiOpt = None, token: TokenOpt = None, admin_token: AdminTokenOpt = None,
    no_progress: NoProgressOpt = False,
) -> None:
    """Write a backup archive in AutoMem's layout (restore it with `engram restore` or AutoMem's
    scripts/restore_from_backup.py). For large stores on a cluster, `engram snapshot` is faster."""
    includes = archive.parse_include(include)
    if api:
        client = ServiceClient(api, token, admin_token)
        params = {"include": ",".join(includes), **({"bank": bank} if bank else {})}
        with client.http.stream("GET", "/backup", params=params) as resp:
            if resp.status_code >= 400:
                resp.read()
                client.check(resp)
            name = resp.headers.get("content-disposition", "").split("filename=")[-1].strip('"') or "automem-backup.tar.gz"
            target = _target(output, name)
            with (sys.stdout.buffer if target is None else open(target, "wb")) as out:
                for chunk in resp.iter_bytes(1 << 20):
                    out.write(chunk)
    else:
        from service.admin.backup import tar_gz
        from service.admin.jobs import backup_to, ready

        settings = settings_from(url, prefix, bank)
        engine, embedder = ready(settings, None, None)
        folder = Path(tempfile.mkdtemp(prefix="engram-backup-"))
        try:
            result = backup_to(settings, engine, folder, bank=settings.default_bank, include=includes, model=embedder.short_name,
                               vector_size=embedder.dimension, progress=not no_progress)
            target = _target(output, archive.archive_name(result.timestamp))
            out = sys.stdout.buffer if target is None else open(target, "wb")
            try:
                for chunk in tar_gz(result.members):
                    out.write(chunk)
            finally:
                out.flush()
                if target is not None:
                    out.close()
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        print(f"backed up {counted(result.counts['memories'], 'memory', 'memories')} and {counted(result.counts['relationships'], 'edge')} "
              f"in {result.seconds:.1f} s", file=sys.stderr)
    if target is not None:
        print(target)


def _target(output: str | None, name: str) -> Path | None:
    if output == "-":
        return None
    if output is None:
        return Path(name)
    path = Path(output)
    return path / name if path.is_dir() else path


@reported
def restore_command(
    file: Annotated[Path, typer.Argument(help="a backup .tar.gz (Engram's or AutoMem's) or an AutoMem backup folder", exists=True)],
    bank: BankOpt = None, url: UrlOpt = None, prefix: PrefixOpt = None, api: ApiOpt = None, token: TokenOpt = None, admin_token: AdminTokenOpt = None,
    new_ids: Annotated[bool, typer.Option("--new-ids", help="give every memory a new id of its own in the bank (edges follow): "
                                                            "to restore into another bank of the same store, or copy a bank")] = False,
    failed: Annotated[Path | None, typer.Option("--failed", help="where failed records go (default: FILE.failed-<UTC time>.jsonl)", show_default=False)] = None,
    no_progress: NoProgressOpt = False, as_json: JsonOpt = False,
) -> None:
    """Restore a backup archive. Idempotent: ids are kept (or derived anew with --new-ids) and records
    upserted; vectors are reused when their size is the model's, else the memories are re-embedded.
    Nothing is deleted first. Failures go to FILE.failed-<UTC time>.jsonl (never overwriting an earlier one)."""
    from service.admin.jobs import restore_failures_path

    failed = failed or restore_failures_path(file)
    if api:
        if file.is_dir():
            raise typer.BadParameter("--api uploads an archive file, not a folder", param_hint="FILE")
        client = ServiceClient(api, token, admin_token)
        params = {**({"bank": bank} if bank else {}), **({"new_ids": "true"} if new_ids else {})}
        with open(file, "rb") as fh:  # streamed: httpx reads the file in chunks
            resp = client.http.post("/admin/restore", content=fh, params=params or None, headers={"Content-Type": "application/gzip"})
        client.check(resp)
        body = resp.json()
        if body.get("failures"):  # the service answers with the first ones
            import orjson

            failed.write_bytes(b"".join(orjson.dumps(f) + b"\n" for f in body["failures"]))
    else:
        from service.admin.jobs import ready, restore_archive, restore_summary

        settings = settings_from(url, prefix, bank)
        engine, embedder = ready(settings, None, None)
        report, about = restore_archive(settings, engine, embedder, file, bank=settings.default_bank, failed_path=failed,
                                        progress=not no_progress, new_ids=new_ids)
        body = {**restore_summary(report, about, settings.default_bank), "seconds": round(report.seconds, 1)}
    m, e = body["memories"], body["edges"]
    emit(body, as_json, f"restored {counted(m['restored'], 'memory', 'memories')} ({m['failed']:,} failed, {m['vectors_reused']:,} kept their vector) "
                        f"and {counted(e['restored'], 'edge')} into bank {body['bank']}; {skipped_text(body['archive']['skipped'])}")
    if body["status"] != "success":
        if failed.exists():
            print(f"FAILED: {m['failed']:,} memories and {e['failed']:,} edges; details in {failed}", file=sys.stderr)
        raise typer.Exit(1)


@reported
def reembed_command(
    batch_size: Annotated[int, typer.Option("--batch-size", min=1, max=100, help="texts per embedding call and bulk request")] = 32,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="at most this many memories, newest first", show_default=False)] = None,
    force: Annotated[bool, typer.Option("--force", help="re-embed every memory, not only those another model (or none) embedded or that have no vector")] = False,
    bank: BankOpt = None, url: UrlOpt = None, prefix: PrefixOpt = None, api: ApiOpt = None, token: TokenOpt = None, admin_token: AdminTokenOpt = None,
    no_progress: NoProgressOpt = False, as_json: JsonOpt = False,
) -> None:
    """Give memories vectors of the configured model (EMBEDDING_MODEL). A model with another vector
    size first moves the store into a new index version, every memory re-embedded."""
    if api:
        client = ServiceClient(api, token, admin_token)
        payload = {"batch_size": batch_size, "limit": limit, "force": force, **({"bank": bank} if bank else {})}
        resp = client.http.post("/admin/reembed", json=payload)
        client.check(resp)
        body = resp.json()
    else:
        from tqdm import tqdm

        from service.admin.jobs import ready
        from service.admin.reembed import reembed, stale_query
        from service.storage.memories import MemoryStore

        settings = settings_from(url, prefix, bank)
        engine, embedder = ready(settings, None, None)
        store = MemoryStore(engine, settings.memories_alias)
        todo = store.count(stale_query(settings.default_bank, embedder.short_name, force=force))
        with tqdm(total=min(todo, limit or todo), unit="mem", desc="reembed", file=sys.stderr, disable=no_progress) as bar:
            body = reembed(store, settings.default_bank, embedder, batch_size=batch_size, limit=limit, force=force, progress=bar.update).as_dict()
    emit(body, as_json, f"re-embedded {counted(body['processed'], 'memory', 'memories')} with {body['model']} ({body['failed']:,} failed)")
    if body["failed"]:
        raise typer.Exit(1)


@reported
def reenrich_command(
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="at most this many memories, in id order", show_default=False)] = None,
    wait: Annotated[bool, typer.Option("--wait", help="then wait, with a progress bar, until the service's worker has enriched them "
                                       "(exit 1 if none is enriched for 2 minutes: no worker running)")] = False,
    bank: BankOpt = None, url: UrlOpt = None, prefix: PrefixOpt = None, no_progress: NoProgressOpt = False, as_json: JsonOpt = False,
) -> None:
    """Enrich a bank's memories again, e.g. after an upgrade that reads entities better: each is
    marked as POST /enrichment/reprocess marks its ids, and the service's enrichment worker redoes
    its entities, tags and edges (an idle worker finds them within seconds).
    GET /enrichment/status counts them down, and so does --wait."""
    from tqdm import tqdm

    from service.admin.jobs import connect
    from service.admin.reenrich import reenrich, stored_states, wait_enriched
    from service.storage.memories import MemoryStore

    settings = settings_from(url, prefix, bank)
    store = MemoryStore(connect(settings), settings.memories_alias)
    todo = store.count({"term": {"bank": settings.default_bank}})
    with tqdm(total=min(todo, limit or todo), unit="mem", desc="reenrich", file=sys.stderr, disable=no_progress) as bar:
        body = reenrich(store, settings.default_bank, limit=limit, progress=bar.update).as_dict()
    done = "the service's worker enriches them (GET /enrichment/status)"
    if wait:
        store.refresh_now()
        with tqdm(total=body["marked"], unit="mem", desc="enriched", file=sys.stderr, disable=no_progress) as bar:
            body["remaining"] = wait_enriched(store, settings.default_bank, progress=bar.update)
        body["stored"] = stored_states(store, settings.default_bank)
        done = f"{counted(body['remaining'], 'memory', 'memories')} still to enrich" if body["remaining"] else "all enriched"
        done += f" (the bank's memories: {body['stored']['done']:,} done, {body['stored']['failed']:,} failed)"
    emit(body, as_json, f"marked {counted(body['marked'], 'memory', 'memories')} of bank {body['bank']} for enrichment "
                        f"({body['failed']:,} failed); {done}")
    if body["failed"] or body.get("remaining"):
        raise typer.Exit(1)
