"""Apply the index templates in index_templates/ and create the versioned indices behind aliases.

Idempotent: run at every start-up. A mapping change means a new template version, a new
`-vN` index, a copy and an alias swap — never an in-place change that loses data. The copy cannot
be a plain `_reindex`: memories keep their vectors out of _source (MemoryStore.vectors reads them).
"""

from __future__ import annotations

import copy
import json
import logging
from pathlib import Path

from opensearchpy import OpenSearch

from service.config import Settings
from service.errors import EngramError
from service.storage.client import engine_errors

log = logging.getLogger("engram.bootstrap")

TEMPLATE_DIR = Path(__file__).resolve().parent.parent.parent / "index_templates"


def load_template(name: str) -> dict:
    return json.loads((TEMPLATE_DIR / f"{name}.json").read_text())


def render_template(name: str, settings: Settings, *, dimension: int | None = None) -> dict:
    """The template body for the engine: our bookkeeping keys removed, dimension and sizing filled in."""
    raw = load_template(name)
    body = copy.deepcopy(raw["template"])
    index_settings = body["settings"]["index"]
    index_settings["number_of_shards"] = settings.index_shards
    index_settings["number_of_replicas"] = settings.index_replicas
    if dimension is not None:
        body["mappings"]["properties"]["embedding"]["dimension"] = dimension
    return {"version": raw["version"], "template": body}


def _ensure(client: OpenSearch, alias: str, name: str, rendered: dict) -> str:
    version = rendered["version"]
    with engine_errors(f"apply index template {alias}"):
        client.indices.put_index_template(
            name=alias,
            body={"index_patterns": [f"{alias}-v*"], "version": version, "template": rendered["template"]},
        )
        if client.indices.exists_alias(name=alias):
            return next(iter(client.indices.get_alias(name=alias)))
        if client.indices.exists(index=alias):
            raise EngramError(f"{alias} exists as a concrete index, not an alias; rename it or change INDEX_PREFIX")
        index = f"{alias}-v{version}"
        client.indices.create(index=index, body={"aliases": {alias: {"is_write_index": True}}})
        log.info("created index %s behind alias %s", index, alias)
        return index


def ensure_indices(client: OpenSearch, settings: Settings, dimension: int) -> None:
    memories = _ensure(client, settings.memories_alias, "memories", render_template("memories", settings, dimension=dimension))
    _ensure(client, settings.edges_alias, "edges", render_template("edges", settings))
    _ensure(client, settings.consolidation_alias, "consolidation", render_template("consolidation", settings))
    with engine_errors("read memories mapping"):
        mapping = client.indices.get_mapping(index=memories)
    stored = mapping[memories]["mappings"]["properties"]["embedding"]["dimension"]
    if stored != dimension:
        raise EngramError(
            f"index {memories} stores {stored}-dimensional vectors but the embedding model gives {dimension}; "
            "use another INDEX_PREFIX or re-embed into a new index version"
        )
    with engine_errors("wait for index health"):
        client.cluster.health(index=[settings.memories_alias, settings.edges_alias], wait_for_status="yellow")
