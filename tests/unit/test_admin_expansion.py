"""service/admin/expansion.py: an archive's members read within bounds (total, per member, ratio,
record), refused naming the limit; lone surrogate escapes found and kept exactly."""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import tarfile

import pytest

from service.admin.expansion import Budget, ExpansionError, GuardedMember, JsonMember, Limits
from service.admin.restore import extract

# record: checked per read of the parser (64 KiB), so it is at least that.
SMALL = Limits(total=3_000_000, member=2_000_000, ratio=20, ratio_floor=100_000, record=200_000)


def member(tmp_path, name: str, data: bytes):
    path = tmp_path / name
    path.write_bytes(gzip.compress(data))
    return path


def nodes(*contents: str) -> bytes:
    return json.dumps({"nodes": [{"id": i, "properties": {"content": c}} for i, c in enumerate(contents)]}).encode()


def read_all(path, budget):
    return list(JsonMember(path, budget).items("nodes.item"))


def random_text(n: int) -> str:
    return os.urandom(n // 2).hex()  # incompressible: only the size limits apply


def test_within_bounds(tmp_path):
    path = member(tmp_path, "ok.json.gz", nodes("a", "b" * 1000))
    assert [n["properties"]["content"][:1] for n in read_all(path, Budget(SMALL))] == ["a", "b"]


@pytest.mark.parametrize("data, message", [
    (nodes(*[random_text(40_000) for _ in range(60)]), "expands to more than 2,000,000 bytes (member limit)"),
    (nodes("a" * 40_000) + b" " * 200_000, "expands to more than 20 times its compressed size"),
    (nodes(random_text(300_000)), "holds a record larger than 200,000 bytes (record limit)"),
])
def test_limits(tmp_path, data, message):
    with pytest.raises(ExpansionError, match=re.escape(message)):
        read_all(member(tmp_path, "m.json.gz", data), Budget(SMALL))


def test_total_counts_every_member(tmp_path):
    budget = Budget(SMALL)
    data = nodes(*[random_text(40_000) for _ in range(40)])  # 1.6 MB each: two pass the member limit, not the total
    read_all(member(tmp_path, "a.json.gz", data), budget)
    read_all(member(tmp_path, "a.json.gz", data), budget)  # the same member read again counts once
    with pytest.raises(ExpansionError, match="more than 3,000,000 bytes \\(total limit\\)"):
        read_all(member(tmp_path, "b.json.gz", data), budget)


def tar(entries: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, data in entries.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@pytest.mark.parametrize("entries, message", [
    ({"big": b"\0" * 2_100_000}, "over the 2,000,000-byte member limit"),
    ({"zeros": b"\0" * 500_000}, "more than 20 times its"),
    ({"a": os.urandom(1_600_000), "b": os.urandom(1_600_000)}, "total limit"),
])
def test_tar_members_are_checked_before_they_are_written(tmp_path, entries, message):
    path = tmp_path / "a.tar.gz"
    path.write_bytes(tar(entries))
    (tmp_path / "out").mkdir()
    with pytest.raises(ExpansionError, match=re.escape(message)):
        extract(path, tmp_path / "out", Budget(SMALL))


def test_lone_surrogates_switch_the_member_to_the_exact_parser(tmp_path):
    paired = member(tmp_path, "paired.json.gz", json.dumps({"nodes": [{"c": "🙂"}]}).encode())  # ensure_ascii: an escaped pair
    reader = JsonMember(paired, Budget())
    assert reader.count("nodes.item") == {"nodes.item": 1} and not reader.exact
    for bad in ("\udc00", "\ud800", "x\ud800\ud800y"):
        path = member(tmp_path, "bad.json.gz", json.dumps({"nodes": [{"c": bad}, {"c": "ok"}]}).encode())
        reader = JsonMember(path, Budget())
        assert reader.count("nodes.item") == {"nodes.item": 2} and reader.exact
        assert [n["c"] for n in reader.items("nodes.item")] == [bad, "ok"]


@pytest.mark.parametrize("text, lone", [(b'"\\ud83d\\ude00"', False), (b'"\\ud800"', True), (b'"a\\udc00"', True), (b'"plain"', False),
                                        (b'"\\uD83D\\uDE00\\uDC00"', True)])
def test_the_scanner_across_read_boundaries(tmp_path, text, lone):
    for pad in range(12):
        path = member(tmp_path, "s.json.gz", b" " * pad + text)
        for size in (1, 5, 64):
            stream = GuardedMember(path, Budget())
            while stream.read(size):
                pass
            assert stream.lone_surrogates is lone, (pad, size)
            stream.close()


def test_an_items_pass_reads_past_the_other_arrays(tmp_path):
    # The 100k backup: its relationships add up to more than a record, after the nodes an items pass
    # of the nodes has finished yielding; the count pass has checked every record already.
    data = json.dumps({"nodes": [{"id": i} for i in range(3)], "relationships": [{"n": random_text(1_000)} for _ in range(400)]}).encode()
    reader = JsonMember(member(tmp_path, "g.json.gz", data), Budget(SMALL))
    assert reader.count("nodes.item", "relationships.item") == {"nodes.item": 3, "relationships.item": 400}
    assert [n["id"] for n in reader.items("nodes.item")] == [0, 1, 2]
    with pytest.raises(ExpansionError, match="record limit"):  # without a count, the bytes between yielded items count
        list(JsonMember(member(tmp_path, "g.json.gz", data), Budget(SMALL)).items("nodes.item"))
