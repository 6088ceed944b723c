"""A real local OpenSearch node, built from Maven Central artifacts (the Maven project in
service/engine/maven/, shipped as package data; docs/engine.md).

Used whenever OPENSEARCH_URL is not set: by `make run` and `engram serve`, by the test session and
by the benchmarks. The engine is built once into a user cache folder (keyed by a hash of the Maven
project), a node runs in its own folder (data, logs, settings, pid file) and is reused while it is
healthy. File locks make a build, and a node's start, happen once when several processes ask at
the same time (pytest-xdist workers, `make run` while a test session starts).

    python -m service.engine.local_node start [--name dev] [--port 9200] [--heap 1g]
    python -m service.engine.local_node stop  [--name dev]
    python -m service.engine.local_node status [--name dev]
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from service.engine.java import pick_java
from service.paths import cache_root, package_folder

log = logging.getLogger("engram.localnode")

ENGINE_SRC = package_folder("service.engine", "maven")
# Maven downloads ~85 MB of jars in many small requests: more connections at once (Maven 3.8's
# resolver defaults to 5), measured 48 -> 32 s for an empty-cache build on a loaded 2-core machine.
MAVEN_DOWNLOAD_THREADS = 16
START_TIMEOUT_S = 180.0  # ENGINE.md expects 10-25 s; a cold JIT on a busy 2-core box can take longer
STOP_TIMEOUT_S = 30.0


class EngineError(RuntimeError):
    """The local node could not be built, started or stopped; the message says why."""


def _engine_hash() -> str:
    digest = hashlib.sha256()
    for path in sorted(ENGINE_SRC.rglob("*")):
        if path.is_file() and not {"target", "__pycache__"} & set(path.relative_to(ENGINE_SRC).parts):
            digest.update(str(path.relative_to(ENGINE_SRC)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


@contextlib.contextmanager
def file_lock(path: Path):
    """An exclusive lock held while the block runs (released when the process dies, too)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _built(build_dir: Path) -> bool:
    return (build_dir / "engine.jar").is_file() and any((build_dir / "lib").glob("opensearch-knn-*.jar"))


def build_engine() -> Path:
    """Build engine.jar and its lib/ folder once per Maven project content; return the build folder.

    Maven works in a local repository of its own that is deleted afterwards: lib/ holds the only
    copy of the jars (55 MB, instead of those plus 85 MB in ~/.m2)."""
    build_dir = cache_root() / f"engine-{_engine_hash()}"
    if _built(build_dir):
        return build_dir
    with file_lock(build_dir.with_name(build_dir.name + ".lock")):
        if _built(build_dir):  # another process built it while this one waited
            return build_dir
        mvn = shutil.which("mvn")
        if mvn is None:
            raise EngineError("Maven (mvn) is not on PATH; install it (apt-get install maven) to build the local engine")
        if shutil.which("java") is None:
            raise EngineError("java is not on PATH; OpenSearch 2.19 needs Java 17+")
        print(f"engram: building the local OpenSearch engine (Maven Central, ~140 MB, first run only) into {build_dir} ...",
              file=sys.stderr, flush=True)
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="maven-repo-", dir=build_dir.parent) as repo:
            cmd = [mvn, "-B", "-q", "-f", str(ENGINE_SRC / "pom.xml"), f"-Dmaven.repo.local={repo}",
                   f"-Daether.connector.basic.threads={MAVEN_DOWNLOAD_THREADS}", f"-Dmaven.artifact.threads={MAVEN_DOWNLOAD_THREADS}",
                   f"-Dengram.build.dir={build_dir}", "package"]
            proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            shutil.rmtree(build_dir, ignore_errors=True)
            raise EngineError(f"engine build failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        for leftover in ("classes", "generated-sources", "maven-archiver", "maven-status", "dependency-maven-plugin-markers"):
            shutil.rmtree(build_dir / leftover, ignore_errors=True)
        print(f"engram: engine built in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    return build_dir


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_is_free(port: int) -> bool:
    with socket.socket() as sock:
        # As the JVM binds (SO_REUSEADDR): a port left in TIME_WAIT by a killed node is reusable.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def cluster_health(url: str, timeout: float = 2.0) -> dict | None:
    try:
        with urllib.request.urlopen(f"{url}/_cluster/health", timeout=timeout) as resp:
            return json.loads(resp.read())
    except (urllib.error.URLError, OSError, ValueError):
        return None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child (ours, not yet reaped) counts as dead.
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return True


@dataclass
class LocalNode:
    """One named node: its folder holds opensearch.yml, data/, logs/, node.json (pid and port)."""

    name: str = "dev"
    port: int | None = None
    heap: str = "1g"
    # Several nodes on loopback (bench/cluster.py): the cluster's name, this node's transport port and
    # the other members' transport addresses. Empty: a single-node cluster.
    cluster: str | None = None
    transport_port: int | None = None
    seed_hosts: tuple[str, ...] = ()
    initial_managers: tuple[str, ...] = ()

    @property
    def folder(self) -> Path:
        return cache_root() / "nodes" / self.name

    @property
    def state_file(self) -> Path:
        return self.folder / "node.json"

    @property
    def snapshot_dir(self) -> Path:
        """The node's path.repo: `engram snapshot` registers its file-system repository here."""
        return self.folder / "snapshots"

    @property
    def log_file(self) -> Path:
        return self.folder / "logs" / "node.out"

    def _state(self) -> dict | None:
        try:
            return json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return None

    @property
    def url(self) -> str | None:
        state = self._state()
        return f"http://127.0.0.1:{state['port']}" if state else None

    def running(self) -> bool:
        state = self._state()
        if not state or not _pid_alive(state["pid"]):
            return False
        health = cluster_health(f"http://127.0.0.1:{state['port']}")
        return bool(health) and health.get("status") in ("green", "yellow")

    def start(self, *, wait: bool = True) -> str:
        """Start the node (or reuse a healthy one) and return its URL once health is green/yellow
        (`wait=False`: at once, for cluster members that only get healthy together)."""
        if self.running():
            log.info("reusing local OpenSearch node %r at %s", self.name, self.url)
            return self.url  # type: ignore[return-value]
        with file_lock(self.folder.with_name(f"{self.name}.lock")):  # one launch, whoever asks at once
            state = self._state()
            if not (state and _pid_alive(state["pid"])):
                state = self._launch(state)
        # Alive but maybe not healthy yet (just launched, here or by another process): wait for it.
        return self._wait_healthy(state["pid"], state["port"]) if wait else f"http://127.0.0.1:{state['port']}"

    def _launch(self, state: dict | None) -> dict:
        """Start the node's JVM; its state (pid, port, ...) as written to node.json."""
        build_dir = build_engine()
        port = self.port or (state or {}).get("port")
        if not port or not port_is_free(port):
            port = free_port()
        folder = self.folder
        for sub in ("data", "logs", "home", "snapshots"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
        config = folder / "opensearch.yml"
        config.write_text(
            "\n".join(
                [
                    f"path.home: {folder / 'home'}",
                    f"path.data: {folder / 'data'}",
                    f"path.logs: {folder / 'logs'}",
                    f"path.repo: {self.snapshot_dir}",
                    f"cluster.name: engram-{self.cluster or self.name}",
                    f"node.name: engram-{self.name}",
                    *self._discovery(),
                    "network.host: 127.0.0.1",
                    f"http.port: {port}",
                    f"transport.port: {self.transport_port or '19300-19400'}",
                    "http.type: netty4",
                    "transport.type: netty4",
                    # One machine, one disk: never refuse writes because the disk looks full to a watermark.
                    "cluster.routing.allocation.disk.threshold_enabled: false",
                    "action.auto_create_index: false",
                    "",
                ]
            )
        )
        java = pick_java()
        if java is None:
            raise EngineError("java is not on PATH; OpenSearch 2.19 needs Java 17+")
        log.info("local node %r runs on %s (Java %s)", self.name, java.path, java.feature or "?")
        cmd = [
            java.path,
            *java.flags(),
            f"-Xms{self.heap}",
            f"-Xmx{self.heap}",
            "-XX:+UseG1GC",
            "-Djava.awt.headless=true",
            "-Dfile.encoding=UTF-8",
            f"-Dlog4j2.configurationFile={ENGINE_SRC / 'src/main/resources/log4j2.properties'}",
            "-cp",
            f"{build_dir / 'engine.jar'}{os.pathsep}{build_dir / 'lib'}/*",
            "dev.engram.engine.EngineNode",
            str(config),
        ]
        logf = open(self.log_file, "ab")
        # A new session: the node outlives `make run`'s shell and is stopped explicitly.
        proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        logf.close()
        state = {"pid": proc.pid, "port": port, "heap": self.heap, "java": java.path}
        self.state_file.write_text(json.dumps(state))
        log.info("started local OpenSearch node %r (pid %d) on port %d", self.name, proc.pid, port)
        return state

    def _discovery(self) -> list[str]:
        if not self.seed_hosts:
            return ["discovery.type: single-node"]
        return [
            f"discovery.seed_hosts: [{', '.join(self.seed_hosts)}]",
            f"cluster.initial_cluster_manager_nodes: [{', '.join(f'engram-{n}' for n in self.initial_managers)}]",
        ]

    def _wait_healthy(self, pid: int, port: int) -> str:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if not _pid_alive(pid):
                raise EngineError(f"local OpenSearch node exited during start-up; last log lines:\n{self.tail_log()}")
            health = cluster_health(url)
            if health and health.get("status") in ("green", "yellow"):
                return url
            time.sleep(0.25)
        raise EngineError(f"local OpenSearch node not healthy after {START_TIMEOUT_S:.0f} s; log: {self.log_file}")

    def tail_log(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self, *, kill: bool = False) -> bool:
        """SIGTERM (the launcher's shutdown hook closes the node cleanly) or SIGKILL; True if it was running."""
        state = self._state()
        if not state or not _pid_alive(state["pid"]):
            return False
        pid = state["pid"]
        os.kill(pid, signal.SIGKILL if kill else signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while time.monotonic() < deadline and _pid_alive(pid):
            try:  # reap it when it is our child, so it does not linger as a zombie
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
            time.sleep(0.1)
        if _pid_alive(pid):
            os.kill(pid, signal.SIGKILL)
        return True

    def wipe(self) -> None:
        """Stop the node and delete its folder and the files beside it: its launch lock and its users'
        lease files (nodes named per test run would otherwise leave a few files each behind)."""
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)
        for sibling in self.folder.parent.glob(f"{self.name}.*"):
            sibling.unlink(missing_ok=True)


# OpenSearch's own default HTTP port: a local node takes it when it is free.
DEFAULT_PORT = 9200


def local_node(name: str = "dev", port: int | None = None, heap: str = "1g") -> LocalNode:
    """The named node on `port`, else on 9200 when it is not running yet and 9200 is free (a running
    or earlier node keeps its port), else on any free port."""
    node = LocalNode(name, port, heap)
    if node.port is None and not node.running() and not node._state() and port_is_free(DEFAULT_PORT):
        node.port = DEFAULT_PORT
    return node


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m service.engine.local_node",
        description="Build, start, stop or inspect the local OpenSearch node used when OPENSEARCH_URL is not set.",
    )
    parser.add_argument("action", choices=["build", "start", "stop", "status", "wipe"])
    parser.add_argument("--name", default=os.environ.get("ENGRAM_NODE_NAME", "dev"), help="node folder name (default: dev)")
    parser.add_argument("--port", type=int, default=int(os.environ.get("ENGRAM_NODE_PORT", "0")) or None, help="HTTP port (default: 9200 if free, else any free port)")
    parser.add_argument("--heap", default=os.environ.get("ENGRAM_NODE_HEAP", "1g"), help="JVM heap (default: 1g)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    node = local_node(args.name, args.port, args.heap)
    try:
        if args.action == "build":
            print(build_engine())
        elif args.action == "start":
            started = time.monotonic()
            url = node.start()
            print(url)
            log.info("healthy after %.1f s (log: %s)", time.monotonic() - started, node.log_file)
        elif args.action == "stop":
            print("stopped" if node.stop() else "not running")
        elif args.action == "status":
            print(f"running at {node.url}" if node.running() else "not running")
        elif args.action == "wipe":
            node.wipe()
            print(f"removed {node.folder}")
    except EngineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
