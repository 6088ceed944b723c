"""Sentence embeddings with sentence-transformers; the model loads once, vectors are unit length.

Callers are sync route handlers, which FastAPI runs in worker threads, so encoding never blocks
the event loop. Queries go through a small LRU cache: agents repeat queries often.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence

log = logging.getLogger("engram.embedding")

QUERY_CACHE_SIZE = 1024


class EmbeddingError(RuntimeError):
    pass


class Embedder:
    def __init__(self, model: str, *, batch_size: int = 32, device: str = "cpu"):
        # No model hub is reachable here: a name that is not a local folder must already be cached.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        started = time.monotonic()
        try:
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(model, device=device)
        except Exception as exc:  # noqa: BLE001 - any loading failure is reported with the model name
            raise EmbeddingError(f"cannot load embedding model {model!r}: {exc}") from exc
        self.model_name = model
        self.batch_size = batch_size
        get_dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self.dimension = int(get_dim())
        self._cache: OrderedDict[str, list[float]] = OrderedDict()
        self._lock = threading.Lock()
        log.info("embedding model %s loaded in %.1f s (%d dims)", model, time.monotonic() - started, self.dimension)

    @property
    def short_name(self) -> str:
        return os.path.basename(self.model_name.rstrip("/")) if os.path.isdir(self.model_name) else self.model_name

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        try:
            vectors = self._model.encode(
                list(texts), batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
            )
        except Exception as exc:  # noqa: BLE001
            raise EmbeddingError(f"embedding failed: {exc}") from exc
        return vectors.tolist()

    def embed_query(self, text: str) -> list[float]:
        with self._lock:
            hit = self._cache.get(text)
            if hit is not None:
                self._cache.move_to_end(text)
                return hit
        vector = self.embed_documents([text])[0]
        with self._lock:
            self._cache[text] = vector
            if len(self._cache) > QUERY_CACHE_SIZE:
                self._cache.popitem(last=False)
        return vector
