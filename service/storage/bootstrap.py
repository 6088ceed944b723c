"""Apply the index templates in index_templates/ and keep the versioned indices behind the aliases current.

Idempotent: run at every start-up. An index records its template version in its mapping's `_meta`;
a template of the same version only adds fields in place, a newer version (or a model with
another vector size) moves the data into the next `-vN` index and swaps the alias
(service/storage/migrations.py) — never an in-place change that loses data.
"""

from __future__ import annotations

import copy
import json
import logging
from importlib import resources
from typing import Any, Protocol

from opensearchpy import OpenSearch

from service.config import Settings
from service.errors import EngramError
from service.storage import migrations, transfer
from service.storage.client import engine_errors

log = logging.getLogger("engram.bootstrap")

# Shipped inside the package (package data in pyproject.toml), so a wheel install finds them too.
TEMPLATES = resources.files("index_templates")
# Creating an index, putting a template and waiting for health are cluster-state changes: on a busy
# node they take seconds, longer than the OPENSEARCH_TIMEOUT a deployment may set for its searches.
CLUSTER_CHANGE_TIMEOUT_S = 60


class DocumentEmbedder(Protocol):
    short_name: str
    dimension: int

    def embed_documents(self, texts: list[str]) -> list[list[float]]: ...


def load_template(name: str) -> dict:
    return json.loads((TEMPLATES / f"{name}.json").read_text(encoding="utf-8"))


def add_field_mapping(client, alias: str, template: str, field: str) -> None:
    """An additive mapping change: the template's mapping of `field` put on the alias's indices, for
    indices created before the field existed (the enrichment worker's fields, say)."""
    props = load_template(template)["template"]["mappings"]["properties"][field]
    with engine_errors(f"add the {field} mapping", write=True):
        client.indices.put_mapping(index=alias, body={"properties": {field: props}})


def render_template(name: str, settings: Settings, *, dimension: int | None = None, raw: dict | None = None) -> dict:
    """The template body for the engine: our bookkeeping keys removed, dimension, sizing and `_meta` filled in."""
    raw = raw or load_template(name)
    body = copy.deepcopy(raw["template"])
    index_settings = body["settings"]["index"]
    index_settings["number_of_shards"] = settings.index_shards
    index_settings["number_of_replicas"] = settings.index_replicas
    if name in ("memories", "edges"):
        index_settings["refresh_interval"] = settings.index_refresh_interval
    if dimension is not None:
        body["mappings"]["properties"]["embedding"]["dimension"] = dimension
    body["mappings"]["_meta"] = migrations.meta(raw["version"], name)
    return {"version": raw["version"], "template": body}


def reembedding(embedder: DocumentEmbedder) -> migrations.Transform:
    """A migration copy into another vector size: every memory's content embedded by the new model."""

    def transform(page: list[transfer.Doc]) -> list[tuple[str, dict]]:
        vectors = embedder.embed_documents([doc.source.get("content") or "" for doc in page])
        return [(doc.id, {**doc.source, "embedding": vector, "embedding_model": embedder.short_name}) for doc, vector in zip(page, vectors)]

    return transform


def ensure_index(
    client: OpenSearch, alias: str, name: str, rendered: dict, *, dimension: int | None = None,
    embedder: DocumentEmbedder | None = None,
) -> str:
    """Put the template, then create, update or migrate the index behind `alias`; return its name."""
    version = rendered["version"]
    body = rendered["template"]
    with engine_errors(f"read {alias}"):
        if not client.indices.exists_alias(name=alias) and client.indices.exists(index=alias):
            raise EngramError(f"{alias} exists as a concrete index, not an alias; rename it or change INDEX_PREFIX")
    current = migrations.current_index(client, alias)
    state = migrations.state_of(client, alias, current) if current else None
    step = migrations.plan(state, version, dimension)
    if step.action != "newer":  # an older template never replaces the one a newer version put
        with engine_errors(f"apply index template {alias}"):
            client.indices.put_index_template(name=alias, body={"index_patterns": [f"{alias}-v*"], "version": version, "template": body},
                                              request_timeout=CLUSTER_CHANGE_TIMEOUT_S)
    if step.action == "create":
        index = f"{alias}-v{migrations.next_generation(client, alias)}"
        with engine_errors(f"create {index}"):
            client.indices.create(index=index, body={"aliases": {alias: {"is_write_index": True}}}, request_timeout=CLUSTER_CHANGE_TIMEOUT_S)
        log.info("created index %s behind alias %s", index, alias)
        return index
    assert current is not None and state is not None
    if step.action == "newer":
        log.warning("%s; using it as it is", step.reason)
        return current
    if step.action == "update_mapping":
        migrations.update_mapping(client, current, body["mappings"])
        return current
    if step.reembed and embedder is None:
        raise EngramError(
            f"index {current} stores {state.dimension}-dimensional vectors but the embedding model gives {dimension}; "
            "start the service (or `engram reembed`) with this model to move the memories into a new index version, "
            "or use another INDEX_PREFIX"
        )
    vectors = "embedding" in body["mappings"].get("properties", {})
    log.warning("%s: %s; migrating (the memories are %s)", alias, step.reason, "re-embedded" if step.reembed else "copied with their vectors")
    return migrations.migrate(
        client, alias, current, vectors=vectors,
        # A total order to page the copy by: memories by their `id` keyword, edges by their key,
        # the other indices (no unique field of their own) by the document id.
        sort={"memories": transfer.MEMORY_ORDER, "edges": transfer.EDGE_ORDER}.get(name, transfer.DOC_ORDER),
        transform=reembedding(embedder) if step.reembed else None,
        refresh_interval=body["settings"]["index"].get("refresh_interval", "1s"),
    )


def ensure_indices(client: OpenSearch, settings: Settings, dimension: int, *, embedder: Any = None) -> None:
    """The indices (memories, edges, consolidation history, bank profiles, the recall ledger, Hindsight's operations, the recall log when enabled), current. `embedder` lets a change of vector size re-embed the memories (without
    one such a change is refused, as nothing could fill the new vectors)."""
    memories = ensure_index(
        client, settings.memories_alias, "memories", render_template("memories", settings, dimension=dimension),
        dimension=dimension, embedder=embedder,
    )
    ensure_index(client, settings.edges_alias, "edges", render_template("edges", settings))
    ensure_index(client, settings.consolidation_alias, "consolidation", render_template("consolidation", settings))
    if settings.recall_log_enabled:
        ensure_index(client, settings.recall_log_alias, "recall-log", render_template("recall-log", settings))
    ensure_index(client, settings.recall_ledger_alias, "recall_ledger", render_template("recall_ledger", settings))
    ensure_index(client, settings.banks_alias, "banks", render_template("banks", settings))
    ensure_index(client, settings.operations_alias, "operations", render_template("operations", settings))
    stored = migrations.state_of(client, settings.memories_alias, memories).dimension
    if stored != dimension:
        raise EngramError(f"index {memories} stores {stored}-dimensional vectors but the embedding model gives {dimension}")
    with engine_errors("wait for index health"):
        client.cluster.health(index=[settings.memories_alias, settings.edges_alias], wait_for_status="yellow",
                              request_timeout=CLUSTER_CHANGE_TIMEOUT_S)


def drop_prefix(client: OpenSearch, prefix: str) -> None:
    """Delete everything stored under INDEX_PREFIX `prefix`: its indices and the index templates
    ensure_indices put (one per alias). For benchmarks and tests; the service never calls it."""
    client.indices.delete(index=f"{prefix}-*", ignore=[404])
    client.indices.delete_index_template(name=f"{prefix}-*", ignore=[404])
