"""What the engram command prints: counts in words, a restore's skipped records without Python dicts."""

from service.cli.common import counted, skipped_text


def test_counts_agree_with_their_number():
    assert [counted(n, "edge") for n in (0, 1, 2, 1024)] == ["0 edges", "1 edge", "2 edges", "1,024 edges"]
    assert counted(1, "memory", "memories") == "1 memory" and counted(3, "memory", "memories") == "3 memories"


def test_skipped_records_read_as_words():
    assert skipped_text({"nodes": {}, "relationships": {}}) == "nothing skipped"
    assert skipped_text({"nodes": {"Entity": 2}, "relationships": {"MENTIONS": 1}}) == \
        "skipped 2 nodes labelled Entity, 1 relationship of type MENTIONS"
    assert "{" not in skipped_text({"nodes": {"(no label)": 1}})
