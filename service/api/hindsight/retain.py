"""Retain without a language model: each item is stored as given, through the MemoryWriter.

- An item longer than the chunk size (the bank's retain_chunk_size, else
  HINDSIGHT_RETAIN_CHUNK_CHARS) is cut at paragraph, then sentence, then word boundaries; each chunk
  is one memory with `document_id` and `chunk_id` = "<document_id>:<chunk_index>". An item without
  document_id that had to be cut gets its first chunk's id as document_id.
- Items of a document get ids derived from (bank, document_id, chunk index), so retaining a document
  again overwrites it; `update_mode: replace` (the default) then deletes the chunks the new version no
  longer has, `append` numbers the new chunks after the stored ones. Other items get ids derived from
  `operation_id` when given (an idempotent retry), else random ones.
- `fact_type` is `world` or `experience` by the rules of facts.py; caller `entities` are kept in
  metadata.entities ({type: [names]}, AutoMem's shape, so enrichment and entity expansion use them);
  `document_tags` join each item's tags; `timestamp: "unset"` stores a timeless memory.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError

from service.api.hindsight.facts import classify_fact
from service.api.hindsight.models import MemoryItem, RetainBody
from service.memory.models import MemoryCreate
from service.clock.instants import iso

# Ids of retained memories: uuid5 in a namespace of their own.
RETAIN_NAMESPACE = uuid.UUID("3b0c8f0e-52a1-4d7e-9b6f-2f1c9a7d4e11")
_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


class RetainedMemory(MemoryCreate):
    """A MemoryCreate carrying Hindsight's own stored fields (MemoryWriter stores surface_fields())."""

    fact_type: str = "world"
    document_id: str | None = None
    chunk_id: str | None = None
    chunk_index: int | None = None
    context: str | None = None
    timeless: bool = False

    def surface_fields(self) -> dict[str, Any]:
        fields = {"fact_type": self.fact_type, "document_id": self.document_id, "chunk_id": self.chunk_id,
                  "chunk_index": self.chunk_index, "context": self.context}
        out = {k: v for k, v in fields.items() if v is not None}
        if self.timeless:
            out["timeless"] = True
        return out


def _pieces(text: str, pattern: re.Pattern, max_chars: int) -> list[str]:
    return [p for p in (q.strip() for q in pattern.split(text)) if p] if len(text) > max_chars else [text.strip()]


def _words(text: str, max_chars: int) -> list[str]:
    out, current = [], ""
    for word in text.split():
        while len(word) > max_chars:  # one unbroken run longer than a chunk
            if current:
                out.append(current)
                current = ""
            out.append(word[:max_chars])
            word = word[max_chars:]
        if current and len(current) + 1 + len(word) > max_chars:
            out.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    return out + ([current] if current else [])


def chunk_text(text: str, max_chars: int) -> list[str]:
    """`text` as chunks of at most `max_chars`, cut at paragraph, sentence, then word boundaries;
    neighbouring pieces are packed together while they fit (sentences joined by a space, paragraphs
    by a blank line). Never an empty chunk."""
    if len(text) <= max_chars:
        return [text]
    units: list[tuple[str, str]] = []  # (piece, what joins it to the previous one)
    for para in _pieces(text, _PARAGRAPH, max_chars):
        joiner = "\n\n"
        for sentence in _pieces(para, _SENTENCE, max_chars):
            for piece in [sentence] if len(sentence) <= max_chars else _words(sentence, max_chars):
                units.append((piece, joiner))
                joiner = " "
    chunks, current = [], ""
    for piece, joiner in units:
        joined = f"{current}{joiner}{piece}" if current else piece
        if current and len(joined) > max_chars:
            chunks.append(current)
            current = piece
        else:
            current = joined
    return chunks + ([current] if current else [])


def item_text(item: MemoryItem, at: int = 0) -> str:
    """The item's text (item `at` of the request); content blocks may only be text (images and files
    need a vision model): any other block is Hindsight's validation 422, naming the block."""
    if isinstance(item.content, str):
        return item.content
    parts = []
    for i, block in enumerate(item.content):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind != "text" or not isinstance(block.get("text"), str):
            raise RequestValidationError([{
                "type": "value_error", "loc": ("body", "items", at, "content", i), "input": kind,
                "msg": f"a {kind!r} block: only text blocks can be retained (images and files need a vision-capable model, and none is configured)",
            }])
        parts.append(block["text"])
    return "\n".join(parts)


def stored_timestamp(value: Any) -> tuple[str | None, bool]:
    """(ISO timestamp or None = now, timeless)."""
    if value is None or value == "":
        return None, False
    if isinstance(value, datetime):
        return iso(value if value.tzinfo else value.replace(tzinfo=timezone.utc)), False
    if isinstance(value, str) and value.strip().lower() == "unset":
        return None, True
    return str(value), False  # the writer parses and refuses a bad one (400 naming the item)


def entities_metadata(item: MemoryItem) -> dict[str, list[str]] | None:
    if not item.entities:
        return None
    out: dict[str, list[str]] = {}
    for e in item.entities:
        names = out.setdefault((e.type or "concept").strip().lower() or "concept", [])
        if e.text.strip() and e.text.strip() not in names:
            names.append(e.text.strip())
    return out


def derived_id(*parts: str) -> str:
    return str(uuid.uuid5(RETAIN_NAMESPACE, "\n".join(parts)))


@dataclass
class Plan:
    memories: list[RetainedMemory]
    documents: dict[str, list[str]]  # document_id -> ids of its chunks in this request (replace mode)


def plan_retain(body: RetainBody, bank: str, chunk_chars: int, next_index: dict[str, int] | None = None) -> Plan:
    """The memories a retain request stores (pure). `next_index` gives, per document retained in
    `append` mode, the chunk index its new chunks start at."""
    next_index = dict(next_index or {})
    counters: dict[str, int] = {}
    documents: dict[str, list[str]] = {}
    out: list[RetainedMemory] = []
    op = body.operation_id or uuid.uuid4().hex
    for i, item in enumerate(body.items):
        text = item_text(item, i)
        kind = classify_fact(text)
        timestamp, timeless = stored_timestamp(item.timestamp)
        tags = list(dict.fromkeys([*(item.tags or []), *(body.document_tags or [])]))
        metadata: dict[str, Any] = dict(item.metadata or {})
        entities = entities_metadata(item)
        if entities:
            metadata["entities"] = entities
        chunks = chunk_text(text, chunk_chars) if text.strip() else [text]
        doc = item.document_id
        doc_of_item: str | None = None  # an undocumented item cut into chunks: its first chunk's id
        for j, chunk in enumerate(chunks):
            if doc is not None:
                index = counters.get(doc, next_index.get(doc, 0))
                counters[doc] = index + 1
                mid = derived_id(bank, "document", doc, str(index))
                documents.setdefault(doc, []).append(mid)
            else:
                index = j
                mid = derived_id(bank, "operation", op, str(i), str(j))
                if j == 0 and len(chunks) > 1:
                    doc_of_item = mid
            document_id = doc if doc is not None else doc_of_item
            try:
                out.append(RetainedMemory(
                    id=mid, content=chunk, tags=tags, metadata=metadata or None, timestamp=timestamp,
                    fact_type=kind, document_id=document_id,
                    chunk_id=f"{document_id}:{index}" if document_id is not None else None,
                    chunk_index=index if document_id is not None else None, context=item.context, timeless=timeless,
                ))
            except ValidationError as exc:  # e.g. blank content: Hindsight's 422, naming the item
                raise RequestValidationError([{**e, "loc": ("body", "items", i, *e["loc"])} for e in exc.errors(include_url=False)]) from None
    return Plan(out, documents)


def append_documents(body: RetainBody) -> list[str]:
    """Documents whose new chunks go after the stored ones."""
    return sorted({item.document_id for item in body.items if item.document_id and item.update_mode == "append"})


def replaced_documents(plan: Plan, body: RetainBody) -> dict[str, list[str]]:
    appended = set(append_documents(body))
    return {doc: ids for doc, ids in plan.documents.items() if doc not in appended}


def stale_chunks_query(bank: str, document_id: str, keep: Sequence[str]) -> dict:
    """The stored chunks of a replaced document that its new version does not have."""
    return {"bool": {"filter": [{"term": {"bank": bank}}, {"term": {"document_id": document_id}}], "must_not": [{"ids": {"values": list(keep)}}]}}


def max_chunk_body(bank: str, documents: Sequence[str]) -> dict:
    """The highest stored chunk index of each document (append mode)."""
    return {"size": 0, "query": {"bool": {"filter": [{"term": {"bank": bank}}, {"terms": {"document_id": list(documents)}}]}},
            "aggs": {"docs": {"terms": {"field": "document_id", "size": len(documents)}, "aggs": {"top": {"max": {"field": "chunk_index"}}}}}}


def parse_max_chunk(resp: dict) -> dict[str, int]:
    out = {}
    for b in resp.get("aggregations", {}).get("docs", {}).get("buckets", []):
        value = b.get("top", {}).get("value")
        out[str(b["key"])] = int(value) + 1 if value is not None else 0
    return out
