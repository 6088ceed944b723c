"""The store's operations as plans (generators of HTTP calls, see _http.py): written once, run sync or async.

Routes used: GET /memory/by-tag (lookups by key tag, scans by namespace tag), GET /recall (query
search), POST /memory/batch (heads and history), POST /associate (supersession edges), PATCH
/memory/{id} (TTL refresh), DELETE /memory/by-tag (delete and sweep).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from langgraph.store.base import (
    GetOp, InvalidNamespaceError, Item, ListNamespacesOp, PutOp, SearchItem, SearchOp, validate_op_namespace,
)

from langgraph.store.engram import _codec as C
from langgraph.store.engram._http import Call, Plan
from langgraph.store.engram.errors import EngramLimitError, EngramServiceError

# The service's bounds (docs/settings.md, spec 003): by-tag pages of at most 200 and a window of 10,000;
# batches of 500; ranked recall of at most RECALL_MAX_LIMIT (100) results and no offset.
PAGE = 200
WINDOW = 10_000
BATCH = 500
RECALL_MAX = 100
# Tags per by-tag / delete call: each is ~50 characters of URL, far under the ~64 kB the parser takes.
TAGS_PER_CALL = 200
# Query search asks recall for this many more than the page needs: memories of the scope that are
# not this store's, or expired since, are dropped client-side.
RECALL_SLACK = 10


def _chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _head_of(memory: Mapping[str, Any]) -> tuple[tuple[str, ...], str] | None:
    meta = C.item_meta(memory)
    return None if meta is None else (tuple(meta["namespace"]), meta["key"])


def _check_batch(body: dict, what: str) -> None:
    failed = body.get("failed") or []
    if failed:
        reasons = "; ".join(f"{f.get('id') or f.get('index')}: {f.get('reason') or f.get('error')}" for f in failed[:5])
        raise EngramServiceError(f"{what}: {len(failed)} item(s) failed ({reasons}); the others were written, and retrying is safe")


# --- scanning -------------------------------------------------------------------------------------
def scan(tag: str, what: str, on_page: Callable[[list[dict]], bool]) -> Plan[None]:
    """Every memory carrying `tag`, page by page, handed to `on_page` until it returns True."""
    offset = 0
    while True:
        if offset + PAGE > WINDOW:
            raise EngramLimitError(
                f"{what} needs more than the {WINDOW:,} memories GET /memory/by-tag can page through under one tag "
                f"({tag!r}); narrow the namespace prefix")
        body = yield Call("GET", "/memory/by-tag", [("tags", tag), ("limit", PAGE), ("offset", offset)])
        memories = body.get("memories") or []
        if on_page(memories) or not body.get("has_more") or not memories:
            return
        offset += len(memories)


def lookup_heads(keys: Sequence[tuple[tuple[str, ...], str]]) -> Plan[dict[tuple[tuple[str, ...], str], dict]]:
    """The current head memory of each (namespace, key) that has one (expired ones included)."""
    wanted = {C.key_tag(ns, key): (ns, key) for ns, key in dict.fromkeys(keys)}
    found: dict[tuple[tuple[str, ...], str], dict] = {}
    for chunk in _chunks(list(wanted), TAGS_PER_CALL):
        offset = 0
        while True:
            params = [("tags", t) for t in chunk] + [("limit", PAGE), ("offset", offset)]
            body = yield Call("GET", "/memory/by-tag", params)
            memories = body.get("memories") or []
            for memory in memories:
                ident = _head_of(memory)
                if ident is None or wanted.get(C.key_tag(*ident)) != ident:
                    continue
                # Two heads of one key (two writers that spelled the bank differently): the newest wins.
                if ident not in found or memory["metadata"][C.META]["updated_at"] > found[ident]["metadata"][C.META]["updated_at"]:
                    found[ident] = memory
            if not body.get("has_more") or not memories:
                break
            offset += len(memories)
    return found


def _refresh_calls(memories: Sequence[Mapping[str, Any]], now: datetime) -> list[Call]:
    """TTL refresh: t_invalid moves to now + ttl; updated_at is sent as stored so the write is not an update."""
    calls = []
    for memory in memories:
        ttl = memory["metadata"][C.META].get("ttl")
        if ttl is not None:
            body = {"t_invalid": C.iso(now + timedelta(minutes=ttl)), "updated_at": memory.get("updated_at")}
            calls.append(Call("PATCH", f"/memory/{memory['id']}", body=body, allow_404=True))
    return calls


# --- reads ----------------------------------------------------------------------------------------
def get_items(ops: Sequence[GetOp]) -> Plan[list[Item | None]]:
    now = C.now_utc()
    heads = yield from lookup_heads([(tuple(op.namespace), op.key) for op in ops])
    out: list[Item | None] = []
    refresh: dict[str, dict] = {}
    for op in ops:
        memory = heads.get((tuple(op.namespace), op.key))
        if memory is None or C.expired(memory, now):
            out.append(None)
            continue
        out.append(C.to_item(memory))
        if op.refresh_ttl:
            refresh[memory["id"]] = memory
    calls = _refresh_calls(list(refresh.values()), now)
    if calls:
        yield calls
    return out


def search_items(op: SearchOp) -> Plan[list[SearchItem]]:
    C.check_filter(op.filter)
    if op.limit < 0 or op.offset < 0:
        raise ValueError(f"limit and offset must be >= 0 (got limit={op.limit}, offset={op.offset})")
    prefix = tuple(op.namespace_prefix)
    tag = C.prefix_tag(prefix)
    now = C.now_utc()
    wanted = op.offset + op.limit
    picked: list[tuple[dict, float | None]] = []

    def keep(memory: dict) -> bool:
        ident = _head_of(memory)
        return (ident is not None and ident[0][:len(prefix)] == prefix and not C.expired(memory, now)
                and C.matches(C.to_item(memory).value, op.filter))

    if op.limit == 0:
        return []
    if op.query:
        if wanted > RECALL_MAX:
            raise EngramLimitError(f"search with a query reaches the first {RECALL_MAX} results only (ranked recall has no offset); "
                                   f"got offset={op.offset}, limit={op.limit}")
        ask = RECALL_MAX if op.filter else min(RECALL_MAX, wanted + RECALL_SLACK)
        params = [("query", op.query), ("tags", tag), ("tag_match", "exact"), ("limit", ask), ("exclude_tags", C.NOINDEX_TAG),
                  ("state_mode", "current"), ("adaptive_floor", "false"), ("min_score", 0)]
        body = yield Call("GET", "/recall", params)
        for result in body.get("results") or []:
            memory = {**(result.get("memory") or {}), "id": result.get("id")}
            if keep(memory):
                picked.append((memory, result.get("final_score", result.get("score"))))
    else:
        def take(memories: list[dict]) -> bool:
            picked.extend((m, None) for m in memories if keep(m))
            return len(picked) >= wanted

        yield from scan(tag, "search", take)
    page = picked[op.offset:wanted]
    if op.refresh_ttl:
        calls = _refresh_calls([m for m, _ in page], now)
        if calls:
            yield calls
    return [C.to_item(m, score, search=True) for m, score in page]  # type: ignore[misc]


def list_namespaces(op: ListNamespacesOp) -> Plan[list[tuple[str, ...]]]:
    conditions = tuple(op.match_conditions or ())
    for condition in conditions:
        if condition.match_type not in ("prefix", "suffix"):
            raise ValueError(f"unsupported match type {condition.match_type!r}")
    if op.limit < 0 or op.offset < 0:
        raise ValueError(f"limit and offset must be >= 0 (got limit={op.limit}, offset={op.offset})")
    if op.max_depth is not None and op.max_depth < 1:
        raise ValueError(f"max_depth must be >= 1 or None (got {op.max_depth})")
    now = C.now_utc()
    seen: set[tuple[str, ...]] = set()

    def take(memories: list[dict]) -> bool:
        for memory in memories:
            ident = _head_of(memory)
            if ident is not None and not C.expired(memory, now) and all(C.condition_matches(c, ident[0]) for c in conditions):
                seen.add(ident[0] if op.max_depth is None else ident[0][:op.max_depth])
        return False

    yield from scan(C.prefix_tag(C.scan_prefix(conditions)), "list_namespaces", take)
    return sorted(seen)[op.offset:op.offset + op.limit]


# --- writes ---------------------------------------------------------------------------------------
def put_items(ops: Sequence[PutOp], *, bank: str | None, fields: list[str] | None) -> Plan[None]:
    """Deletes remove every version of their keys; puts write a history copy of each replaced head,
    the new heads, then the supersession edges history -> head (each step idempotent, so a failed
    batch can simply be retried)."""
    now = C.now_utc()
    stamp = C.iso(now)
    puts = [op for op in ops if op.value is not None]
    deletes = [op for op in ops if op.value is None]
    prepared = []
    for op in puts:
        ns = tuple(op.namespace)
        value_json = C.dump_value(op.value)  # type: ignore[arg-type]
        paths = fields if op.index is None or op.index is False else list(op.index)
        prepared.append((op, ns, value_json, C.content_text(op.value, paths, op.key)))  # type: ignore[arg-type]
    heads = (yield from lookup_heads([(ns, op.key) for op, ns, _, _ in prepared])) if prepared else {}

    history, docs, edges = [], [], []
    for op, ns, value_json, text in prepared:
        old = heads.get((ns, op.key))
        live = old is not None and not C.expired(old, now)
        memory_id = old["id"] if old is not None else C.head_id(bank, ns, op.key)
        created = old["metadata"][C.META]["created_at"] if live else stamp
        docs.append(C.memory_document(ns, op.key, value_json, text, memory_id=memory_id, created_at=created, updated_at=stamp,
                                      ttl=op.ttl, indexed=op.index is not False))
        if live:
            copy = C.history_document(old, stamp)
            history.append(copy)
            edges.append({"memory1_id": copy["id"], "memory2_id": memory_id, "type": "EVOLVED_INTO", "strength": 1.0})
    for what, items in (("store history", history), ("store items", docs)):
        for chunk in _chunks(items, BATCH):
            _check_batch((yield Call("POST", "/memory/batch", body={"memories": list(chunk)}, items=len(chunk))), what)
    for chunk in _chunks(edges, BATCH):
        _check_batch((yield Call("POST", "/associate", body={"associations": list(chunk)})), "link history")

    tags = [t for op in deletes for t in (C.key_tag(tuple(op.namespace), op.key), C.history_tag(tuple(op.namespace), op.key))]
    for chunk in _chunks(tags, TAGS_PER_CALL):
        yield Call("DELETE", "/memory/by-tag", [("tags", t) for t in chunk])


def history(namespace: tuple[str, ...], key: str) -> Plan[list[Item]]:
    """Earlier values of an item, oldest first (the current one is `get`'s)."""
    versions = []

    def take(memories: list[dict]) -> bool:
        for memory in memories:
            meta = C.item_meta(memory, kind="history")
            if meta is not None and tuple(meta["namespace"]) == namespace and meta["key"] == key:
                versions.append(memory)
        return False

    yield from scan(C.history_tag(namespace, key), "history", take)
    versions.sort(key=lambda m: m["metadata"][C.META]["updated_at"])
    items = []
    for memory in versions:
        memory["metadata"][C.META]["kind"] = "item"
        items.append(C.to_item(memory))
    return items


def sweep(prefix: tuple[str, ...] = ()) -> Plan[int]:
    """Delete the expired items under `prefix` with their history; returns how many items."""
    now = C.now_utc()
    dead: list[tuple[tuple[str, ...], str]] = []

    def take(memories: list[dict]) -> bool:
        dead.extend(ident for m in memories if (ident := _head_of(m)) is not None and C.expired(m, now))
        return False

    yield from scan(C.prefix_tag(prefix), "sweep_ttl", take)
    if dead:
        yield from put_items([PutOp(ns, key, None) for ns, key in dead], bank=None, fields=None)
    return len(dead)


def check_op(op: Any) -> None:
    """What BaseStore's methods check, for ops handed to batch() directly (validate_op_namespace checks labels)."""
    validate_op_namespace(op)
    if isinstance(op, PutOp) and op.value is not None:
        if not op.namespace:
            raise InvalidNamespaceError("Namespace cannot be empty.")
        if op.namespace[0] == "langgraph":
            raise InvalidNamespaceError(f'Root label for namespace cannot be "langgraph". Got: {op.namespace}')
    if isinstance(op, (PutOp, GetOp)) and not isinstance(op.key, str):
        raise TypeError(f"key must be a string, not {type(op.key).__name__}")
    if not isinstance(op, (PutOp, GetOp, SearchOp, ListNamespacesOp)):
        raise ValueError(f"Unknown operation type: {type(op)}")
