"""Sharing a local node between processes that each stop it when done (test sessions on one machine).

A session that found the node stopped used to stop it at its end, under any other session still
running against it (a second `make test` while CI's starts the node). Now each user holds a shared
file lock while it uses the node, and the last one out stops the node when any of them found it
stopped: the node is then one they started, not one a person started for their own use.

    lease = NodeLease(node)      # takes the shared lock; notes whether the node was running
    ...                          # start the node (LocalNode.start is one launch whoever asks)
    lease.release()              # the last one out stops the node if some user found it stopped
"""

from __future__ import annotations

import fcntl
from pathlib import Path
from typing import Protocol


class Node(Protocol):
    name: str

    @property
    def folder(self) -> Path: ...

    def running(self) -> bool: ...

    def stop(self) -> bool: ...


class NodeLease:
    def __init__(self, node: Node) -> None:
        self.node = node
        users = node.folder.with_name(f"{node.name}.users")
        # Present while some current user found the node stopped: the last one out stops it.
        self._started_by_users = node.folder.with_name(f"{node.name}.started-by-users")
        users.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(users, "a")  # noqa: SIM115 (held until release)
        fcntl.flock(self._fh, fcntl.LOCK_SH)
        # A mark a killed user left behind stays: the node it marked is still one the users started.
        if not node.running():
            self._started_by_users.touch()

    def release(self, *, keep: bool = False) -> bool:
        """Leave; True when this was the last user and it stopped the node. `keep`: the node stays up
        for whoever comes next (the mark goes, so later users find a running node and leave it so)."""
        if self._fh.closed:
            return False
        try:
            fcntl.flock(self._fh, fcntl.LOCK_UN)
            if keep:
                self._started_by_users.unlink(missing_ok=True)
                return False
            if not _try_lock(self._fh, fcntl.LOCK_EX):
                return False  # another user is still in: it stops the node when it leaves
            if not self._started_by_users.exists():
                return False
            self._started_by_users.unlink()
            return self.node.stop()
        finally:
            self._fh.close()  # closing drops the lock


def _try_lock(fh, kind: int) -> bool:
    try:
        fcntl.flock(fh, kind | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
