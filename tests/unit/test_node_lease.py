"""NodeLease: test sessions sharing the local node stop it only when the last of them is done, and
only a node one of them found stopped (a second `make test` once stopped the node under CI's run).

Two leases in one process conflict as two processes' would: flock locks belong to the open file."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from service.engine.node_lease import NodeLease


@dataclass
class FakeNode:
    folder: Path
    name: str = "test"
    up: bool = False
    stops: int = 0

    def running(self) -> bool:
        return self.up

    def start(self) -> None:
        self.up = True

    def stop(self) -> bool:
        was, self.up = self.up, False
        self.stops += 1
        return was


@pytest.fixture
def node(tmp_path) -> FakeNode:
    return FakeNode(tmp_path / "nodes" / "test")


def test_a_session_alone_stops_the_node_it_found_stopped(node):
    lease = NodeLease(node)
    node.start()
    assert lease.release() is True
    assert (node.up, node.stops) == (False, 1)


def test_a_node_found_running_is_left_running(node):
    node.start()
    assert NodeLease(node).release() is False
    assert (node.up, node.stops) == (True, 0)


def test_the_first_session_leaving_does_not_stop_the_node_under_the_second(node):
    first = NodeLease(node)
    node.start()
    second = NodeLease(node)  # found it running (or starting: it looks stopped then, as below)
    assert first.release() is False
    assert (node.up, node.stops) == (True, 0)
    assert second.release() is True
    assert (node.up, node.stops) == (False, 1)


def test_sessions_that_both_found_it_stopped_stop_it_once(node):
    first, second = NodeLease(node), NodeLease(node)
    node.start()
    assert second.release() is False
    assert first.release() is True
    assert node.stops == 1


def test_a_session_started_while_the_last_one_leaves_keeps_the_node_it_needs(node):
    first = NodeLease(node)
    node.start()
    assert first.release() is True  # the node is stopped: a session starting now starts it again
    second = NodeLease(node)
    node.start()
    assert second.release() is True
    assert node.stops == 2


def test_keep_leaves_the_node_to_whoever_comes_next(node):
    lease = NodeLease(node)
    node.start()
    assert lease.release(keep=True) is False
    assert node.up
    assert NodeLease(node).release() is False  # the next session found it running, as a person's node
    assert (node.up, node.stops) == (True, 0)


def test_a_killed_session_holds_nothing_and_its_mark_stays(node):
    # A session killed mid-run releases its lock with its process, and the node it started is still
    # one the sessions started: the next session to leave stops it.
    code = (
        "import sys; from pathlib import Path; sys.path.insert(0, sys.argv[2]);"
        "from tests.unit.test_node_lease import FakeNode; from service.engine.node_lease import NodeLease;"
        "NodeLease(FakeNode(Path(sys.argv[1])))"
    )
    subprocess.run([sys.executable, "-c", code, str(node.folder), str(Path(__file__).parents[2])], check=True)
    node.start()
    assert NodeLease(node).release() is True
    assert node.stops == 1


def test_release_twice_is_harmless(node):
    lease = NodeLease(node)
    node.start()
    assert lease.release() is True
    assert lease.release() is False
    assert node.stops == 1
