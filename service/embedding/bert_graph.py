"""An ONNX graph of a BERT-family sentence-transformers model, written from its safetensors weights.

No torch: the weights come from `safetensors.numpy`, the graph from `onnx.helper`. The graph takes
the tokenizer's tensors (input_ids, token_type_ids, attention_mask; int64, batch x sequence) and
returns unit-length sentence embeddings (`sentence_embedding`, float32, batch x hidden):

    embeddings (word + position + token type, LayerNorm)
    -> N encoder layers (self-attention with the padding mask, residual + LayerNorm, GELU MLP, residual + LayerNorm)
    -> pooling (mean over the unmasked tokens, or the [CLS] token) -> L2 normalisation

It is the computation of Hugging Face's BertModel in eval mode followed by sentence-transformers'
Pooling and Normalize modules, written with the operators torch.onnx.export emits for them (opset 17:
LayerNormalization, the Div/Erf/Mul GELU, MatMul + Add projections, the Unsqueeze/Cast/Sub/Mul
padding mask), so onnxruntime treats it as it treats an export: its transformer optimiser fuses
this graph of all-MiniLM-L6-v2 into the same 6 Attention, 12 SkipLayerNormalization and 6 BiasGelu
nodes as the exported one.
What this builder accepts is checked first by ModelLayout.graph_unsupported().
"""

from __future__ import annotations

import math

import numpy as np

from service.embedding.layout import EmbeddingError, ModelLayout

OPSET = 17
# BERT's additive attention mask for padding (what its ONNX exports used): exp(-10000) is 0 in float32.
MASK_VALUE = -10000.0
# sentence-transformers' Pooling clamps the token count at 1e-9; F.normalize clamps the norm at 1e-12.
MIN_TOKENS = 1e-9
MIN_NORM = 1e-12


def load_weights(layout: ModelLayout) -> dict[str, np.ndarray]:
    """The encoder's tensors as float32 numpy arrays, keys without any "bert." style prefix."""
    from safetensors.numpy import load_file

    try:
        raw = load_file(str(layout.weights))
    except Exception as exc:  # noqa: BLE001 - e.g. bfloat16 tensors, which numpy cannot hold
        raise EmbeddingError(f"cannot read {layout.weights} with safetensors.numpy: {exc}") from exc
    anchor = "embeddings.word_embeddings.weight"
    prefixes = [k[: -len(anchor)] for k in raw if k.endswith(anchor)]
    if len(prefixes) != 1:
        raise EmbeddingError(f"{layout.weights} has no single {anchor} tensor")
    prefix = prefixes[0]
    out = {}
    for key, value in raw.items():
        if key.startswith(prefix) and np.issubdtype(value.dtype, np.floating):
            out[key[len(prefix):]] = value.astype(np.float32, copy=False)
    return out


class _Graph:
    """Collects nodes and initializers; every name is unique."""

    def __init__(self):
        self.nodes: list = []
        self.initializers: list = []
        self._count = 0

    def const(self, name: str, value) -> str:
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(self, op_type: str, inputs: list[str], *, name: str | None = None, **attrs) -> str:
        from onnx import helper

        self._count += 1
        out = name or f"{op_type.lower()}_{self._count}"
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=f"{op_type}_{self._count}", **attrs))
        return out


def build_graph(layout: ModelLayout):
    """The onnx.ModelProto of the model at `layout` (see the module docstring)."""
    from onnx import TensorProto, checker, helper

    reason = layout.graph_unsupported()
    if reason:
        raise EmbeddingError(f"the built-in ONNX builder does not handle {reason}")
    cfg = layout.config
    w = load_weights(layout)
    hidden, heads = int(cfg["hidden_size"]), int(cfg["num_attention_heads"])
    head_dim = hidden // heads
    if head_dim * heads != hidden:
        raise EmbeddingError(f"hidden_size {hidden} is not a multiple of num_attention_heads {heads}")
    eps = float(cfg.get("layer_norm_eps", 1e-12))
    act = cfg.get("hidden_act", "gelu")
    with_types = "embeddings.token_type_embeddings.weight" in w
    g = _Graph()

    def tensor(key: str) -> str:
        if key not in w:
            raise EmbeddingError(f"{layout.weights} lacks the tensor {key}")
        return g.const(key, w[key])

    def linear(x: str, key: str) -> str:
        # torch's Linear keeps weight as (out, in): MatMul wants (in, out).
        if f"{key}.weight" not in w:
            raise EmbeddingError(f"{layout.weights} lacks the tensor {key}.weight")
        weight = g.const(f"{key}.weight_t", np.ascontiguousarray(w[f"{key}.weight"].T))
        return g.op("Add", [g.op("MatMul", [x, weight]), tensor(f"{key}.bias")])

    def layer_norm(x: str, key: str) -> str:
        return g.op("LayerNormalization", [x, tensor(f"{key}.weight"), tensor(f"{key}.bias")], axis=-1, epsilon=eps)

    # --- embeddings ---
    seq_len = g.op("Gather", [g.op("Shape", ["input_ids"]), g.const("one_index", np.array([1], np.int64))], axis=0)
    position_ids = g.op("Slice", [
        g.const("position_table_ids", np.arange(int(cfg.get("max_position_embeddings", 512)), dtype=np.int64)[None, :]),
        g.const("zero_1d", np.array([0], np.int64)), seq_len, g.const("one_1d", np.array([1], np.int64)),
    ])
    x = g.op("Add", [
        g.op("Gather", [tensor("embeddings.word_embeddings.weight"), "input_ids"], axis=0),
        g.op("Gather", [tensor("embeddings.position_embeddings.weight"), position_ids], axis=0),
    ])
    if with_types:
        x = g.op("Add", [x, g.op("Gather", [tensor("embeddings.token_type_embeddings.weight"), "token_type_ids"], axis=0)])
    x = layer_norm(x, "embeddings.LayerNorm")

    # --- the additive padding mask, (batch, 1, 1, seq) ---
    # Unsqueeze, Unsqueeze, Cast, Sub, Mul: the order the attention fuser looks for.
    mask4 = g.op("Unsqueeze", ["attention_mask", g.const("axis_1_", np.array([1], np.int64))])
    mask4 = g.op("Cast", [g.op("Unsqueeze", [mask4, g.const("axis_2_", np.array([2], np.int64))])], to=TensorProto.FLOAT)
    additive = g.op("Mul", [g.op("Sub", [g.const("one_f", np.array(1.0, np.float32)), mask4]), g.const("mask_value", np.array(MASK_VALUE, np.float32))])

    heads_shape = g.const("heads_shape", np.array([0, 0, heads, head_dim], np.int64))
    merged_shape = g.const("merged_shape", np.array([0, 0, hidden], np.int64))
    scale = g.const("attention_scale", np.array(math.sqrt(head_dim), np.float32))
    half, one = g.const("half_f", np.array(0.5, np.float32)), g.const("one_f2", np.array(1.0, np.float32))
    sqrt2 = g.const("sqrt2_f", np.array(math.sqrt(2.0), np.float32))
    three, c044715 = g.const("three_f", np.array(3.0, np.float32)), g.const("c044715_f", np.array(0.044715, np.float32))
    sqrt2pi = g.const("sqrt_2_over_pi_f", np.array(math.sqrt(2.0 / math.pi), np.float32))

    def gelu(h: str) -> str:
        if act == "relu":
            return g.op("Relu", [h])
        if act == "gelu":  # exact: x * 0.5 * (1 + erf(x / sqrt(2)))
            return g.op("Mul", [g.op("Mul", [h, g.op("Add", [g.op("Erf", [g.op("Div", [h, sqrt2])]), one])]), half])
        # tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        inner = g.op("Mul", [g.op("Add", [h, g.op("Mul", [g.op("Pow", [h, three]), c044715])]), sqrt2pi])
        return g.op("Mul", [g.op("Mul", [h, half]), g.op("Add", [g.op("Tanh", [inner]), one])])

    for i in range(int(cfg["num_hidden_layers"])):
        p = f"encoder.layer.{i}"

        def split_heads(t: str, perm: list[int]) -> str:
            return g.op("Transpose", [g.op("Reshape", [t, heads_shape])], perm=perm)

        q = split_heads(linear(x, f"{p}.attention.self.query"), [0, 2, 1, 3])
        k = split_heads(linear(x, f"{p}.attention.self.key"), [0, 2, 3, 1])
        v = split_heads(linear(x, f"{p}.attention.self.value"), [0, 2, 1, 3])
        scores = g.op("Add", [g.op("Div", [g.op("MatMul", [q, k]), scale]), additive])
        context = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
        context = g.op("Reshape", [g.op("Transpose", [context], perm=[0, 2, 1, 3]), merged_shape])
        x = layer_norm(g.op("Add", [linear(context, f"{p}.attention.output.dense"), x]), f"{p}.attention.output.LayerNorm")
        mlp = linear(gelu(linear(x, f"{p}.intermediate.dense")), f"{p}.output.dense")
        x = layer_norm(g.op("Add", [mlp, x]), f"{p}.output.LayerNorm")

    # --- pooling and normalisation ---
    if layout.pooling == "cls":
        pooled = g.op("Gather", [x, g.const("zero_index", np.array(0, np.int64))], axis=1)
    else:
        mask_f = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
        token_mask = g.op("Unsqueeze", [mask_f, g.const("axes_2", np.array([2], np.int64))])
        axis1 = g.const("axis_1", np.array([1], np.int64))
        summed = g.op("ReduceSum", [g.op("Mul", [x, token_mask]), axis1], keepdims=0)
        count = g.op("Max", [g.op("ReduceSum", [token_mask, axis1], keepdims=0), g.const("min_tokens", np.array(MIN_TOKENS, np.float32))])
        pooled = g.op("Div", [summed, count])
    norm = g.op("Max", [g.op("ReduceL2", [pooled], axes=[1], keepdims=1), g.const("min_norm", np.array(MIN_NORM, np.float32))])
    g.op("Div", [pooled, norm], name="sentence_embedding")

    dims = ["batch", "seq"]
    names = ["input_ids", "token_type_ids", "attention_mask"] if with_types else ["input_ids", "attention_mask"]
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, dims) for n in names]
    output = helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", hidden])
    graph = helper.make_graph(g.nodes, "sentence_embedding", inputs, [output], g.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="engram")
    model.ir_version = 8  # opset 17's IR version: readable by every onnxruntime that runs opset 17
    checker.check_model(model, full_check=False)
    return model


def input_names(model) -> list[str]:
    return [i.name for i in model.graph.input]
