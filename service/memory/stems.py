"""A memory's stems: its content and thread context as the stem sets the engram keyword component
reads (scoring.keywords.stemmed_words), stored with it (`content_stems`, `context_stems`: keyword
doc values, not indexed) so that recall ranks its hits from doc values, without reading each stored
source (service/recall/lean.py).

Every write of a memory document goes through MemoryStore, which adds them (`with_stems`): the stems
of the texts the document (whole, or a partial update such as the thread linker's) sets. A text
with no stem is written `[""]`, so that a memory written before the fields existed (no
`content_stems` at all) is told apart: recall reads that one's content. No thread context (null)
is written as null stems, as a restore or import, which leaves nulls out, rebuilds it: either way
the memory has no `context_stems`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scoring.keywords import stemmed_words

CONTENT_STEMS, CONTEXT_STEMS = "content_stems", "context_stems"
NO_STEMS: list[str] = [""]


def stems_of(text: Any) -> list[str]:
    """The stored form: sorted stems, or [""] for none."""
    words = stemmed_words(text) if isinstance(text, str) and text else frozenset()
    return sorted(words) if words else list(NO_STEMS)


def with_stems(doc: Mapping[str, Any]) -> dict[str, Any]:
    """`doc` (a whole memory or a partial update) with the stems of the texts it sets."""
    out = dict(doc)
    if "content" in doc:
        out[CONTENT_STEMS] = stems_of(doc.get("content"))
    if "thread_context" in doc:
        context = doc.get("thread_context")
        out[CONTEXT_STEMS] = None if context is None else stems_of(context)
    return out


def read_stems(values: list | None) -> frozenset[str] | None:
    """Stored stems as a set; None when the memory has none stored (written before the field)."""
    if values is None:
        return None
    return frozenset() if values == NO_STEMS else frozenset(values)


def stored_stems(source: Mapping[str, Any]) -> tuple[frozenset[str] | None, frozenset[str] | None]:
    """The stem sets of a whole stored memory's content and thread context, read from the fields
    `with_stems` wrote, so that ranking does not stem its texts again; (None, None) when they do not
    stand for its texts (written before the fields, or a thread context without its stems): ranking
    stems the texts then."""
    content = read_stems(source.get(CONTENT_STEMS))
    if content is None:
        return None, None
    if CONTEXT_STEMS in source:
        return content, read_stems(source[CONTEXT_STEMS])
    return (content, None) if not source.get("thread_context") else (None, None)
