"""The per-row int8 graph (service/embedding/rowquant.py): a MatMul against numpy's per-row int8
arithmetic, and a tiny random BERT whose rows do not depend on their batch. The real model's vectors
(alone vs in batches, and against fp32) are checked in tests/integration/test_embedding_backends.py."""

from __future__ import annotations

import numpy as np
import pytest

from service.embedding.bert_graph import build_graph, input_names
from service.embedding.layout import read_layout
from service.embedding.rowquant import quantize_rows
from tests.unit.test_embedding_graph import batch, write_model


def session(path):
    import onnxruntime as ort

    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def matmul_graph(tmp_path, w: np.ndarray):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "fp32.onnx"))
    assert quantize_rows(tmp_path / "fp32.onnx", tmp_path / "int8.onnx") == 1
    return session(tmp_path / "int8.onnx")


def per_row_int8(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The arithmetic the graph stands for, in numpy: symmetric int8 rows and weight columns."""
    ws = np.abs(w).max(axis=0) / 127
    wq = np.round(w / ws)
    rows = x.reshape(-1, x.shape[-1])
    scale = np.abs(rows).max(axis=1, keepdims=True) / 127
    xq = np.round(rows / scale)
    return ((xq @ wq) * scale * ws).reshape(*x.shape[:-1], w.shape[1])


@pytest.mark.parametrize("shape", [(5, 24), (2, 7, 24), (24,)])
def test_a_matmul_is_int8_per_row(tmp_path, shape):
    rng = np.random.default_rng(1)
    w = rng.standard_normal((24, 10)).astype(np.float32)
    x = (rng.standard_normal(shape) * rng.uniform(0.1, 10, size=(*shape[:-1], 1))).astype(np.float32)  # rows of very different ranges
    got = matmul_graph(tmp_path, w).run(None, {"x": x})[0]
    assert got.shape == (*shape[:-1], 10)
    np.testing.assert_allclose(got, per_row_int8(x.astype(np.float64), w.astype(np.float64)), rtol=1e-5, atol=1e-4)
    assert np.abs(got - x @ w).max() < 0.05 * np.abs(x @ w).max()


def test_a_row_does_not_depend_on_the_others(tmp_path):
    """One row with outliers beside ordinary ones: per-tensor scales would coarsen every row; here none moves."""
    rng = np.random.default_rng(2)
    w = rng.standard_normal((24, 10)).astype(np.float32)
    rows = rng.standard_normal((4, 24)).astype(np.float32)
    loud = rows.copy()
    loud[2] *= 1000
    s = matmul_graph(tmp_path, w)
    quiet_out, loud_out = s.run(None, {"x": rows})[0], s.run(None, {"x": loud})[0]
    np.testing.assert_array_equal(quiet_out[[0, 1, 3]], loud_out[[0, 1, 3]])
    np.testing.assert_array_equal(s.run(None, {"x": rows[1:2]})[0], quiet_out[1:2])
    assert np.all(s.run(None, {"x": np.zeros((2, 24), np.float32)})[0] == 0)  # an all-zero row: a finite scale, zeros out


def test_a_tiny_bert_keeps_its_vectors_alone_and_in_a_batch(tmp_path):
    import onnx

    write_model(tmp_path)
    onnx.save(build_graph(read_layout(tmp_path)), str(tmp_path / "model.onnx"))
    assert quantize_rows(tmp_path / "model.onnx", tmp_path / "int8.onnx") == 12  # 2 layers x (Q, K, V, out, up, down)
    fp32, int8 = session(tmp_path / "model.onnx"), session(tmp_path / "int8.onnx")
    ids, types, mask = batch()
    names = input_names(build_graph(read_layout(tmp_path)))

    def run(s, rows, width=None):
        feeds = {"input_ids": ids[rows, :width], "token_type_ids": types[rows, :width], "attention_mask": mask[rows, :width]}
        return s.run(None, {n: feeds[n] for n in names})[0]

    together = run(int8, slice(0, 3))
    for i, width in ((0, 8), (1, 4), (2, 6)):  # each text alone, unpadded
        np.testing.assert_allclose(run(int8, slice(i, i + 1), width), together[i:i + 1], atol=1e-6)
    assert np.sum(together * run(fp32, slice(0, 3)), axis=1).min() > 0.99
