"""The int8 graph beside the fp32 one, and the quieting of onnxruntime's own logs while it works."""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from pathlib import Path

from service.embedding.rowquant import INT8_FILE, quantize_rows


def quantize_int8(folder: Path) -> Path:
    """INT8_FILE next to model.onnx: int8 weights per output channel, activations per row (rowquant.py),
    so a text's vector does not depend on the texts sharing its model call. Written once; the file's
    name carries the graph's version, so a cache written by an older build (model.int8.onnx, whose
    activation scales were per call) is never read as this graph."""
    target = folder / INT8_FILE
    if target.is_file():
        return target
    fd, tmp = tempfile.mkstemp(prefix=".model.int8-", suffix=".onnx", dir=folder)
    os.close(fd)
    try:
        quantize_rows(folder / "model.onnx", Path(tmp))
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def _drop_onnxruntime_noise(record: logging.LogRecord) -> bool:
    return "onnxruntime" not in record.pathname


@contextlib.contextmanager
def quiet_onnxruntime():
    """onnxruntime's optimiser and quantiser log through loggers of their own and the root logger:
    a hint to pre-process (it does not apply here), the model producer's name, one INFO line per
    tensor. Their records are dropped by the root handlers while they run."""
    root = logging.getLogger()
    targets = [root, *root.handlers, logging.lastResort]
    for t in targets:
        if t is not None:
            t.addFilter(_drop_onnxruntime_noise)
    try:
        yield
    finally:
        for t in targets:
            if t is not None:
                t.removeFilter(_drop_onnxruntime_noise)
