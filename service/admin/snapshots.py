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
from service.storage import snapshots as engine
from service.storage.migrations import current_index

DEFAULT_REPOSITORY = "engram"


@dataclass(frozen=True)
class SnapshotInfo:
    name: str
    state: str
    indices: tuple[str, ...]
    started: str | None
    shards_failed: int


def ensure_repository(client: OpenSearch, name: str, location: str | None) -> None:
    """Register a file-system repository at `location` (under path.repo), or check `name` exists."""
    known = engine.repositories(client)
    if name in known and (location is None or known[name].get("settings", {}).get("location") == location):
        return
    if location is None:
        raise BadRequest(f"no snapshot repository {name!r}: pass --location (a folder under the node's path.repo)")
    try:
        engine.create_repository(client, name, location)
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
    info = _info(engine.create(client, repository, name, indices))
    if info.state != "SUCCESS":
        raise EngramError(f"snapshot {name} ended {info.state} ({info.shards_failed} shards failed)")
    return info


def list_snapshots(client: OpenSearch, repository: str) -> list[SnapshotInfo]:
    return [_info(s) for s in engine.get(client, repository)]


def restore(client: OpenSearch, repository: str, name: str, aliases: list[str], *, replace: bool) -> list[str]:
    """Bring the snapshot's indices back. Existing indices of the same names are only overwritten with
    `replace` (they are closed first, as the engine requires); an index that the aliases point to and
    the snapshot does not hold is taken off the aliases, not deleted."""
    found = engine.get(client, repository, name)
    if not found:
        raise NotFound(f"no snapshot {name} in {repository}")
    snap = _info(found[0])
    existing = engine.existing_indices(client, snap.indices)
    if existing and not replace:
        raise BadRequest(f"{', '.join(existing)} exist; pass --replace to overwrite them with the snapshot")
    actions = []
    for alias in aliases:
        current = current_index(client, alias)
        if current and current not in snap.indices:
            actions.append({"remove": {"index": current, "alias": alias}})
    engine.restore(client, repository, name, snap.indices, close=existing, alias_actions=actions)
    return list(snap.indices)


def delete(client: OpenSearch, repository: str, name: str) -> None:
    engine.delete(client, repository, name)


def _info(raw: dict) -> SnapshotInfo:
    shards = raw.get("shards", {})
    return SnapshotInfo(raw["snapshot"], raw.get("state", "?"), tuple(raw.get("indices", [])), raw.get("start_time"), int(shards.get("failed", 0)))
