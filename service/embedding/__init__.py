"""Sentence embeddings; the model loads once, vectors are unit length.

Three backends, chosen by EMBEDDING_BACKEND (measured by `python -m bench.embedder`; the default
and why: docs/perf/embedding.md):

- `onnx`: the model's ONNX graph, run with onnxruntime and the model's fast tokenizer
  (`tokenizers`). For BERT-family sentence-transformers models (all-MiniLM-L6-v2, the default) the
  graph is written straight from model.safetensors and config.json, without torch
  (bert_graph.py); any other model is exported once with torch.onnx.export, which needs the
  `models` extra (st_route.py). Exact: cosine >= 0.99999 to sentence-transformers fp32.
- `onnx-int8` (default): the same graph with int8 MatMuls, weights per output channel and
  activations per token row (rowquant.py), so a text's vector does not depend on its batch. Faster;
  cosine ~0.997 to fp32, so rankings move a little. Its vectors carry their own model id, versioned
  with the graph (Embedder.short_name).
- `torch`: plain sentence-transformers (the `models` extra).

Modules: embedder.py (the Embedder facade), layout.py (what a model folder says; the cache
folder), bert_graph.py (the graph builder), onnx_files.py (the cached ONNX folder, fusions, int8),
rowquant.py and quantize.py (the int8 graph), onnx_runtime.py (onnxruntime + tokenizers), st_route.py
(sentence-transformers and torch), batcher.py (concurrent single-text calls gathered into one model
call: the write path's).
"""

from service.embedding.embedder import BACKENDS, QUERY_CACHE_SIZE, Embedder, check_model
from service.embedding.batcher import MicroBatcher
from service.embedding.layout import EmbeddingError, model_files_digest, onnx_cache_dir
from service.embedding.onnx_runtime import OnnxBackend
from service.embedding.st_route import ModelsExtraMissing

__all__ = [
    "BACKENDS", "QUERY_CACHE_SIZE", "Embedder", "EmbeddingError", "MicroBatcher", "ModelsExtraMissing", "OnnxBackend",
    "check_model", "model_files_digest", "onnx_cache_dir",
]
