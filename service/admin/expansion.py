"""Reading a backup's gzip JSON members within bounds: what they may expand to, and exact strings.

An archive is refused, in seconds, with a 400 that names the limit, when it expands beyond
- `total`: everything it holds, on disk and decompressed, together;
- `member`: one member, decompressed;
- `ratio`: a member (or the whole .tar.gz) expanding more than this many times its compressed
  size, once past `ratio_floor` (a legitimate member is gzip JSON of mostly unique text and vectors:
  ~2-20x; a decompression bomb is ~1,000x per gzip layer);
- `record`: one node, point or relationship (a 400 MB string is not a memory).
(A 1,087-byte archive holding one 400 MB string used to grow the service by 750 MB and run for 26
minutes; it now stops at the ratio after `ratio_floor` bytes.)

Strings: the fast parser (ijson's yajl2_c) turns a lone high surrogate escape (`"\\ud800"`) into "?"
and fails on a lone low one. A scanner looks for lone surrogate escapes in the bytes as they pass;
a member that has one is parsed again with ijson's exact Python backend, which keeps them, so the
memory holding one is reported as a failure naming its field instead. (The scanner may flag a
paired or escaped-backslash look-alike: that only costs the slower parse.)
"""

from __future__ import annotations

import gzip
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ijson

from service.errors import BadRequest

GiB, MiB = 1024**3, 1024**2
CHUNK = 1 << 16
FAST = ijson.get_backend("yajl2_c")
EXACT = ijson.get_backend("python")
_HIGH, _LOW = rb"\\u[dD][89abAB][0-9a-fA-F]{2}", rb"\\u[dD][c-fC-F][0-9a-fA-F]{2}"
LONE_SURROGATE = re.compile(_HIGH + rb"(?!" + _LOW + rb")|(?<!" + _HIGH + rb")" + _LOW + rb"|\xed[\xa0-\xbf]")
CARRY = 12  # a high surrogate escape and the low one that may follow it


class ArchiveError(BadRequest):
    pass


class ExpansionError(ArchiveError):
    pass


@dataclass(frozen=True)
class Limits:
    """Defaults sized for the documented stores (a 100k-memory backup is ~133 MB and expands ~3x)."""

    total: int = 64 * GiB
    member: int = 32 * GiB
    ratio: int = 100
    ratio_floor: int = 16 * MiB
    record: int = 64 * MiB  # checked per read of the parser: within a read's size (64 KiB)


@dataclass
class Budget:
    """What an archive has expanded to so far: tar members on disk, and each JSON member's largest pass."""

    limits: Limits = field(default_factory=Limits)
    on_disk: int = 0
    decompressed: dict[str, int] = field(default_factory=dict)

    def total(self) -> int:
        return self.on_disk + sum(self.decompressed.values())

    def _check_total(self) -> None:
        if self.total() > self.limits.total:
            raise ExpansionError(f"the archive expands to more than {self.limits.total:,} bytes (total limit); refused")

    def extracted(self, name: str, size: int, archive_bytes: int) -> None:
        """A tar member of `size` bytes is about to be written (its size is in its header)."""
        if size > self.limits.member:
            raise ExpansionError(f"{name} is {size:,} bytes, over the {self.limits.member:,}-byte member limit; refused")
        self.on_disk += size
        if self.on_disk > max(self.limits.ratio_floor, self.limits.ratio * archive_bytes):
            raise ExpansionError(f"the archive's members add up to more than {self.limits.ratio} times its {archive_bytes:,} bytes "
                                 "(ratio limit: a decompression bomb?); refused")
        self._check_total()

    def decompressing(self, name: str, out: int, compressed: int) -> None:
        if out > self.limits.member:
            raise ExpansionError(f"{name} expands to more than {self.limits.member:,} bytes (member limit); refused")
        if out > self.limits.ratio_floor and out > self.limits.ratio * max(compressed, 1):
            raise ExpansionError(f"{name} expands to more than {self.limits.ratio} times its compressed size "
                                 f"({out:,} bytes from {compressed:,}; ratio limit: a decompression bomb?); refused")
        if out > self.decompressed.get(name, 0):
            self.decompressed[name] = out
            self._check_total()


class _Counted(io.RawIOBase):
    """The compressed file, counting what gzip has read of it."""

    def __init__(self, path: Path):
        self.fh = open(path, "rb")
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = self.fh.readinto(buffer)
        self.count += n or 0
        return n or 0

    def close(self) -> None:
        self.fh.close()
        super().close()


class GuardedMember:
    """A gzip member's decompressed bytes as a file for ijson, every read checked against the budget
    and scanned for lone surrogate escapes."""

    def __init__(self, path: Path, budget: Budget, *, records: bool = True):
        self.name = path.name
        self.budget = budget
        self.records = records  # check the record limit (bytes between two record_done calls)
        self.raw = _Counted(path)
        self.gz = gzip.GzipFile(fileobj=self.raw, mode="rb")
        self.out = 0
        self.since_record = 0
        self.lone_surrogates = False
        self._tail, self._from = b"", 0

    def read(self, size: int = -1) -> bytes:
        if size == 0:
            return b""  # ijson's probe for bytes or text
        data = self.gz.read(size if size > 0 else CHUNK)
        self.out += len(data)
        self.since_record += len(data)
        self.budget.decompressing(self.name, self.out, self.raw.count)
        if self.records and self.since_record > self.budget.limits.record:
            raise ExpansionError(f"{self.name} holds a record larger than {self.budget.limits.record:,} bytes (record limit); refused")
        if not self.lone_surrogates:
            self._scan(data)
        return data

    def _scan(self, data: bytes) -> None:
        window = self._tail + data
        # A match in the last CARRY bytes may need the next read to be told apart (a pair split by it).
        decided = len(window) if not data else max(len(window) - CARRY, self._from)
        found = LONE_SURROGATE.search(window, self._from)
        self.lone_surrogates = found is not None and found.start() < decided
        keep = max(decided - 6, 0)  # 6 bytes before the undecided part: a low surrogate's look-behind
        self._tail, self._from = window[keep:], decided - keep

    def record_done(self) -> None:
        self.since_record = 0

    def close(self) -> None:
        self.gz.close()
        self.raw.close()


_READ_ERRORS = (ijson.JSONError, OSError, EOFError, gzip.BadGzipFile)


class NeedsExact(Exception):
    """The fast parser met a lone surrogate escape: read the member again with the exact one."""


class JsonMember:
    """One gzip JSON member of an archive, read in passes within the archive's budget. `exact` is set
    once a pass finds a lone surrogate escape; every later pass then keeps such strings as they are.

    The record limit is checked by `count`, which sees every item of the arrays it counts; an `items`
    pass of one array reads through the others without yielding, so after a count it checks only the
    budget (and without a count, it counts the bytes between the items it yields)."""

    def __init__(self, path: Path, budget: Budget):
        self.path = path
        self.budget = budget
        self.exact = False
        self.counted = False

    def _unreadable(self, exc: Exception) -> ArchiveError:
        return ArchiveError(f"{self.path.name} is not valid gzip JSON: {exc}")

    def _events(self, read, *, records: bool = True) -> Iterator[Any]:
        stream = GuardedMember(self.path, self.budget, records=records)
        try:
            yield from read(stream, EXACT if self.exact else FAST)
            if stream.lone_surrogates and not self.exact:
                self.exact = True
                raise NeedsExact()
        except UnicodeDecodeError:
            if self.exact:
                raise self._unreadable(ValueError("invalid UTF-8")) from None
            self.exact = True
            raise NeedsExact() from None
        except ExpansionError:
            raise
        except _READ_ERRORS as exc:
            raise self._unreadable(exc) from exc
        finally:
            stream.close()

    def items(self, prefix: str) -> Iterator[Any]:
        """The values at `prefix` (ijson's syntax: `nodes.item`). Raises NeedsExact at the end of a
        fast pass that met a lone surrogate (what it yielded may hold "?" for one): read again."""

        def read(stream: GuardedMember, backend) -> Iterator[Any]:
            for value in backend.items(stream, prefix, use_float=True):
                stream.record_done()
                yield value

        return self._events(read, records=not self.counted)

    def count(self, *prefixes: str) -> dict[str, int]:
        """How many values each prefix holds, in one pass (a second, exact one if the first needs it)."""

        def read(stream: GuardedMember, backend) -> Iterator[tuple[str, str]]:
            for p, event, _ in backend.parse(stream, use_float=True):
                if p in prefixes and event in ("start_map", "start_array", "string", "number", "null", "boolean"):
                    stream.record_done()
                    yield p, event

        for _attempt in range(2):
            counts = dict.fromkeys(prefixes, 0)
            try:
                for p, _ in self._events(read):
                    counts[p] += 1
                self.counted = True
                return counts
            except NeedsExact:
                continue
        raise AssertionError("unreachable: the exact pass never asks for another")

    def header(self, key: str) -> Any:
        """A top-level scalar (the timestamp) without reading the rest."""
        stream = GuardedMember(self.path, self.budget)
        try:
            for p, event, value in FAST.parse(stream):
                if p == key and event in ("string", "number"):
                    return value
                if p in ("nodes", "points", "relationships"):
                    return None
        except ExpansionError:
            raise
        except (*_READ_ERRORS, UnicodeDecodeError):
            return None
        finally:
            stream.close()
        return None
