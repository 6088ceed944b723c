"""The int8 graph of `onnx-int8`: weights int8 per output channel, activations int8 per ROW (token).

onnxruntime's dynamic quantisation (quantize_dynamic) scales a MatMul's activations by one number per
tensor, taken from the whole call, so a text's vector moved with the texts sharing its call (cosine
0.977-1.0 to it alone). Here every MatMul with a constant 2-D weight W (K x N) becomes

    x2    = Reshape(x, [-1, K])                                   one row per token
    scale = max(ReduceMax(|x2|, axis 1) / 127, tiny)              one scale per row
    xq    = QuantizeLinear(x2, scale, 128, axis=0)                uint8, symmetric around 128
    y     = MatMulIntegerToFloat(xq, Wq, scale[:, None], ws, 128) (xq - 128) @ Wq * ws * scale
    y     = Reshape(y, shape(x)[:-1] + [N])

so a row's result depends on that row alone (integer products are exact; padding rows are masked
by attention), and a text gets the same vector alone or in any batch, up to float rounding (~1e-7).
uint8 around 128 rather than int8 keeps onnxruntime's fast u8 x s8 kernels (x86 VNNI); the per-row
scale is a [rows, 1] a_scale, which onnxruntime's MatMulIntegerToFloat multiplies into its output
(tests/unit/test_embedding_rowquant.py checks it against numpy). Row and channel scales folded into
one scale of the output's shape were fused by onnxruntime as a per-tensor scale: wrong vectors.
The quantisation of an input shared by several MatMuls (Q, K and V) is written once.
Measured on all-MiniLM-L6-v2 (docs/perf/embedding.md): cosine to fp32 0.9975 (quantize_dynamic's
0.9926); in calls of 16 texts 463 LoCoMo turns/s against that graph's 414 one text a call.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

# In the int8 file's name: a change of this graph (and so of the vectors) is a new file, never a stale one.
ROWQUANT_VERSION = 1
INT8_FILE = f"model.int8-rows-v{ROWQUANT_VERSION}.onnx"
ZERO_POINT = 128  # uint8 activations are symmetric around it: per-row scales need no per-row zero point
TINY = 1e-30  # an all-zero row still gets a finite scale (its products are 0 either way)
MS_DOMAIN = "com.microsoft"


def quantize_rows(source: Path, target: Path) -> int:
    """Write the per-row int8 graph of the fp32 graph `source` to `target`; the number of MatMuls quantised."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(source))
    graph = model.graph
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if opset < 15:  # Shape(start, end) is opset 15; QuantizeLinear per axis 13
        raise ValueError(f"per-row int8 needs opset >= 15, the graph has {opset}")
    weights = {t.name: t for t in graph.initializer}
    consts: list = []
    names: set[str] = set()

    def const(name: str, value: np.ndarray) -> str:
        if name not in names:
            names.add(name)
            consts.append(numpy_helper.from_array(value, name))
        return name

    def reduce_max(x: str, out: str):
        if opset >= 18:  # axes became an input
            return helper.make_node("ReduceMax", [x, const("rq_axis1", np.array([1], np.int64))], [out], keepdims=0)
        return helper.make_node("ReduceMax", [x], [out], axes=[1], keepdims=0)

    zp_value = numpy_helper.from_array(np.array([ZERO_POINT], np.uint8))
    nodes: list = []
    quantised: dict[str, str] = {}  # input tensor -> prefix of its quantised form
    dropped: set[str] = set()
    count = 0
    for node in graph.node:
        w = weights.get(node.input[1]) if node.op_type == "MatMul" and len(node.input) == 2 else None
        if w is None or len(w.dims) != 2:
            nodes.append(node)
            continue
        wf = numpy_helper.to_array(w).astype(np.float32)
        k, n = wf.shape
        ws = np.maximum(np.abs(wf).max(axis=0), TINY) / 127.0  # symmetric, per output channel
        wq = np.clip(np.round(wf / ws), -127, 127).astype(np.int8)
        p = f"rowq{count}_"
        count += 1
        const(p + "w", wq)
        const(p + "w_scale", ws.astype(np.float32))
        dropped.add(w.name)
        x = node.input[0]
        if x not in quantised:
            q = quantised[x] = f"rowq_in{len(quantised)}_"
            nodes += [
                helper.make_node("Reshape", [x, const(f"rowq_rows_{k}", np.array([-1, k], np.int64))], [q + "rows"]),
                helper.make_node("Abs", [q + "rows"], [q + "abs"]),
                reduce_max(q + "abs", q + "amax"),
                helper.make_node("Mul", [q + "amax", const("rowq_inv127", np.array(1 / 127, np.float32))], [q + "s"]),
                helper.make_node("Max", [q + "s", const("rowq_tiny", np.array(TINY, np.float32))], [q + "scale"]),
                helper.make_node("Shape", [q + "scale"], [q + "count"]),
                helper.make_node("ConstantOfShape", [q + "count"], [q + "zp"], value=zp_value),
                helper.make_node("QuantizeLinear", [q + "rows", q + "scale", q + "zp"], [q + "q"], axis=0),
                helper.make_node("Unsqueeze", [q + "scale", const("rowq_axis1", np.array([1], np.int64))], [q + "row_scale"]),
                helper.make_node("Shape", [x], [q + "lead"], end=-1),
            ]
        q = quantised[x]
        nodes += [
            helper.make_node("MatMulIntegerToFloat", [q + "q", p + "w", q + "row_scale", p + "w_scale",
                                                      const("rowq_zp", np.array(ZERO_POINT, np.uint8))],
                             [p + "y"], domain=MS_DOMAIN),
            helper.make_node("Concat", [q + "lead", const(f"rowq_cols_{n}", np.array([n], np.int64))], [p + "shape"], axis=0),
            helper.make_node("Reshape", [p + "y", p + "shape"], [node.output[0]]),
        ]
    if not count:
        raise ValueError("no MatMul with a constant 2-D weight to quantise")
    still_used = {i for nd in nodes for i in nd.input}
    kept = [t for t in graph.initializer if t.name not in dropped or t.name in still_used]
    del graph.initializer[:]
    graph.initializer.extend(kept + consts)
    del graph.node[:]
    graph.node.extend(nodes)
    # The fp32 graph's inner shapes go: with them onnxruntime fused SkipLayerNormalization and BiasGelu
    # around the new nodes, and the graph ran 10-20% slower (2 cores, onnxruntime 1.32).
    del graph.value_info[:]
    if not any(o.domain == MS_DOMAIN for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid(MS_DOMAIN, 1))
    onnx.save(model, str(target))
    return count
