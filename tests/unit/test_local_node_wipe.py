"""`LocalNode.wipe` leaves nothing of the node behind: its folder, its launch lock and its lease files (the suite's
nodes are named per run, `faults-<pid>` and the like, and left one lock file each in the cache)."""

from __future__ import annotations

from service.engine.local_node import LocalNode, file_lock
from service.engine.node_lease import NodeLease


def test_wipe_removes_the_folder_the_lock_and_the_lease_files(tmp_path, monkeypatch):
    monkeypatch.setenv("ENGRAM_HOME", str(tmp_path))
    node = LocalNode("wiped-1")
    other = LocalNode("kept")
    for n in (node, other):
        with file_lock(n.folder.with_name(f"{n.name}.lock")):
            (n.folder / "data").mkdir(parents=True)
        NodeLease(n)  # found it stopped: marks it, and is never released (a killed session)
    node.wipe()
    assert sorted(p.name for p in (tmp_path / "nodes").iterdir()) == ["kept", "kept.lock", "kept.started-by-users", "kept.users"]
    node.wipe()  # a second wipe finds nothing to remove
