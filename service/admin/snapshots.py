"""OpenSearch snapshots of a store's indices (`engram snapshot`): the route for large stores.

A snapshot copies index segments, vectors included, incrementally (only what changed since the
last snapshot), into a repository — a folder under the node's `path.repo` (the local node has
one) or any repository the cluster already knows (S3, ...). Restoring brings the indices back
with their aliases; the service then finds them as it left them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from opensearchpy import OpenSearch

from service.errors import BadRequest, EngramError, NotFound
from service.storage.client import engine_errors
from service.storage.migrations import current_index

DEFAULT_REPOSITORY = "engram"
# Creating or restoring waits for completion: far longer than an ordinary request may take.
SNAPSHOT_TIMEOUT_S = 6 * 3600


@dataclass(frozen=True)
class SnapshotInfo:
    name: str
    state: str
    indices: tuple[str, ...]
    started: str | None
    shards_failed: int


def ensure_repository(client: OpenSearch, name: str, location: str | None) -> None:
    """Register a file-system repository at `location` (under path.repo), or check `name` exists."""
    with engine_errors(f"read snapshot repository {name}"):
        known = client.snapshot.get_repository() or {}
    if name in known and (location is None or known[name].get("settings", {}).get("location") == location):
        return
    if location is None:
        raise BadRequest(f"no snapshot repository {name!r}: pass --location (a folder under the node's path.repo)")
    try:
        with engine_errors(f"register snapshot repository {name}"):
            client.snapshot.create_repository(repository=name, body={"type": "fs", "settings": {"location": location}})
    except EngramError as exc:
        if "path.repo" not in exc.message:
            raise
        raise BadRequest(f"{exc.message}. The folder must be under the node's path.repo; a local node started before it had one "
                         "gets it at its next start (engram engine stop, then engram engine start)") from exc


def store_indices(client: OpenSearch, aliases: list[str]) -> list[str]:
    """The indices behind the store's aliases (not the kept-back generations of old migrations)."""
    out = [current_index(client, alias) for alias in aliases]
    if any(index is None for index in out):
        raise NotFound(f"no index behind {', '.join(a for a, i in zip(aliases, out) if i is None)}: nothing to snapshot")
    return [i for i in out if i]


def default_name(prefix: str, now: datetime | None = None) -> str:
    return f"{prefix}-{(now or datetime.now(timezone.utc)).strftime('%Y%m%d-%H%M%S')}".lower()


def create(client: OpenSearch, repository: str, name: str, indices: list[str]) -> SnapshotInfo:
    body = {"indices": ",".join(indices), "include_global_state": False, "ignore_unavailable": False}
    with engine_errors(f"create snapshot {name}"):
        resp = client.snapshot.create(repository=repository, snapshot=name, body=body, params={"wait_for_completion": "true"},
                                      request_timeout=SNAPSHOT_TIMEOUT_S)
    info = _info(resp["snapshot"])
    if info.state != "SUCCESS":
        raise EngramError(f"snapshot {name} ended {info.state} ({info.shards_failed} shards failed)")
    return info


def list_snapshots(client: OpenSearch, repository: str) -> list[SnapshotInfo]:
    with engine_errors(f"list snapshots of {repository}"):
        resp = client.snapshot.get(repository=repository, snapshot="_all")
    return [_info(s) for s in resp.get("snapshots", [])]


def restore(client: OpenSearch, repository: str, name: str, aliases: list[str], *, replace: bool) -> list[str]:
    """Bring the snapshot's indices back. Existing indices of the same names are only overwritten with
    `replace` (they are closed first, as the engine requires); an index that the aliases point to and
    the snapshot does not hold is taken off the aliases, not deleted."""
    with engine_errors(f"read snapshot {name}"):
        snap = _info(client.snapshot.get(repository=repository, snapshot=name)["snapshots"][0])
    with engine_errors("list indices"):
        existing = [i for i in snap.indices if client.indices.exists(index=i)]
    if existing and not replace:
        raise BadRequest(f"{', '.join(existing)} exist; pass --replace to overwrite them with the snapshot")
    actions = []
    for alias in aliases:
        current = current_index(client, alias)
        if current and current not in snap.indices:
            actions.append({"remove": {"index": current, "alias": alias}})
    with engine_errors(f"restore snapshot {name}"):
        for index in existing:
            client.indices.close(index=index)
        if actions:
            client.indices.update_aliases(body={"actions": actions})
        client.snapshot.restore(repository=repository, snapshot=name, body={"indices": ",".join(snap.indices), "include_aliases": True,
                                                                               "include_global_state": False},
                                params={"wait_for_completion": "true"}, request_timeout=SNAPSHOT_TIMEOUT_S)
        client.cluster.health(index=list(snap.indices), wait_for_status="yellow", request_timeout=SNAPSHOT_TIMEOUT_S)
    return list(snap.indices)


def delete(client: OpenSearch, repository: str, name: str) -> None:
    with engine_errors(f"delete snapshot {name}"):
        client.snapshot.delete(repository=repository, snapshot=name)


def _info(raw: dict) -> SnapshotInfo:
    shards = raw.get("shards", {})
    return SnapshotInfo(raw["snapshot"], raw.get("state", "?"), tuple(raw.get("indices", [])), raw.get("start_time"), int(shards.get("failed", 0)))
