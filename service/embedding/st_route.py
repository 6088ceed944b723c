"""sentence-transformers on torch: the `torch` backend, and the ONNX export of models the built-in
graph builder does not handle. Both need the `models` extra (`pip install '.[models]'`).

Nothing here is imported unless one of them is used, so the default install carries no torch.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import logging
import warnings
from pathlib import Path

import numpy as np

from service.embedding.layout import EmbeddingError

log = logging.getLogger("engram.embedding")

INSTALL_HINT = "install the models extra: pip install '.[models]' (or make run MODELS=1)"


class ModelsExtraMissing(EmbeddingError):
    """The chosen model or backend needs sentence-transformers, which is not installed."""


def available() -> bool:
    return importlib.util.find_spec("sentence_transformers") is not None


def require(what: str) -> None:
    if not available():
        raise ModelsExtraMissing(f"{what} needs sentence-transformers (with torch), which is not installed: {INSTALL_HINT}")


def load(model: str, device: str = "cpu", *, eager_attention: bool = False):
    from sentence_transformers import SentenceTransformer

    if eager_attention:
        # For the export: the plain attention graph is the pattern onnxruntime fuses into its
        # Attention kernel; the SDPA graph is not fused and ran ~20% slower.
        try:
            return SentenceTransformer(model, device=device, model_kwargs={"attn_implementation": "eager"})
        except Exception as exc:  # noqa: BLE001 - some models do not take the option
            log.info("loading %s with eager attention failed (%s); exporting the default attention", model, exc)
    return SentenceTransformer(model, device=device)


def dimension_of(st) -> int:
    get_dim = getattr(st, "get_embedding_dimension", None) or st.get_sentence_embedding_dimension
    return int(get_dim())


def encode(st, texts: list[str], batch_size: int = 32) -> np.ndarray:
    return st.encode(
        texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
    ).astype(np.float32, copy=False)


class TorchBackend:
    name = "torch"

    def __init__(self, model: str, *, batch_size: int = 32, device: str = "cpu"):
        require(f"EMBEDDING_BACKEND=torch (model {model!r})")
        self.model = load(model, device)
        self.batch_size = batch_size
        self.dimension = dimension_of(self.model)

    def encode(self, texts: list[str]) -> np.ndarray:
        return encode(self.model, texts, self.batch_size)


def reference_vectors(model: str, texts: list[str]) -> tuple[np.ndarray, str]:
    """sentence-transformers fp32 vectors of `texts`, and the library's version."""
    import sentence_transformers

    return encode(load(model), texts), sentence_transformers.__version__


def export_onnx(model: str, target: Path, probe_texts: list[str]) -> tuple[dict, np.ndarray]:
    """torch.onnx.export of the whole SentenceTransformer (its modules + L2 normalisation) into
    `target` (a .onnx file), for models the graph builder does not handle; returns the meta fields
    and sentence-transformers' own vectors of `probe_texts`, to check the graph against."""
    import torch

    st = load(model, eager_attention=True)
    st.eval()
    tokenizer = getattr(st, "tokenizer", None)
    if getattr(tokenizer, "backend_tokenizer", None) is None:
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
    sample = tokenizer(list(probe_texts[:2]), padding=True, truncation=True, max_length=st.max_seq_length, return_tensors="pt")
    _torch_export(torch, wrapper, tuple(sample[n] for n in input_names), target, input_names)
    config = getattr(getattr(st[0], "auto_model", None), "config", None)
    meta = {
        "dimension": dimension_of(st),
        "max_seq_length": int(st.max_seq_length),
        "input_names": input_names,
        "pad_id": int(tokenizer.pad_token_id or 0),
        "do_lower_case": bool(getattr(st[0], "do_lower_case", False)),
        "model_type": getattr(config, "model_type", None),
        "num_heads": getattr(config, "num_attention_heads", None),
        "hidden_size": getattr(config, "hidden_size", None),
        "tokenizer_json": tokenizer.backend_tokenizer.to_str(),
    }
    return meta, encode(st, list(probe_texts))


def _torch_export(torch, wrapper, args, target: Path, input_names: list[str]) -> None:
    """torch.onnx.export: the TorchScript exporter first, the dynamo exporter (needs onnxscript) if it fails.

    Both reproduce sentence-transformers exactly; on the 2-core machines the TorchScript graph ran
    ~10% faster under onnxruntime and exports in seconds rather than ~15 s. Their tracer warnings
    and progress lines are silenced: the result is checked anyway.
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
