"""Request and response models of the graph API (spec 003: POST /associate, GET /memories/{id}/related,
GET / DELETE /memory/by-tag).

POST /associate validates each batch item on its own (a bad item fails alone, with a 207), so the
route reads the body as JSON and `service.graph.registry.validate_association` checks every item; the
models here document the shapes for the OpenAPI page and type the responses.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from service.graph.registry import ALL_TYPES, AUTHORABLE_TYPES, DEFAULT_STRENGTH, DEFAULT_TYPE, MAX_BATCH
from service.api.query_model import QueryModel, list_aliases


class AssociationIn(BaseModel):
    """One edge memory1 -> memory2. Type-specific properties ride along as extra fields."""

    model_config = ConfigDict(extra="allow")

    memory1_id: str = Field(..., description="The edge's source memory")
    memory2_id: str = Field(..., description="The edge's target memory (must differ from memory1_id)")
    type: str = Field(DEFAULT_TYPE, description="One of " + ", ".join(AUTHORABLE_TYPES) + " (case-insensitive)")
    strength: float = Field(DEFAULT_STRENGTH, ge=0.0, le=1.0, description="0-1")


def association_body_schema() -> dict[str, Any]:
    """The request body for the OpenAPI page: one AssociationIn, or {"associations": [AssociationIn, ...]}."""
    one = AssociationIn.model_json_schema()
    batch = {
        "type": "object", "title": "AssociationBatchIn", "required": ["associations"],
        "properties": {"associations": {"type": "array", "items": one, "minItems": 1, "maxItems": MAX_BATCH}},
    }
    return {"anyOf": [one, batch]}


class AssociateResponse(BaseModel):
    model_config = ConfigDict(extra="allow")  # the type's properties are echoed too

    status: str = "success"
    message: str
    memory1_id: str
    memory2_id: str
    relation_type: str
    strength: float


class AssociateBatchResponse(BaseModel):
    status: str = Field("success", description="success (201) or partial_success (207)")
    created_count: int
    failed_count: int
    succeeded: list[dict[str, Any]] = Field(..., description="index, memory1_id, memory2_id, relation_type, strength")
    failed: list[dict[str, Any]] = Field(..., description="index, the ids given, reason")
    summary: str


class RelatedMemory(BaseModel):
    model_config = ConfigDict(extra="allow")  # the memory's stored fields

    id: str
    depth: int = Field(..., description="Hops from the start memory (1-3)")
    path: list[str] = Field(..., description="Memory ids from the start memory to this one")
    relation: dict[str, Any] = Field(..., description="The edge that reached it: type, strength, source_id, target_id, direction")


class RelatedResponse(BaseModel):
    status: str = "success"
    memory_id: str
    count: int
    related_memories: list[RelatedMemory]
    relationship_types: list[str]
    max_depth: int
    limit: int


class ByTagResponse(BaseModel):
    status: str = "success"
    tags: list[str]
    count: int
    limit: int
    offset: int
    has_more: bool
    memories: list[dict[str, Any]]


class DeleteByTagResponse(BaseModel):
    status: str = "success"
    tags: list[str]
    deleted_count: int = Field(..., description="Memories deleted")
    matched_count: int = Field(..., description="Memories that carried a tag when the request started")
    edges_deleted: int = Field(..., description="Edges with an end among the deleted memories")
    supersessions_cleared: int = Field(..., description="Memories that were superseded by a deleted one and are current again")


# spec 003 / AutoMem memories_by_tag: limit 20 by default, at most 200 (clamped).
BY_TAG_DEFAULT_LIMIT, BY_TAG_MAX_LIMIT = 20, 200
BY_TAG_MAX_TAGS = 200
# from + size may not pass the engine's index.max_result_window (10,000 by default).
BY_TAG_MAX_WINDOW = 10_000


class TagsQuery(QueryModel):
    """`tags` (required): repeated or comma-separated, also `tags[]`; exact, case-insensitive."""

    aliases: ClassVar[dict[str, str]] = list_aliases("tags")
    list_fields: ClassVar[tuple[str, ...]] = ("tags",)

    tags: list[str] = Field(..., min_length=1, max_length=BY_TAG_MAX_TAGS, description="Memories carrying any of these tags (exact, case-insensitive)")


class ByTagQuery(TagsQuery):
    limit: int = Field(BY_TAG_DEFAULT_LIMIT, ge=1, description=f"Page size; above {BY_TAG_MAX_LIMIT} it is clamped")
    offset: int = Field(0, ge=0, description=f"Memories to skip; offset + limit at most {BY_TAG_MAX_WINDOW}")

    @property
    def page_size(self) -> int:
        return min(self.limit, BY_TAG_MAX_LIMIT)


class RelatedQuery(QueryModel):
    list_fields: ClassVar[tuple[str, ...]] = ("relationship_types",)

    relationship_types: list[str] = Field(
        default_factory=list, max_length=len(ALL_TYPES),
        description="Edge types to follow (case-insensitive); default the 11 authorable types. SIMILAR_TO, PRECEDED_BY and DISCOVERED only when named",
    )
    max_depth: int = Field(1, ge=1, le=3, description="Hops from the memory (1-3)")
    limit: int | None = Field(None, ge=1, description="Related memories at most (default RECALL_RELATION_LIMIT, 5; above 200 clamped)")
