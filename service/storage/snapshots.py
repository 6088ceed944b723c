"""The engine's snapshot API (service/admin/snapshots.py decides what to snapshot and restore).

Creating or restoring waits for completion, far longer than an ordinary request may take.
"""

from __future__ import annotations

from collections.abc import Sequence

from opensearchpy import OpenSearch

from service.storage.client import engine_errors

SNAPSHOT_TIMEOUT_S = 6 * 3600


def repositories(client: OpenSearch) -> dict:
    with engine_errors("read snapshot repositories"):
        return client.snapshot.get_repository() or {}


def create_repository(client: OpenSearch, name: str, location: str) -> None:
    with engine_errors(f"register snapshot repository {name}"):
        client.snapshot.create_repository(repository=name, body={"type": "fs", "settings": {"location": location}})


def create(client: OpenSearch, repository: str, name: str, indices: Sequence[str]) -> dict:
    body = {"indices": ",".join(indices), "include_global_state": False, "ignore_unavailable": False}
    with engine_errors(f"create snapshot {name}"):
        return client.snapshot.create(repository=repository, snapshot=name, body=body, params={"wait_for_completion": "true"},
                                      request_timeout=SNAPSHOT_TIMEOUT_S)["snapshot"]


def get(client: OpenSearch, repository: str, name: str = "_all") -> list[dict]:
    with engine_errors(f"read snapshot {name} of {repository}"):
        return client.snapshot.get(repository=repository, snapshot=name).get("snapshots", [])


def existing_indices(client: OpenSearch, indices: Sequence[str]) -> list[str]:
    with engine_errors("list indices"):
        return [i for i in indices if client.indices.exists(index=i)]


def restore(client: OpenSearch, repository: str, name: str, indices: Sequence[str], *, close: Sequence[str], alias_actions: list[dict]) -> None:
    """Close `close` (the engine restores only over closed indices), apply `alias_actions`, restore
    `indices` with their aliases, and wait until they can serve."""
    with engine_errors(f"restore snapshot {name}"):
        for index in close:
            client.indices.close(index=index)
        if alias_actions:
            client.indices.update_aliases(body={"actions": alias_actions})
        client.snapshot.restore(repository=repository, snapshot=name, body={"indices": ",".join(indices), "include_aliases": True,
                                                                               "include_global_state": False},
                                params={"wait_for_completion": "true"}, request_timeout=SNAPSHOT_TIMEOUT_S)
        client.cluster.health(index=list(indices), wait_for_status="yellow", request_timeout=SNAPSHOT_TIMEOUT_S)


def delete(client: OpenSearch, repository: str, name: str) -> None:
    with engine_errors(f"delete snapshot {name}"):
        client.snapshot.delete(repository=repository, snapshot=name)
