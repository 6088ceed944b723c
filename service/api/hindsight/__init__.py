"""Hindsight's HTTP API on the same store (spec 002): banks, retain, recall, list, tags, curation.

A thin adapter: its own request and response models (models.py), the translation into the one
internal RecallRequest (request.py) and back (response.py), the stored-memory view (views.py).
Recall runs AutoMem's pipeline (service/recall/); writes go through the MemoryWriter.
"""

from __future__ import annotations

from fastapi import APIRouter

from service.api.hindsight import routes_banks, routes_curation, routes_memories, routes_operations, routes_recall, routes_version

router = APIRouter()
router.include_router(routes_recall.router)  # .../memories/recall before .../memories/{memory_id}
router.include_router(routes_memories.router)
router.include_router(routes_curation.router)
router.include_router(routes_banks.router)
router.include_router(routes_operations.router)
router.include_router(routes_version.router)
