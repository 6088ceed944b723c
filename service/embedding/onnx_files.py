"""The cached ONNX folder of a model: made once, by one of two routes, then reused.

    <cache_root>/onnx/<model>-<route>-<digest>/  model.onnx, model.int8-rows-v<N>.onnx (on demand), tokenizer.json, meta.json

- route "graph" (no torch): BERT-family sentence-transformers models, written from model.safetensors
  and config.json by service/embedding/bert_graph.py;
- route "export" (the `models` extra): anything else sentence-transformers loads, through
  torch.onnx.export (service/embedding/st_route.py).

The exported graph then goes through onnxruntime's transformer optimiser (Attention,
SkipLayerNormalization, BiasGelu, EmbedLayerNormalization fusions). The built graph does not: that
optimiser needs torch (or sympy) to run, and on all-MiniLM-L6-v2 the built graph, plain, ran as fast
as the fused one in fp32 and int8 and quantised to the same int8 cosines (bench/embedder.py, 2
cores, onnxruntime 1.32: onnxruntime fuses what matters when it loads the graph).
Where sentence-transformers is installed the new graph
must reproduce it on PROBE_TEXTS before it is kept; meta.json records whether it was checked.
Folders are written under a temporary name and renamed, so concurrent processes never see half
an entry. The key (layout.onnx_cache_dir) covers the model's files, the route and EXPORT_VERSION.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from service.embedding import st_route
from service.embedding.layout import EXPORT_VERSION, EmbeddingError, model_folder, onnx_cache_dir, read_layout, route_for
from service.embedding.onnx_runtime import OnnxBackend
from service.embedding.quantize import quiet_onnxruntime

log = logging.getLogger("engram.embedding")

# A new graph must agree with sentence-transformers on these texts (cosine >= MIN_COSINE), or it is
# discarded. Mixed lengths (one longer than 128 tokens: the packaged tokenizer's own limit is 128,
# the model's max_seq_length 256) and surrounding whitespace.
MIN_COSINE = 0.9999
PROBE_TEXTS = (
    "Chose PostgreSQL over MongoDB for the primary database.",
    "  leading and trailing spaces  ",
    "ok",
    "The deploy pipeline failed because the staging cluster ran out of disk; we rotated the logs, "
    "added an alert on 80% usage and moved the artefact cache to the bigger volume. " * 4,
)


def is_complete(folder: Path) -> bool:
    return (folder / "model.onnx").is_file() and (folder / "meta.json").is_file()


def open_onnx(model: str, *, quantized: bool, route: str = "auto", threads: int = 0) -> OnnxBackend:
    """The cached ONNX folder of `model` (made now when missing), as an onnxruntime backend.
    `route` "export" forces torch.onnx.export for a model the builder handles (to compare the two)."""
    if route == "auto":
        route, reason = route_for(model)
        if route == "export":
            st_route.require(f"EMBEDDING_MODEL {model!r} ({reason})")
    elif route == "export":
        st_route.require("the export route")
    elif route != "graph":
        raise EmbeddingError(f"unknown ONNX route {route!r}; expected auto, graph or export")
    folder = onnx_cache_dir(model, route)
    if not is_complete(folder):
        started = time.monotonic()
        build(model, folder, route)
        log.info("ONNX graph of %s written by the %s route in %.1f s (%s)", model, route, time.monotonic() - started, folder)
    return OnnxBackend(folder, quantized=quantized, threads=threads)


def build(model: str, folder: Path, route: str) -> None:
    """Write the ONNX folder of `model` into `folder` by `route` ("graph" or "export")."""
    log.info("building the ONNX graph of %s (%s route, once per model) into %s ...", model, route, folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        fusions = None
        if route == "graph":
            meta, reference = _graph_route(model, tmp / "model.onnx", tmp / "tokenizer.json")
        else:
            raw = tmp / "raw.onnx"
            meta, reference = _export_route(model, raw, tmp / "tokenizer.json")
            fusions = fuse_transformer(raw, tmp / "model.onnx", meta.pop("model_type"), meta.pop("num_heads"), meta.pop("hidden_size"))
            if fusions is None:
                os.replace(raw, tmp / "model.onnx")
            else:
                raw.unlink()
        meta.update(model=model, route=route, export_version=EXPORT_VERSION, fusions=fusions,
                    built_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2))
        got = OnnxBackend(tmp, quantized=False).encode(list(PROBE_TEXTS))
        if got.shape != (len(PROBE_TEXTS), meta["dimension"]) or not np.isfinite(got).all():
            raise EmbeddingError(f"the ONNX graph of {model} gives malformed vectors {got.shape}")
        if reference is not None:
            worst = float(np.min(np.sum(reference * got, axis=1)))
            if worst < MIN_COSINE:
                raise EmbeddingError(f"the ONNX graph of {model} disagrees with sentence-transformers (worst cosine {worst:.5f})")
            meta["checked_cosine_min"] = round(worst, 6)
            (tmp / "meta.json").write_text(json.dumps(meta, indent=2))
        try:
            os.rename(tmp, folder)
        except OSError:
            if not is_complete(folder):
                raise
            # Another process built the same model first: keep theirs.
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _graph_route(model: str, target: Path, tokenizer_target: Path) -> tuple[dict, np.ndarray | None]:
    import onnx

    from service.embedding.bert_graph import build_graph, input_names

    folder = model_folder(model)
    if folder is None:
        raise EmbeddingError(f"{model!r} is not a local model folder: the built-in ONNX builder reads its files")
    layout = read_layout(folder)
    graph = build_graph(layout)
    onnx.save(graph, str(target))
    _save_tokenizer(layout.tokenizer.read_text(), tokenizer_target)
    cfg = layout.config
    meta = {
        "dimension": int(cfg["hidden_size"]), "max_seq_length": layout.max_seq_length, "input_names": input_names(graph),
        "pad_id": int(cfg.get("pad_token_id") or 0), "do_lower_case": layout.do_lower_case, "pooling": layout.pooling,
        "checked_against": None,
    }
    reference = None
    if st_route.available():  # the models extra is installed: check the graph against it
        reference, version = st_route.reference_vectors(model, list(PROBE_TEXTS))
        meta["checked_against"] = f"sentence-transformers {version}"
    return meta, reference


def _export_route(model: str, target: Path, tokenizer_target: Path) -> tuple[dict, np.ndarray]:
    import sentence_transformers

    meta, reference = st_route.export_onnx(model, target, list(PROBE_TEXTS))
    _save_tokenizer(meta.pop("tokenizer_json"), tokenizer_target)
    meta["checked_against"] = f"sentence-transformers {sentence_transformers.__version__}"
    return meta, reference


def _save_tokenizer(text: str, target: Path) -> None:
    from tokenizers import Tokenizer

    fast = Tokenizer.from_str(text)
    fast.no_padding()
    fast.no_truncation()
    fast.save(str(target))


def fuse_transformer(source: Path, target: Path, model_type, heads, hidden) -> dict[str, int] | None:
    """onnxruntime's transformer optimiser for the model types it knows (exported graphs); None when it
    does not apply or fails. On the exported all-MiniLM-L6-v2 the fused graph was as exact and a little
    faster (2 cores, onnxruntime 1.2x); the optimiser's first pass imports torch, which the export
    route has anyway."""
    if model_type not in ("bert",) or not heads or not hidden:
        return None
    try:
        from onnxruntime.transformers.optimizer import optimize_model

        with quiet_onnxruntime():
            optimized = optimize_model(str(source), model_type=model_type, num_heads=int(heads), hidden_size=int(hidden))
            fused = {k: int(v) for k, v in optimized.get_fused_operator_statistics().items() if v}
            optimized.save_model_to_file(str(target))
        return fused
    except Exception as exc:  # noqa: BLE001 - the unfused graph works too
        log.info("onnxruntime transformer fusions failed (%s); keeping the plain graph", exc)
        return None
