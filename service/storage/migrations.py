"""Index migrations: versioned indices behind an alias, moved forward by copy and one alias swap.

Every index records the template version it was made from in its mapping's `_meta`
(`{"engram": {"template": "memories", "version": N}}`; an index made before that record existed is
taken to be the version its `-vN` name says). At start-up `plan()` compares the index behind the
alias with the template about to be applied:

- same version, same vector size: the template's fields are put on the mapping in place (adding a
  field needs no copy; a change that is not additive is refused and needs a version bump);
- a newer template version, or another vector size (a new embedding model): `migrate()` creates
  the next index generation from the new template, copies every document into it and swaps the
  alias in one `_aliases` call. Readers see the old index until the swap and the new one after.

The copy is not a `_reindex`: the memories mapping keeps `embedding` out of `_source`, so a reindex
would drop every vector. Vectors are read back through doc values (`transfer.scan(vectors=True)`)
and written with their documents; with another vector size a `transform` re-embeds the contents
instead. The old index is write-blocked for the copy (a writer still using it fails loudly instead
of writing into an index that is about to be left behind) and kept afterwards, so a migration can
be undone by moving the alias back; delete it once the new one has proved itself.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from opensearchpy import OpenSearch
from opensearchpy import exceptions as os_exc

from service.errors import EngramError
from service.storage import transfer
from service.storage.client import engine_errors, engine_reason

log = logging.getLogger("engram.migrations")

META_KEY = "engram"
# A page of copied documents -> the documents to write (id, body with its vector). Re-embedding
# into another vector size is such a transform; the default writes each vector back as read.
Transform = Callable[[list[transfer.Doc]], list[tuple[str, dict]]]
Progress = Callable[[int], None]


@dataclass(frozen=True)
class IndexState:
    """What an existing index says about itself."""

    name: str
    version: int
    dimension: int | None = None


@dataclass(frozen=True)
class Plan:
    action: str  # "create" | "keep" | "update_mapping" | "migrate" | "newer"
    reason: str = ""
    reembed: bool = False  # the copy needs new vectors (another vector size)


def generation(index: str, alias: str) -> int | None:
    """`engram-memories-v3` -> 3 (None for a name that is not a generation of `alias`)."""
    match = re.fullmatch(re.escape(alias) + r"-v(\d+)", index)
    return int(match.group(1)) if match else None


def meta(version: int, template: str) -> dict:
    return {META_KEY: {"template": template, "version": version}}


def read_state(index: str, alias: str, mapping: dict) -> IndexState:
    """The version recorded in `_meta`, else the one in the name (indices made before `_meta` was written)."""
    recorded = (mapping.get("_meta") or {}).get(META_KEY, {}).get("version")
    version = int(recorded) if isinstance(recorded, int) else (generation(index, alias) or 1)
    vector = mapping.get("properties", {}).get("embedding", {})
    return IndexState(index, version, vector.get("dimension"))


def plan(state: IndexState | None, version: int, dimension: int | None) -> Plan:
    """Pure: what start-up does with the index behind the alias, given the template's version and
    the vector size of the configured model (None for an index without vectors)."""
    if state is None:
        return Plan("create")
    if state.version > version:
        return Plan("newer", f"{state.name} was made by template version {state.version}, newer than this code's {version}")
    if state.version < version:
        reembed = dimension is not None and state.dimension is not None and state.dimension != dimension
        return Plan("migrate", f"template version {state.version} -> {version}", reembed=reembed)
    if dimension is not None and state.dimension is not None and state.dimension != dimension:
        return Plan("migrate", f"vector size {state.dimension} -> {dimension} (a new embedding model)", reembed=True)
    return Plan("update_mapping")


def current_index(client: OpenSearch, alias: str) -> str | None:
    with engine_errors(f"read alias {alias}"):
        if not client.indices.exists_alias(name=alias):
            return None
        indices = client.indices.get_alias(name=alias)
    write = [name for name, info in indices.items() if info.get("aliases", {}).get(alias, {}).get("is_write_index")]
    return (write or sorted(indices))[0]


def state_of(client: OpenSearch, alias: str, index: str) -> IndexState:
    with engine_errors(f"read mapping of {index}"):
        mapping = client.indices.get_mapping(index=index)[index]["mappings"]
    return read_state(index, alias, mapping)


def next_generation(client: OpenSearch, alias: str) -> int:
    with engine_errors(f"list {alias} indices"):
        names = list(client.indices.get(index=f"{alias}-v*", params={"expand_wildcards": "all"}))
    return max([generation(n, alias) or 0 for n in names] + [0]) + 1


def update_mapping(client: OpenSearch, index: str, mappings: dict) -> None:
    """Put the template's fields (and `_meta`) on an index of the same version: new fields are added
    in place; a change to an existing field is refused by the engine."""
    body = {"properties": mappings.get("properties", {}), "_meta": mappings.get("_meta", {})}
    with engine_errors(f"update mapping of {index}"):
        try:
            client.indices.put_mapping(index=index, body=body)
        except os_exc.RequestError as exc:  # the engine refuses to change an existing field
            raise EngramError(
                f"the template changes an existing field of {index} ({engine_reason(exc.info)}); bump the template's "
                "version so that start-up migrates the index into a new one"
            ) from exc


def keep_vectors(page: list[transfer.Doc]) -> list[tuple[str, dict]]:
    """The default copy: each document with the vector it had."""
    out = []
    for doc in page:
        body = dict(doc.source)
        if doc.vector is not None:
            body["embedding"] = doc.vector
        out.append((doc.id, body))
    return out


def migrate(
    client: OpenSearch, alias: str, source: str, *, vectors: bool, sort: Sequence[dict], transform: Transform | None = None,
    refresh_interval: str = "1s", progress: Progress | None = None,
) -> str:
    """Copy `source` (the index behind `alias`) into the next generation, created from the index
    template already put for `alias`, and swap the alias to it. Returns the new index's name."""
    target = _fresh_target(client, alias)
    started = time.monotonic()
    _set(client, source, {"index.blocks.write": True})
    try:
        with engine_errors(f"refresh {source}"):
            client.indices.refresh(index=source)  # the last writes before the block are copied too
        total = transfer.count(client, source)
        log.info("migrating %s: %s -> %s (%d documents)", alias, source, target, total)
        with engine_errors(f"create {target}"):
            client.indices.create(index=target, body={"settings": {"index": {"refresh_interval": "-1"}}})
        copied = 0
        for page in transfer.scan(client, source, sort=sort, vectors=vectors):
            docs = (transform or keep_vectors)(page) if vectors else [(d.id, d.source) for d in page]
            errors = transfer.write(client, target, docs)
            failed = [e for e in errors if e]
            if failed:
                raise EngramError(f"migration of {alias} failed: {len(failed)} documents were refused, first: {failed[0]}")
            copied += len(docs)
            if progress:
                progress(len(docs))
            log.info("migrating %s: %d / %d documents copied", alias, copied, total)
        _set(client, target, {"index.refresh_interval": refresh_interval})
        with engine_errors(f"refresh {target}"):
            client.indices.refresh(index=target)
        landed = transfer.count(client, target)
        if landed != total:
            raise EngramError(f"migration of {alias} copied {landed} documents of {total}; the alias was not moved")
        swap_alias(client, alias, source, target)
    except BaseException:
        with engine_errors(f"undo migration of {alias}"):
            client.indices.delete(index=target, ignore=[404])
        _set(client, source, {"index.blocks.write": None})
        raise
    log.info("migrated %s to %s in %.1f s; %s is kept (write-blocked) until you delete it", alias, target, time.monotonic() - started, source)
    return target


def swap_alias(client: OpenSearch, alias: str, old: str, new: str) -> None:
    """One `_aliases` call: readers never see the alias on both indices or on neither."""
    with engine_errors(f"move alias {alias}"):
        client.indices.update_aliases(body={"actions": [
            {"remove": {"index": old, "alias": alias}},
            {"add": {"index": new, "alias": alias, "is_write_index": True}},
        ]})


def _fresh_target(client: OpenSearch, alias: str) -> str:
    """The next generation's name. A higher generation that is not behind the alias is what an
    interrupted migration left: it never served a read, so it is deleted and the copy starts over."""
    live = generation(current_index(client, alias) or "", alias) or 0
    with engine_errors(f"list {alias} indices"):
        names = list(client.indices.get(index=f"{alias}-v*", params={"expand_wildcards": "all"}))
    for name in names:
        if (generation(name, alias) or 0) > live:
            log.warning("deleting %s, left by an interrupted migration of %s", name, alias)
            with engine_errors(f"delete {name}"):
                client.indices.delete(index=name)
    return f"{alias}-v{next_generation(client, alias)}"


def _set(client: OpenSearch, index: str, settings: dict) -> None:
    with engine_errors(f"update settings of {index}"):
        client.indices.put_settings(index=index, body=settings)
