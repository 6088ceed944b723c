"""Running a cached ONNX folder (model.onnx, tokenizer.json, meta.json) with onnxruntime + tokenizers.

torch is never imported here. The folder is written by service/embedding/onnx_files.py.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

# Measured on the 2-core machines (bench/embedder.py): 2 intra-op threads and micro-batches of ~16
# texts, each padded to its own longest text, were fastest. Texts are sorted by token length first,
# and a micro-batch also stops at ONNX_TOKEN_BUDGET padded tokens (rows x longest): padding is pure
# waste on a CPU, and with memory-sized texts (40-1,000 characters) calls of 16 texts ran at ~43/s
# unbudgeted, ~107/s with 512 and ~118/s with 256 tokens; short texts still go 16 at a time.
ONNX_THREADS = 2
# int8 runs on one intra-op thread: a query is one text a call, and for one text a second thread's
# hand-offs cost more CPU than they save time: LoCoMo questions, 3 rounds (bench/embed_query_cpu.py):
# 2 threads 3.43 ms of CPU and 2.16 ms wall per text, 1 thread 2.48 and 2.46 (fp32: 6.01 / 3.51 against
# 5.38 / 5.35). The CPU a recall does not spend here is the engine's on 2 shared cores.
ONNX_INT8_THREADS = 1
# ... and many texts (a batch write, a re-embed) go through that one-thread session from this many
# callers at once, each with its own micro-batches: LoCoMo turns 16 a call, 2 callers 380/s at 5.0 ms
# of CPU each, 1 caller 209/s at 4.8, 2 intra-op threads 212/s at 7.1 (bench.embed_batches, load ~1).
ONNX_INT8_CALLERS = 2
ONNX_MICRO_BATCH = 16
ONNX_TOKEN_BUDGET = 256


def normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


class OnnxBackend:
    """onnxruntime + tokenizers over a cached ONNX folder."""

    def __init__(
        self, folder: Path, *, quantized: bool, threads: int = 0, micro_batch: int = ONNX_MICRO_BATCH,
        token_budget: int = ONNX_TOKEN_BUDGET,
    ):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        from service.embedding.quantize import quantize_int8

        self.folder = folder
        meta = json.loads((folder / "meta.json").read_text())
        self.meta = meta
        self.name = "onnx-int8" if quantized else "onnx"
        self.dimension = int(meta["dimension"])
        self.input_names: list[str] = meta["input_names"]
        self.pad_id = int(meta["pad_id"])
        self.do_lower_case = bool(meta.get("do_lower_case"))
        # int8 quantises activations per row (service/embedding/rowquant.py), so a text's vector does
        # not depend on the texts sharing its call: both backends batch.
        self.micro_batch = micro_batch
        self.token_budget = token_budget
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        # A packaged tokenizer.json may pad and truncate at its own length (128 for all-MiniLM-L6-v2);
        # the model reads max_seq_length tokens (256 there), as sentence-transformers does.
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=int(meta["max_seq_length"]))
        options = ort.SessionOptions()
        self.threads = threads or (ONNX_INT8_THREADS if quantized else ONNX_THREADS)
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        # No spin-waiting between ops: the embedder shares 2 cores with OpenSearch, and spinning threads
        # took CPU from it (A/B on the loaded machine: memories/s 33 -> 92 with spinning off, and the
        # _msearch right after a query embedding 33-41 ms -> 28-29 ms).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        path = quantize_int8(folder) if quantized else folder / "model.onnx"
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.path = path
        # One-thread int8 sessions take several micro-batches from ONNX_INT8_CALLERS callers (session.run
        # is thread-safe and releases the GIL); made on first use.
        self.callers = ONNX_INT8_CALLERS if quantized and self.threads == 1 else 1
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    def encode(self, texts: list[str]) -> np.ndarray:
        # sentence-transformers strips each text before tokenising (and lower-cases when its
        # sentence_bert_config.json says do_lower_case).
        prepared = [t.strip() for t in texts]
        if self.do_lower_case:
            prepared = [t.lower() for t in prepared]
        encodings = self.tokenizer.encode_batch(prepared)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        batches = self._micro_batches([len(e.ids) for e in encodings])

        def run(idx: list[int]) -> None:
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

        if self.callers > 1 and len(batches) > 1:
            list(self._callers().map(run, batches))
        else:
            for idx in batches:
                run(idx)
        return normalise(out)  # int8 drifts a little from unit length

    def _callers(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.callers, thread_name_prefix="onnx")
            return self._pool

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
