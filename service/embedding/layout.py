"""What a sentence-transformers model folder says: its modules, pooling, sequence length and files.

Read with the standard library only (no torch, no transformers), so the service can decide at
start-up whether the built-in graph builder serves the model or sentence-transformers is needed.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from service.paths import cache_root

# Bump when the ONNX recipe of either route changes: the cache key includes it, so old files are
# never reused. 3: graphs built from safetensors; 2: torch.onnx.export of the SentenceTransformer.
EXPORT_VERSION = 3
# The transformer variants the graph builder writes (service/embedding/bert_graph.py).
GRAPH_MODEL_TYPES = ("bert",)
GRAPH_ACTIVATIONS = ("gelu", "gelu_new", "gelu_pytorch_tanh", "relu")
GRAPH_POOLING = ("mean", "cls")


class EmbeddingError(RuntimeError):
    pass


@dataclass(frozen=True)
class ModelLayout:
    """A local sentence-transformers (or plain Hugging Face) model folder, as far as we need it."""

    folder: Path
    transformer_dir: Path  # config.json, weights and tokenizer of the Transformer module
    config: dict
    modules: tuple[str, ...]  # class names of modules.json, e.g. ("Transformer", "Pooling", "Normalize")
    pooling: str  # "mean", "cls", "max", ... or "+"-joined when several modes are on
    max_seq_length: int
    do_lower_case: bool

    @property
    def weights(self) -> Path:
        return self.transformer_dir / "model.safetensors"

    @property
    def tokenizer(self) -> Path:
        return self.transformer_dir / "tokenizer.json"

    def graph_unsupported(self) -> str | None:
        """Why the built-in graph builder cannot serve this model, or None when it can."""
        cfg = self.config
        if not cfg:
            return f"no config.json in {self.transformer_dir}"
        model_type = cfg.get("model_type")
        if model_type not in GRAPH_MODEL_TYPES:
            return f"model_type {model_type!r} (the built-in ONNX builder handles {', '.join(GRAPH_MODEL_TYPES)})"
        extra = [m for m in self.modules if m not in ("Transformer", "Pooling", "Normalize")]
        if extra:
            return f"modules {', '.join(extra)} after pooling"
        if self.pooling not in GRAPH_POOLING:
            return f"pooling {self.pooling!r} (the built-in ONNX builder handles {', '.join(GRAPH_POOLING)})"
        if cfg.get("hidden_act", "gelu") not in GRAPH_ACTIVATIONS:
            return f"hidden_act {cfg.get('hidden_act')!r}"
        if cfg.get("position_embedding_type", "absolute") != "absolute":
            return f"position_embedding_type {cfg.get('position_embedding_type')!r}"
        if cfg.get("is_decoder") or cfg.get("add_cross_attention"):
            return "a decoder configuration"
        if not self.weights.is_file():
            return f"no model.safetensors in {self.transformer_dir}"
        if not self.tokenizer.is_file():
            return f"no tokenizer.json in {self.transformer_dir}"
        return None


def _read_json(path: Path) -> dict | list | None:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise EmbeddingError(f"cannot read {path}: {exc}") from exc


def _pooling_mode(config: dict) -> str:
    modes = {
        "cls": "pooling_mode_cls_token", "mean": "pooling_mode_mean_tokens", "max": "pooling_mode_max_tokens",
        "mean_sqrt_len": "pooling_mode_mean_sqrt_len_tokens", "weightedmean": "pooling_mode_weightedmean_tokens",
        "lasttoken": "pooling_mode_lasttoken",
    }
    if isinstance(config.get("pooling_mode"), str):  # newer sentence-transformers write the mode by name
        return config["pooling_mode"]
    on = [name for name, key in modes.items() if config.get(key)]
    return "+".join(on) or "none"


def read_layout(folder: Path) -> ModelLayout:
    """The layout of a local model folder; a folder without modules.json gets mean pooling, as
    sentence-transformers gives a plain Hugging Face model."""
    modules_json = _read_json(folder / "modules.json")
    modules: list[str] = []
    transformer_dir, pooling = folder, "mean"
    if isinstance(modules_json, list):
        for entry in sorted(modules_json, key=lambda m: m.get("idx", 0)):
            name = str(entry.get("type", "")).rsplit(".", 1)[-1]
            modules.append(name)
            sub = folder / entry.get("path", "")
            if name == "Transformer":
                transformer_dir = sub
            elif name == "Pooling":
                pooling = _pooling_mode(_read_json(sub / "config.json") or {})
    else:
        modules = ["Transformer", "Pooling"]
    config = _read_json(transformer_dir / "config.json")
    config = config if isinstance(config, dict) else {}
    st_config = _read_json(transformer_dir / "sentence_bert_config.json") or _read_json(folder / "sentence_bert_config.json") or {}
    tok_config = _read_json(transformer_dir / "tokenizer_config.json") or {}
    # sentence-transformers: max_seq_length from sentence_bert_config.json, else the tokenizer's and
    # the position table's limits.
    limits = [int(config.get("max_position_embeddings", 512))]
    if isinstance(tok_config.get("model_max_length"), int) and tok_config["model_max_length"] < 1_000_000:
        limits.append(tok_config["model_max_length"])
    max_seq = int(st_config.get("max_seq_length") or min(limits))
    return ModelLayout(
        folder=folder, transformer_dir=transformer_dir, config=config, modules=tuple(modules), pooling=pooling,
        max_seq_length=max_seq, do_lower_case=bool(st_config.get("do_lower_case", False)),
    )


def hub_snapshot(model: str) -> Path | None:
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


def model_folder(model: str) -> Path | None:
    """`model` as a local folder: itself, or its cached hub snapshot; None when neither exists."""
    folder = Path(model).expanduser()
    if folder.is_dir():
        return folder
    return hub_snapshot(model)


def route_for(model: str) -> tuple[str, str | None]:
    """("graph", None) when the built-in builder handles `model`, else ("export", why not)."""
    folder = model_folder(model)
    if folder is None:
        return "export", "it is not a local model folder nor a cached hub model"
    reason = read_layout(folder).graph_unsupported()
    return ("graph", None) if reason is None else ("export", reason)


def model_files_digest(model: str, route: str = "") -> str:
    """A digest of the model's files (names and contents), or of its name when no local folder is found.
    Not of the folder's path: the same model installed in another virtual environment reuses the graph."""
    folder = model_folder(model)
    digest = hashlib.sha256(f"v{EXPORT_VERSION}|{route}|{model if folder is None else ''}".encode())
    if folder is not None:
        for path in sorted(p for p in folder.rglob("*") if p.is_file() and ".git" not in p.parts and not p.name.endswith(".md")):
            digest.update(str(path.relative_to(folder)).encode())
            with open(path, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()[:16]


def onnx_cache_dir(model: str, route: str = "auto") -> Path:
    """Where the ONNX files of `model` made by `route` ("auto": route_for's) are cached:
    <cache_root>/onnx/<name>-<route>-<digest>/."""
    if route == "auto":
        route = route_for(model)[0]
    short = os.path.basename(model.rstrip("/")) or "model"
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in short)
    return cache_root() / "onnx" / f"{safe}-{route}-{model_files_digest(model, route)}"
