"""Reading import files: JSONL / NDJSON, gzip or not, line by line with a size cap, and the resume state.

The resume state (`FILE.import-state.json`, removed when the import completes) records the last
line whose batch — and every batch before it — was acknowledged by the engine, the edges still
waiting for a memory that comes later, and a fingerprint of the file's head, so `--resume`
continues exactly there and refuses a file that changed.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from service.admin.records import EdgeRecord

GZIP_MAGIC = b"\x1f\x8b"
# A line longer than this is reported as a failure, not read into memory (a memory line with a
# 20,000-character content and a 1,024-float vector is ~45 KB).
MAX_LINE_BYTES = 8 * 1024 * 1024
HEAD_BYTES = 64 * 1024


class LineTooLong(ValueError):
    pass


def is_gzip(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(2) == GZIP_MAGIC


def is_tar_archive(path: Path) -> bool:
    """A backup archive (tar.gz) rather than gzipped JSONL: a tar header has 'ustar' at offset 257."""
    if not path.is_file() or not is_gzip(path):
        return False
    with gzip.open(path, "rb") as fh:
        try:
            head = fh.read(512)
        except (OSError, EOFError):
            return False
    return len(head) == 512 and head[257:262] == b"ustar"


def open_records(path: Path | str) -> IO[bytes]:
    """The file as a byte stream, decompressed when it is gzip ('-' is stdin)."""
    if str(path) == "-":
        return _maybe_gzip(io.BufferedReader(os.fdopen(os.dup(0), "rb")))
    path = Path(path)
    return gzip.open(path, "rb") if is_gzip(path) else open(path, "rb")


def _maybe_gzip(stream: io.BufferedReader) -> IO[bytes]:
    return gzip.GzipFile(fileobj=stream) if stream.peek(2)[:2] == GZIP_MAGIC else stream


def read_lines(stream: IO[bytes], *, max_bytes: int | None = None) -> Iterator[tuple[int, bytes | Exception]]:
    """(line number, raw line) for every non-blank line; a line over `max_bytes` yields an exception instead."""
    max_bytes = max_bytes or MAX_LINE_BYTES
    number = 0
    while True:
        raw = stream.readline(max_bytes + 1)
        if not raw:
            return
        number += 1
        if len(raw) > max_bytes and not raw.endswith(b"\n"):
            while True:  # skip the rest of the line without holding it
                rest = stream.readline(1 << 20)
                if not rest or rest.endswith(b"\n"):
                    break
            yield number, LineTooLong(f"line is longer than {max_bytes:,} bytes")
            continue
        if raw.strip():
            yield number, raw


def count_records(path: Path) -> int:
    """Non-blank lines: the progress bar's total (a gzip file is decompressed once for it)."""
    count = 0
    with open_records(path) as fh:
        for raw in iter(lambda: fh.readline(MAX_LINE_BYTES + 1), b""):
            if raw.strip():
                count += 1
    return count


def fingerprint(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read(HEAD_BYTES)).hexdigest()


@dataclass
class ResumeState:
    source: str
    head: str
    line: int = 0  # every line up to this one is done
    deferred: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def load(cls, path: Path) -> ResumeState | None:
        try:
            return cls(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            return None

    def save(self, path: Path) -> None:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(asdict(self)))
        os.replace(tmp, path)  # atomic: an interrupted save never leaves half a state

    def deferred_edges(self) -> list[tuple[int, EdgeRecord]]:
        return [(d["line"], EdgeRecord(**d["edge"])) for d in self.deferred]

    def set_deferred(self, edges: list[tuple[int, EdgeRecord]]) -> None:
        self.deferred = [{"line": line, "edge": asdict(e)} for line, e in edges]
