"""Stored fields only the engine reads: ranking aids the write path keeps up to date.

Recall reads them from `_source` to score (so they cannot be excluded at the query), and every
surface that shows a stored memory leaves them out: AutoMem's GET /memory, by-tag, graph and recall
(`detail` too), the AutoMem backup's nodes; Hindsight, Signet and the stream pick their fields by
name. The export keeps the thread's own order and context (service/admin/records.py).

A leaf module (no imports): the response layer reads it, and service.threads imports the storage.
"""

from __future__ import annotations

# Thread context (service/threads/): the thread, the place in it, and the predecessor's text.
THREAD_FIELDS: tuple[str, ...] = ("thread_key", "thread_at", "thread_seq", "thread_prev", "thread_context")
# The dates a memory speaks of and was written on (service/clock/terms.py).
DATE_FIELDS: tuple[str, ...] = ("date_terms",)
RANKING_FIELDS: tuple[str, ...] = (*THREAD_FIELDS, *DATE_FIELDS)
# Not a ranking aid, and hidden the same way: Hindsight's curation record of a memory (its revisions,
# service/api/hindsight/curation.py), which only Hindsight's views read.
CURATION_FIELDS: tuple[str, ...] = ("curation",)
