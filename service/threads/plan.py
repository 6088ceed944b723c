"""Thread context, planned by pure functions: which thread a memory is in, its place there, the
engine queries that find its neighbours, and who gets which context.

A memory of a thread (metadata `session_id` / `conversation_id` / `thread_id`, every one given, else
`session:` / `conversation:` tags: the keys enrichment's PRECEDED_BY uses) is indexed with the text of the memory
before it in that thread, in `thread_context`: recall matches a question against the turn a memory
answers ("What did you do yesterday?" -> "Went camping"). The stored content stays as given.

A memory that names no thread may still be in one the client did not name:
- a Hindsight document's chunks and items (`document_id`, Hindsight's own grouping): `document:<id>`;
- an inferred burst (THREAD_INFER_ENABLED, default on): memories of one bank with the same tag set
  and the same timestamp, as stated by the client, are one thread (`burst:<tags hash>@<epoch ms>`).
  A client that stamps the turns of a session with the session's time sends exactly that (LoCoMo's
  turns, a transcript imported session by session). Only a stated timestamp counts: one the service
  gave (none sent) says nothing of the client's grouping, and an agent's notes written one after
  another carry their own instants, so they never share one (docs/quality.md, issue 26).

Order in a thread: the memory's timestamp, then `thread_seq` (when it was written, and its place in
its batch), so turns that share a timestamp keep the order they were sent in.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from service.memory.codec import THREAD_FIELDS
from service.memory.tags import hierarchy_key, normalize_tag
from service.clock.instants import stored_datetime

# The metadata keys that name a thread, in the order they are joined (AutoMem clients send session_id);
# the same keys enrichment's PRECEDED_BY follows.
THREAD_KEYS: tuple[str, ...] = ("session_id", "conversation_id", "thread_id")
THREAD_TAG_ROOTS: tuple[str, ...] = ("session", "conversation")
# A thread key is a keyword; ids longer than this are not thread ids.
MAX_KEY = 256
# How much of the predecessor is kept: its end (a turn's question closes it), at most this many
# characters; conversation turns are far shorter, long notes keep their last paragraph or so.
CONTEXT_MAX_CHARS = 1_000
# thread_seq = write time in microseconds x SEQ_SLOTS + place in the batch (POST /memory/batch takes at
# most 500): a long holds it until the year 2262.
SEQ_SLOTS = 1_000
# The stored fields (index_templates/memories.json); no response shows them (service/memory/codec.py).
FIELDS = THREAD_FIELDS


def thread_key(tags: Sequence[str], metadata: Mapping[str, Any]) -> str | None:
    """The thread a memory is in: `session:<id>`, `conversation:<id>` and `thread:<id>` from the
    metadata, every one given, joined (`session:1/conversation:c-7`): such ids are often unique only
    within another (AutoMem's own benchmark numbers sessions 1, 2, ... in every conversation, so
    "session 1" alone would thread every conversation's first session together). Else the first
    `session:` and the first `conversation:` tag (hierarchy form), joined the same way. None when the
    memory names no thread."""
    parts: list[str] = []
    if isinstance(metadata, Mapping):
        for key in THREAD_KEYS:
            value = metadata.get(key)
            if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip():
                parts.append(f"{key.removesuffix('_id')}:{str(value).strip()}")
    if not parts:
        by_root: dict[str, str] = {}
        for tag in tags:
            key = hierarchy_key(tag)
            root, _, rest = key.partition(":")
            if root in THREAD_TAG_ROOTS and rest:
                by_root.setdefault(root, key)
        parts = [by_root[root] for root in THREAD_TAG_ROOTS if root in by_root]
    return "/".join(parts)[:MAX_KEY] if parts else None


def epoch_ms(timestamp: str | None) -> int | None:
    at = stored_datetime(timestamp)
    return None if at is None else int(at.timestamp() * 1000)


# Roots of the keys of threads no client named (so a PATCH knows a memory's thread was inferred).
DOCUMENT_ROOT, BURST_ROOT = "document", "burst"


def burst_key(tags: Sequence[str], at_ms: int) -> str:
    """The inferred thread of the memories with this tag set (normalised, any order, duplicates
    ignored) stated at this instant."""
    names = sorted({normalize_tag(t) for t in tags})
    digest = hashlib.sha1("\n".join(names).encode("utf-8", "surrogatepass")).hexdigest()[:20]
    return f"{BURST_ROOT}:{digest}@{at_ms}"


def thread_position(
    tags: Sequence[str], metadata: Mapping[str, Any], timestamp: str | None, *,
    document_id: str | None = None, stated: bool = False, infer: bool = True,
) -> dict[str, Any]:
    """The thread a memory being written is in and its time there (None, None for no thread); the
    linker adds its sequence number and context. The named thread (thread_key) first, else its
    Hindsight document, else (`infer`, and the client `stated` the timestamp) its burst."""
    key = thread_key(tags, metadata)
    at = epoch_ms(timestamp)
    if key is None and isinstance(document_id, str) and document_id.strip():
        key = f"{DOCUMENT_ROOT}:{document_id.strip()}"[:MAX_KEY]
    if key is None and infer and stated and at is not None:
        key = burst_key(tags, at)
    return {"thread_key": key, "thread_at": at if key else None}


def inferred(key: str | None) -> bool:
    """Whether a stored thread key is a burst (inferred from a stated timestamp), not a named thread."""
    return bool(key) and key.startswith(f"{BURST_ROOT}:")


def context_of(content: str | None) -> str | None:
    """What a successor keeps of `content`: its last CONTEXT_MAX_CHARS, cut at a word boundary."""
    text = (content or "").strip()
    if len(text) <= CONTEXT_MAX_CHARS:
        return text or None
    tail = text[-CONTEXT_MAX_CHARS:]
    space = tail.find(" ")
    return tail[space + 1:] if 0 <= space < CONTEXT_MAX_CHARS // 4 else tail


@dataclass(frozen=True)
class Member:
    """A memory's place in its thread."""

    id: str
    key: str
    at: int
    seq: int
    content: str = ""
    prev: str | None = None  # stored: the id its context came from, and that context
    context: str | None = None

    @property
    def order(self) -> tuple[int, int, str]:
        return (self.at, self.seq, self.id)

    @classmethod
    def of(cls, mid: str, source: Mapping[str, Any]) -> Member | None:
        if not source.get("thread_key") or source.get("thread_at") is None:
            return None
        return cls(
            mid, source["thread_key"], int(source["thread_at"]), int(source.get("thread_seq") or 0), source.get("content") or "",
            source.get("thread_prev"), source.get("thread_context"),
        )


# --- queries -------------------------------------------------------------------------------------
MEMBER_SOURCE = ["thread_key", "thread_at", "thread_seq", "thread_prev", "thread_context", "content"]


def neighbour_query(bank: str, m: Member, exclude: Sequence[str], *, before: bool, size: int = 1) -> dict:
    """The stored members of m's thread just before (or after) m, nearest first; `exclude` are the
    memories being written (their stored versions are about to be replaced)."""
    op, order = ("lt", "desc") if before else ("gt", "asc")
    must_not = [{"ids": {"values": sorted(set(exclude))}}] if exclude else []
    return {
        "size": size, "_source": MEMBER_SOURCE,
        "query": {"bool": {
            "filter": [{"term": {"bank": bank}}, {"term": {"thread_key": m.key}}],
            "must_not": must_not,
            "should": [
                {"range": {"thread_at": {op: m.at}}},
                {"bool": {"filter": [{"term": {"thread_at": m.at}}, {"range": {"thread_seq": {op: m.seq}}}]}},
            ],
            "minimum_should_match": 1,
        }},
        "sort": [{"thread_at": order}, {"thread_seq": order}, {"id": order}],
    }


def successors_query(bank: str, ids: Sequence[str], exclude: Sequence[str] = (), size: int = 1_000) -> dict:
    """Stored memories whose context came from one of `ids` (to refresh after those change)."""
    must_not = [{"ids": {"values": sorted(set(exclude))}}] if exclude else []
    return {
        "size": size, "_source": MEMBER_SOURCE,
        "query": {"bool": {"filter": [{"term": {"bank": bank}}, {"terms": {"thread_prev": sorted(set(ids))}}], "must_not": must_not}},
        "sort": [{"id": "asc"}],
    }


# --- who gets which context ---------------------------------------------------------------------------
@dataclass
class Links:
    """Each batch member's predecessor, and the stored memories whose predecessor changed (a memory
    written out of order now stands before them, or the one before them changed or went away)."""

    prev: dict[str, Member | None] = field(default_factory=dict)  # batch id -> its predecessor
    repoint: dict[str, tuple[Member, Member | None]] = field(default_factory=dict)  # stored id -> (it, its predecessor)


def nearest(*members: Member | None) -> Member | None:
    """The latest of the given members: the nearest one before whoever they all precede."""
    present = [m for m in members if m is not None]
    return max(present, key=lambda m: m.order) if present else None


def plan_links(
    batch: Sequence[Member], before: Mapping[str, Member | None], after: Mapping[str, Member | None],
    stale: Sequence[Member] = (), stale_before: Mapping[str, Member | None] | None = None,
) -> Links:
    """`batch`: the members being written, any order, any threads. `before` / `after`: per batch
    member, the stored member of its thread just before / after it (the batch left out). `stale`:
    stored members whose context came from a batch member (or a deleted one), with `stale_before`
    the stored member just before each (the batch left out).

    A batch member's predecessor is the nearer of the previous batch member and the stored one
    before it. A stored member right after a batch member, with no batch member in between, takes it
    as its predecessor (written out of order). A stale member takes the nearest of the batch members
    before it and the stored one before it."""
    out = Links()
    threads: dict[str, list[Member]] = {}
    for m in batch:
        threads.setdefault(m.key, []).append(m)
    for members in threads.values():
        members.sort(key=lambda m: m.order)
        for i, m in enumerate(members):
            out.prev[m.id] = nearest(members[i - 1] if i else None, before.get(m.id))
            later = after.get(m.id)
            following = members[i + 1] if i + 1 < len(members) else None
            if later is not None and (following is None or later.order < following.order):
                out.repoint[later.id] = (later, m)
    for t in stale:
        if t.id in out.repoint or t.id in out.prev:
            continue
        earlier = [m for m in threads.get(t.key, ()) if m.order < t.order]
        out.repoint[t.id] = (t, nearest(*earlier, (stale_before or {}).get(t.id)))
    return out


def context_fields(prev: Member | None) -> dict[str, Any]:
    return {"thread_prev": prev.id if prev else None, "thread_context": context_of(prev.content) if prev else None}


def stored_updates(links: Links) -> list[tuple[str, dict[str, Any]]]:
    """(id, partial document) for every stored member whose context changes."""
    out = []
    for mid, (member, prev) in sorted(links.repoint.items()):
        fields = context_fields(prev)
        if (member.prev, member.context) != (fields["thread_prev"], fields["thread_context"]):
            out.append((mid, fields))
    return out
