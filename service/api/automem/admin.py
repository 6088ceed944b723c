"""Admin routes (spec 003: Admin): GET /backup, POST /admin/restore, POST /admin/reembed.

All need the API token and the admin token (401 without the first, 403 without the second). Thin:
check the input, run the job in service/admin/, shape the answer.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Annotated

import anyio
from fastapi import APIRouter, Body, Query, Request
from fastapi.responses import StreamingResponse

from service.admin import archive
from service.admin.backup import tar_gz, write_backup
from service.admin.jobs import restore_archive
from service.admin.models import ReembedRequest, ReembedResponse, RestoreResponse
from service.admin.reembed import reembed
from service.api.deps import AdminAuth, ClientDep, EmbedderDep, SettingsDep, StoreDep
from service.api.scope import AdminBodyScope, AdminScope
from service.errors import BadRequest
from service.api.error_docs import ERROR_RESPONSES, ADMIN_RESPONSES

router = APIRouter(dependencies=[AdminAuth], responses={**ERROR_RESPONSES, **ADMIN_RESPONSES}, tags=["admin"])

# Uploads are written to disk as they arrive; this bounds the disk a single restore may take.
MAX_UPLOAD_BYTES = 16 * 1024**3
FAILURES_SHOWN = 20


@router.get("/backup", response_class=StreamingResponse, responses={200: {"content": {"application/gzip": {}}}})
def backup(
    scope: AdminScope, client: ClientDep, settings: SettingsDep, embedder: EmbedderDep,
    include: Annotated[str | None, Query(description="falkordb, qdrant or both (default), comma-separated")] = None,
) -> StreamingResponse:
    """A `automem-backup-<timestamp>.tar.gz` of the bank (`?bank=`, default DEFAULT_BANK) in AutoMem's layout, streamed; memory stays bounded by a page."""
    includes = archive.parse_include(include)
    bank = scope.bank
    folder = Path(tempfile.mkdtemp(prefix="engram-backup-"))
    try:
        result = write_backup(
            client, memories_alias=settings.memories_alias, edges_alias=settings.edges_alias, bank=bank,
            folder=folder, include=includes, model=embedder.short_name, vector_size=embedder.dimension,
        )
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise

    def stream():
        try:
            yield from tar_gz(result.members)
        finally:  # also when the client goes away mid-download
            shutil.rmtree(folder, ignore_errors=True)

    return StreamingResponse(
        stream(), media_type="application/gzip",
        headers={"Content-Disposition": f'attachment; filename="{archive.archive_name(result.timestamp)}"', "Cache-Control": "no-store"},
    )


async def _save_upload(request: Request, target: Path) -> int:
    """The archive, from a multipart `file` field or the raw body, written to `target` as it arrives."""
    written = 0
    ctype = request.headers.get("content-type", "")
    with open(target, "wb") as out:
        if ctype.startswith("multipart/form-data"):
            form = await request.form(max_files=1, max_fields=10)
            upload = form.get("file")
            if upload is None or isinstance(upload, str):
                raise BadRequest("send the archive as the multipart field `file` (curl -F file=@backup.tar.gz)")
            while chunk := await upload.read(1 << 20):
                written += len(chunk)
                if written > MAX_UPLOAD_BYTES:
                    raise BadRequest(f"the archive is larger than {MAX_UPLOAD_BYTES:,} bytes")
                out.write(chunk)
        else:
            async for chunk in request.stream():
                written += len(chunk)
                if written > MAX_UPLOAD_BYTES:
                    raise BadRequest(f"the archive is larger than {MAX_UPLOAD_BYTES:,} bytes")
                out.write(chunk)
    if not written:
        raise BadRequest("no archive: send a backup .tar.gz as the body (Content-Type: application/gzip) or as the multipart field `file`")
    return written


@router.post("/admin/restore", response_model=RestoreResponse, response_model_exclude_none=True)
async def restore(request: Request, scope: AdminScope, client: ClientDep, settings: SettingsDep, embedder: EmbedderDep) -> RestoreResponse:
    """Restore an Engram or AutoMem backup archive into the bank (`?bank=`, default DEFAULT_BANK). Idempotent: ids are kept, records are upserted."""
    bank = scope.bank
    folder = Path(tempfile.mkdtemp(prefix="engram-upload-"))
    started = time.monotonic()
    failures: list[dict] = []

    def keep(failure) -> None:
        if len(failures) < FAILURES_SHOWN:
            failures.append({"line": failure.line, "id": failure.id, "stage": failure.stage, "reason": failure.reason})

    try:
        path = folder / "upload.tar.gz"
        await _save_upload(request, path)
        report, about = await anyio.to_thread.run_sync(
            lambda: restore_archive(settings, client, embedder, path, bank=bank, on_failure=keep)
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return RestoreResponse(
        status="partial_success" if report.failed or report.edges_failed else "success", bank=bank,
        memories={"restored": report.stored, "failed": report.failed, "vectors_reused": about["vectors_reused"], "reembedded": report.embedded},
        edges={"restored": report.edges_stored, "failed": report.edges_failed},
        archive=about, failures=failures, seconds=round(time.monotonic() - started, 3),
    )


@router.post("/admin/reembed", response_model=ReembedResponse, response_model_exclude_none=True)
def reembed_memories(scope: AdminBodyScope, store: StoreDep, embedder: EmbedderDep, req: Annotated[ReembedRequest | None, Body()] = None) -> ReembedResponse:
    """Re-embed memories of the bank (the body's `bank`, or X-Bank / `?bank=`) whose vector another model (or none) made; all of them with `force`."""
    req = req or ReembedRequest()
    result = reembed(store, scope.bank, embedder, batch_size=req.batch_size, limit=req.limit, force=req.force)
    return ReembedResponse(**result.as_dict())
