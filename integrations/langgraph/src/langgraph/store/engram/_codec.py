"""Pure mapping between LangGraph items and Engram memories (no I/O).

One item is one memory, its *head*:
- tags: the root tag, one tag per namespace prefix (``langgraph-store:users:alice``: GET /memory/by-tag
  matches whole tags only, so every level a search or listing may start from is a tag of its own),
  and the key tag ``lg-key-<hash>`` that finds the head of (namespace, key);
- content: the text of the value (what the service embeds and matches words against);
- metadata.langgraph: namespace, key, the value as JSON text (exact: key order, numbers, even integers
  past 64 bits; recall answers with re-ordered objects, so structured storage would not round-trip),
  created_at / updated_at, ttl.
A replaced value is kept as a *history* memory (``lg-hist-<hash>``, invalid from the replacement on)
that the head supersedes.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import uuid
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

from langgraph.store.base import Item, MatchCondition, SearchItem, get_text_at_path, tokenize_path

ROOT_TAG = "langgraph-store"
HISTORY_TAG = "langgraph-store-history"
NOINDEX_TAG = "lg-noindex"  # index=False: left out of query search (recall's exclude_tags)
KEY_TAG_PREFIX = "lg-key-"
HISTORY_KEY_TAG_PREFIX = "lg-hist-"
META = "langgraph"
FORMAT = 1
# The service's defaults (TAG_MAX_LENGTH, MEMORY_CONTENT_MAX); content is only the searchable text,
# so it is cut rather than refused.
TAG_MAX = 256
CONTENT_MAX = 16_000
# uuid5 namespace of this package's ids and key hashes.
_NS = uuid.UUID("0b8f3b8e-5f3a-4d57-9c1e-6a4f2d9b7c21")
_SAFE = re.compile(r"[a-z0-9_-]+")
_SAFE_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")
_LABEL_MAX = 40


def now_utc() -> datetime:
    return datetime.now(timezone.utc)


def iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat()


def parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


# --- tags and ids ---------------------------------------------------------------------------------
def encode_label(label: str) -> str:
    """An injective, lower-case tag segment: the service lower-cases tags for matching and splits them
    on ':' and '/', and list parameters split on ','. Plain labels stay readable; others are
    %-escaped (UTF-8); long ones become '~' + a hash (no escaped label starts with '~')."""
    if _SAFE.fullmatch(label) and len(label) <= _LABEL_MAX:
        return label
    escaped = "".join(c if c in _SAFE_CHARS else "".join(f"%{b:02x}" for b in c.encode("utf-8", "surrogatepass")) for c in label)
    if len(escaped) <= _LABEL_MAX:
        return escaped
    return "~" + hashlib.sha256(label.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def prefix_tag(prefix: tuple[str, ...]) -> str:
    """The tag every item under `prefix` carries (the root tag for the empty prefix)."""
    tag = ":".join([ROOT_TAG, *(encode_label(label) for label in prefix)])
    if len(tag) > TAG_MAX:
        raise ValueError(f"namespace {prefix!r} is too long to be stored as a tag ({len(tag)} > {TAG_MAX} characters): use fewer or shorter labels")
    return tag


def namespace_tags(namespace: tuple[str, ...]) -> list[str]:
    return [prefix_tag(namespace[:depth]) for depth in range(len(namespace) + 1)]


def _key_hash(namespace: tuple[str, ...], key: str) -> str:
    return uuid.uuid5(_NS, json.dumps([list(namespace), key], ensure_ascii=True)).hex


def key_tag(namespace: tuple[str, ...], key: str) -> str:
    return KEY_TAG_PREFIX + _key_hash(namespace, key)


def history_tag(namespace: tuple[str, ...], key: str) -> str:
    return HISTORY_KEY_TAG_PREFIX + _key_hash(namespace, key)


def head_id(bank: str | None, namespace: tuple[str, ...], key: str) -> str:
    """A new head's id. Ids are unique across banks (another bank's id is a 409), hence the bank; an
    existing head is always found by its key tag, so the spelling of the bank never splits an item."""
    return str(uuid.uuid5(_NS, json.dumps([bank or "", list(namespace), key], ensure_ascii=True)))


def history_id(head: str, updated_at: str) -> str:
    """The same version always gets the same id: a retried replacement rewrites, never duplicates."""
    return str(uuid.uuid5(_NS, f"{head}\n{updated_at}"))


# --- values ---------------------------------------------------------------------------------------
def _check_keys(value: Any, where: str) -> None:
    stack = [(value, where)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, Mapping):
            for k, v in item.items():
                if not isinstance(k, str):
                    raise TypeError(f"{path} has the key {k!r} ({type(k).__name__}): value keys must be strings to round-trip")
                stack.append((v, f"{path}.{k}"))
        elif isinstance(item, (list, tuple)):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(item))


def dump_value(value: Mapping[str, Any]) -> str:
    """The value as JSON text; refuses what would not come back equal (NaN, non-string keys)."""
    if not isinstance(value, Mapping):
        raise TypeError(f"value must be a dict, not {type(value).__name__}")
    _check_keys(value, "value")
    try:
        text = json.dumps(dict(value), ensure_ascii=False, allow_nan=False)
    except ValueError as exc:
        raise ValueError(f"value cannot be stored: {exc} (NaN and Infinity are not JSON)") from None
    except TypeError as exc:
        raise TypeError(f"value is not JSON-serialisable: {exc}") from None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: escaped, json.loads restores it exactly
        text = json.dumps(dict(value), ensure_ascii=True, allow_nan=False)
    return text


def _flatten(value: Any, path: str, out: list[str]) -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            _flatten(v, f"{path}.{k}" if path else str(k), out)
    elif isinstance(value, (list, tuple)):
        scalars = [v for v in value if isinstance(v, (str, int, float)) and not isinstance(v, bool)]
        if scalars and len(scalars) == len(value):
            out.append(f"{path}: {', '.join(map(str, scalars))}" if path else ", ".join(map(str, scalars)))
        else:
            for v in value:
                _flatten(v, path, out)
    elif value is not None and not isinstance(value, bool):
        out.append(f"{path}: {value}" if path else str(value))


def content_text(value: Mapping[str, Any], fields: list[str] | None, key: str) -> str:
    """What the service embeds: the texts at `fields` (LangGraph's path syntax), or every field as
    'path: value' lines ('$' or no fields); the key when the value holds no text."""
    lines: list[str] = []
    if not fields or fields == ["$"]:
        _flatten(value, "", lines)
    else:
        for field in fields:
            if field == "$":
                _flatten(value, "", lines)
            else:
                lines.extend(t for t in get_text_at_path(value, tokenize_path(field)) if t.strip())
    text = "\n".join(lines).strip() or key.strip() or "(empty)"
    text = text.encode("utf-8", "replace").decode("utf-8")  # lone surrogates: searchable text only
    return text[:CONTENT_MAX]


def memory_document(namespace: tuple[str, ...], key: str, value_json: str, text: str, *, memory_id: str,
                    created_at: str, updated_at: str, ttl: float | None, indexed: bool) -> dict[str, Any]:
    """The POST /memory(/batch) item of a head."""
    tags = [*namespace_tags(namespace), key_tag(namespace, key)]
    if not indexed:
        tags.append(NOINDEX_TAG)
    if ttl is not None and (not isinstance(ttl, (int, float)) or isinstance(ttl, bool) or not math.isfinite(ttl)):
        raise ValueError(f"ttl must be a finite number of minutes or None, not {ttl!r}")
    doc: dict[str, Any] = {
        "id": memory_id, "content": text, "tags": tags, "timestamp": updated_at,
        "metadata": {META: {"format": FORMAT, "kind": "item", "namespace": list(namespace), "key": key, "value_json": value_json,
                            "created_at": created_at, "updated_at": updated_at, "ttl": ttl, "indexed": indexed}},
    }
    if ttl is not None:
        doc["t_invalid"] = iso(parse_time(updated_at) + timedelta(minutes=ttl))
    return doc


def history_document(head: dict[str, Any], now: str) -> dict[str, Any]:
    """The POST item keeping a replaced head's version: its content and metadata, invalid from now."""
    meta = dict(head["metadata"][META], kind="history", head=head["id"])
    ns, key = tuple(meta["namespace"]), meta["key"]
    return {
        "id": history_id(head["id"], meta["updated_at"]), "content": head["content"], "tags": [HISTORY_TAG, history_tag(ns, key)],
        "timestamp": head.get("timestamp") or meta["updated_at"], "t_invalid": now, "metadata": {META: meta},
    }


# --- reading memories back ------------------------------------------------------------------------
def item_meta(memory: Mapping[str, Any], kind: str = "item") -> dict[str, Any] | None:
    """This package's metadata of a memory, or None for a memory someone else tagged alike."""
    meta = (memory.get("metadata") or {}).get(META)
    if not isinstance(meta, dict) or meta.get("kind") != kind or not isinstance(meta.get("namespace"), list):
        return None
    if not isinstance(meta.get("key"), str) or not isinstance(meta.get("value_json"), str):
        return None
    return meta


def expired(memory: Mapping[str, Any], now: datetime) -> bool:
    t_invalid = parse_time(memory.get("t_invalid"))
    return t_invalid is not None and t_invalid <= now


def to_item(memory: Mapping[str, Any], score: float | None = None, search: bool = False) -> Item:
    meta = memory["metadata"][META]
    fields = dict(namespace=tuple(meta["namespace"]), key=meta["key"], value=json.loads(meta["value_json"]),
                  created_at=parse_time(meta["created_at"]), updated_at=parse_time(meta["updated_at"]))
    return SearchItem(**fields, score=score) if search else Item(**fields)


# --- filters and namespace conditions (the semantics of LangGraph's InMemoryStore) -------------------
_OPERATORS = {"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"}


def check_filter(flt: Mapping[str, Any] | None) -> None:
    if flt is None:
        return
    if not isinstance(flt, Mapping):
        raise TypeError(f"filter must be a dict, not {type(flt).__name__}")
    stack = [flt]
    while stack:
        for k, v in stack.pop().items():
            if isinstance(k, str) and k.startswith("$") and k not in _OPERATORS:
                raise ValueError(f"unsupported filter operator {k!r}; supported: {', '.join(sorted(_OPERATORS))}")
            if isinstance(v, Mapping):
                stack.append(v)


def matches(value: Mapping[str, Any], flt: Mapping[str, Any] | None) -> bool:
    return not flt or all(_compare(value.get(k), v) for k, v in flt.items())


def _compare(actual: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in wanted):
            return all(_apply(actual, op, operand) for op, operand in wanted.items())
        return isinstance(actual, Mapping) and all(_compare(actual.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return (isinstance(actual, (list, tuple)) and len(actual) == len(wanted)
                and all(_compare(a, w) for a, w in zip(actual, wanted)))
    return actual == wanted


def _apply(actual: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return actual == operand
    if op == "$ne":
        return actual != operand
    try:  # ordering of a missing or non-numeric field is no match (InMemoryStore would raise)
        a, b = float(actual), float(operand)
    except (TypeError, ValueError):
        return False
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


def condition_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    pairs = zip(namespace, path) if condition.match_type == "prefix" else zip(reversed(namespace), reversed(path))
    if condition.match_type not in ("prefix", "suffix"):
        raise ValueError(f"unsupported match type {condition.match_type!r}")
    return all(p == "*" or n == p for n, p in pairs)


def scan_prefix(conditions: Iterable[MatchCondition]) -> tuple[str, ...]:
    """The longest wildcard-free head of the prefix conditions: the by-tag scan starts there."""
    best: tuple[str, ...] = ()
    for condition in conditions:
        if condition.match_type != "prefix":
            continue
        fixed: list[str] = []
        for label in condition.path:
            if label == "*":
                break
            fixed.append(label)
        if len(fixed) > len(best):
            best = tuple(fixed)
    return best
