"""The embedder with the real packaged model (no engine needed): parity with sentence-transformers fp32,
both against the vectors committed in tests/data/embedding-reference.json and, where the models extra
is installed (`make test` installs it), live.

The first run in a fresh cache builds the ONNX graph (~1 s, plus ~5 s to check it against
sentence-transformers when that is installed); later runs reuse the cached file.
Speed is measured by `python -m bench.embedder`, never here.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from service import embedding as E
from service.config import default_embedding_model
from service.embedding import onnx_files, st_route
from service.embedding.rowquant import INT8_FILE

REPO = Path(__file__).resolve().parents[2]
REFERENCE = json.loads((REPO / "tests" / "data" / "embedding-reference.json").read_text())
TEXTS: list[str] = REFERENCE["texts"]
PARITY = 0.99999  # the cosine every fp32 ONNX vector of the default model keeps to sentence-transformers fp32
# A child process that cannot import sentence-transformers or torch: the default install.
WITHOUT_TORCH = "import sys; sys.modules['sentence_transformers'] = None; sys.modules['torch'] = None\n"


@pytest.fixture(scope="module")
def model() -> str:
    return default_embedding_model()


@pytest.fixture(scope="module")
def reference() -> np.ndarray:
    return np.asarray(REFERENCE["vectors"], dtype=np.float64)


@pytest.fixture(scope="module")
def onnx_fp32(model) -> E.Embedder:
    return E.Embedder(model, backend="onnx")


@pytest.fixture(scope="module")
def live_reference(model) -> np.ndarray:
    """sentence-transformers fp32 now (the models extra)."""
    pytest.importorskip("sentence_transformers", reason="the models extra is not installed (make test installs it)")
    return st_route.TorchBackend(model).encode(TEXTS)


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_the_reference_file_covers_the_hard_cases(model):
    from tokenizers import Tokenizer

    assert REFERENCE["dimension"] == 384 and REFERENCE["max_seq_length"] == 256
    assert len(TEXTS) == len(REFERENCE["vectors"]) == 8
    assert "" in TEXTS and any(t != t.strip() for t in TEXTS) and any(not t.isascii() for t in TEXTS)
    tokenizer = Tokenizer.from_file(str(Path(model) / "tokenizer.json"))
    tokenizer.no_truncation()
    lengths = [len(tokenizer.encode(t.strip()).ids) for t in TEXTS]
    # Past the packaged tokenizer's own limit (128) and past max_seq_length (256, truncated).
    assert any(128 < n <= 256 for n in lengths) and any(n > 256 for n in lengths)


def test_onnx_fp32_reproduces_the_committed_reference(onnx_fp32, reference):
    assert onnx_fp32.backend == "onnx" and onnx_fp32.dimension == 384
    assert onnx_fp32.describe()["onnx_route"] == "graph"
    got = np.asarray(onnx_fp32.embed_documents(TEXTS))
    assert got.shape == (len(TEXTS), 384)
    assert cosines(got, reference).min() >= PARITY
    assert np.linalg.norm(got, axis=1) == pytest.approx(np.ones(len(TEXTS)), abs=1e-5)


def test_onnx_fp32_reproduces_sentence_transformers_live(onnx_fp32, live_reference, reference):
    got = np.asarray(onnx_fp32.embed_documents(TEXTS))
    assert cosines(got, live_reference).min() >= PARITY
    # The committed file still describes the installed sentence-transformers.
    assert cosines(reference, live_reference).min() >= PARITY


def test_the_default_install_builds_the_graph_without_torch(model, reference, tmp_path):
    """A fresh cache, sentence-transformers and torch unimportable: the graph is built and exact."""
    code = WITHOUT_TORCH + (
        "import json, sys, numpy as np\n"
        "from service.embedding import Embedder\n"
        f"e = Embedder({model!r})\n"
        f"texts = json.load(open({str(REPO / 'tests' / 'data' / 'embedding-reference.json')!r}))['texts']\n"
        "print(json.dumps({'torch': 'torch' in sys.modules and sys.modules['torch'] is not None, "
        "'describe': e.describe(), 'vectors': e.encode(texts).tolist()}))\n"
    )
    env = {**os.environ, "ENGRAM_HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["torch"] is False and result["describe"]["onnx_route"] == "graph"
    assert str(tmp_path) in result["describe"]["onnx_file"]
    assert cosines(np.asarray(result["vectors"]), reference).min() >= PARITY
    meta = json.loads((Path(result["describe"]["onnx_file"]).parent / "meta.json").read_text())
    assert meta["route"] == "graph" and meta["checked_against"] is None and meta["pooling"] == "mean"


def test_without_the_models_extra_start_up_fails_with_one_line(tmp_path):
    """`python -m service` with a model the builder does not handle: one line naming the extra, exit 2."""
    folder = tmp_path / "roberta-model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "xlm-roberta", "hidden_size": 8}))
    code = WITHOUT_TORCH + "from service.__main__ import main\nsys.exit(main([]))\n"
    env = {**os.environ, "EMBEDDING_MODEL": str(folder), "AUTOMEM_API_TOKEN": "t", "OPENSEARCH_URL": "http://127.0.0.1:9"}
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("error: EMBEDDING_MODEL") and "model_type 'xlm-roberta'" in lines[0]
    assert "pip install '.[models]'" in lines[0] and "Traceback" not in out.stderr


def test_onnx_int8_stays_close(model, reference):
    """Memory-sized texts (40+ characters) keep a cosine >= 0.99; one-word and empty texts drift more."""
    int8 = E.Embedder(model, backend="onnx-int8")
    assert int8.backend == "onnx-int8"
    got = np.asarray(int8.embed_documents(TEXTS))
    sims = cosines(got, reference)
    memory_sized = [float(c) for c, t in zip(sims, TEXTS) if len(t.strip()) >= 40]
    assert len(memory_sized) == 4 and min(memory_sized) >= 0.99
    assert sims.min() >= 0.97
    assert np.linalg.norm(got, axis=1) == pytest.approx(np.ones(len(TEXTS)), abs=1e-5)


def test_intra_op_threads_by_backend_and_by_setting(model, onnx_fp32):
    """EMBEDDING_THREADS=0 (default): int8 one thread (a query is one text a call), fp32 two; a number sets both.
    The thread count changes no vector: one text's int8 vector is the same on 1 or 2 threads."""
    from service.config import Settings

    int8 = E.Embedder.from_settings(Settings(embedding_model=model))
    assert (int8.backend, int8.describe()["onnx_threads"], onnx_fp32.describe()["onnx_threads"]) == ("onnx-int8", 1, 2)
    two = E.Embedder.from_settings(Settings(embedding_model=model, embedding_threads=2))
    assert two.describe()["onnx_threads"] == 2
    assert np.asarray(two.embed_documents(TEXTS)) == pytest.approx(np.asarray(int8.embed_documents(TEXTS)), abs=1e-5)


def test_batching_does_not_change_vectors(onnx_fp32):
    """Micro-batches are padded to their own longest text: alone or in a batch, a text gets one vector."""
    batched = np.asarray(onnx_fp32.embed_documents(TEXTS * 4))  # 32 texts: several micro-batches of mixed lengths
    alone = np.asarray([onnx_fp32.embed_documents([t])[0] for t in TEXTS])
    assert cosines(batched[: len(TEXTS)], alone).min() >= 0.99999
    assert cosines(batched[len(TEXTS) * 3 :], alone).min() >= 0.99999


def test_int8_batching_does_not_change_vectors(model):
    """int8 activations are quantised per token row (service/embedding/rowquant.py): a text's vector is
    the same alone, in a batch of 16 with other texts, and at any place in it, up to float rounding.
    (quantize_dynamic's graph, one scale per call, moved vectors to a cosine of 0.977 here.)"""
    int8 = E.Embedder(model, backend="onnx-int8")
    others = [f"Release {i}: {'the canary waits for the rollout. ' * (i % 5)}owner {i}, region eu-{i % 3}" for i in range(40)]
    texts = [*TEXTS, *others]
    alone = np.asarray([int8.embed_documents([t])[0] for t in texts])
    batches = [np.asarray(int8.embed_documents(texts))]  # sorted by length, micro-batches of up to 16
    one_call = E.OnnxBackend(int8._impl.folder, quantized=True, token_budget=10**9)  # 16 texts a call, whatever their length
    rng = np.random.default_rng(7)
    for _ in range(3):  # random batches of 16 (long and short texts together: much padding)
        order = rng.permutation(len(texts))
        got = np.empty_like(alone)
        for start in range(0, len(texts), 16):
            idx = order[start:start + 16]
            got[idx] = one_call.encode([texts[i] for i in idx])
        batches.append(got)
    for got in batches:
        assert np.abs(got - alone).max() <= 1e-6
        assert cosines(got, alone).min() >= 1 - 1e-6


def test_query_cache_returns_the_same_vector(onnx_fp32):
    first = onnx_fp32.embed_query("what database did we choose?")
    assert onnx_fp32.embed_query("what database did we choose?") is first
    assert first == pytest.approx(onnx_fp32.embed_documents(["what database did we choose?"])[0], abs=1e-6)


def test_the_onnx_files_are_cached_outside_the_repo_and_reused(model, onnx_fp32, caplog):
    folder = E.onnx_cache_dir(model)
    assert (folder / "model.onnx").is_file() and (folder / "tokenizer.json").is_file()
    assert REPO not in folder.parents
    E.Embedder(model, backend="onnx-int8")  # makes sure the int8 file exists too
    before = {name: (folder / name).stat() for name in ("model.onnx", INT8_FILE)}
    with caplog.at_level(logging.INFO, logger="engram.embedding"):
        again = E.Embedder(model, backend="onnx")
        again_int8 = E.Embedder(model, backend="onnx-int8")
    assert not [r for r in caplog.records if "building" in r.getMessage()]
    for name, stat in before.items():
        now = (folder / name).stat()
        assert (now.st_ino, now.st_mtime_ns) == (stat.st_ino, stat.st_mtime_ns)
    assert again.describe()["onnx_file"] == str(folder / "model.onnx")
    assert again_int8.describe()["onnx_file"] == str(folder / INT8_FILE)


def test_the_cache_key_follows_the_model_files(tmp_path, model):
    """A changed model file is a new cache folder, never a stale graph."""
    copy = tmp_path / "model"
    copy.mkdir()
    for path in Path(model).iterdir():
        if path.is_file() and path.suffix in (".json", ".txt"):
            (copy / path.name).write_bytes(path.read_bytes())
    first = E.model_files_digest(str(copy))
    (copy / "config.json").write_text((copy / "config.json").read_text() + "\n")
    assert E.model_files_digest(str(copy)) != first


def test_a_tiny_random_bert_matches_sentence_transformers(tmp_path, monkeypatch):
    """The graph builder against sentence-transformers itself on random weights: mean and cls pooling,
    exact and tanh GELU, a max_seq_length shorter than the texts."""
    pytest.importorskip("sentence_transformers", reason="the models extra is not installed (make test installs it)")
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers import BertConfig, BertModel

    texts = ["the cat sat on the mat", "  a dog ran far away  ", "ok", "Ünïcödé 東京 " * 30]
    source = Path(default_embedding_model())
    for pooling, act in (("mean", "gelu"), ("cls", "gelu_new")):
        folder = tmp_path / f"{pooling}-{act}"
        torch.manual_seed(0)
        config = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                            intermediate_size=64, hidden_act=act, max_position_embeddings=64)
        BertModel(config).eval().save_pretrained(folder, safe_serialization=True)
        for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
            (folder / name).write_bytes((source / name).read_bytes())
        (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 48, "do_lower_case": False}))
        (folder / "1_Pooling").mkdir()
        (folder / "1_Pooling" / "config.json").write_text(json.dumps(
            {"word_embedding_dimension": 32, "pooling_mode_cls_token": pooling == "cls", "pooling_mode_mean_tokens": pooling == "mean"}))
        (folder / "modules.json").write_text(json.dumps([
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
        ]))
        want = SentenceTransformer(str(folder), device="cpu").encode(texts, normalize_embeddings=True)
        monkeypatch.setenv("ENGRAM_HOME", str(tmp_path / "cache"))
        embedder = E.Embedder(str(folder))
        assert embedder.describe()["onnx_route"] == "graph" and embedder.dimension == 32
        meta = json.loads((E.onnx_cache_dir(str(folder)) / "meta.json").read_text())
        assert meta["checked_against"].startswith("sentence-transformers") and meta["checked_cosine_min"] >= 0.9999
        assert cosines(embedder.encode(texts), want).min() >= PARITY, (pooling, act)


def test_the_export_route_agrees_with_the_built_graph(model, reference, tmp_path, monkeypatch):
    """torch.onnx.export (how models the builder does not handle are served) still works and is exact."""
    pytest.importorskip("sentence_transformers", reason="the models extra is not installed (make test installs it)")
    monkeypatch.setenv("ENGRAM_HOME", str(tmp_path))
    exported = E.Embedder(model, onnx_route="export")
    assert exported.describe()["onnx_route"] == "export" and "-export-" in exported.describe()["onnx_file"]
    meta = json.loads((Path(exported.describe()["onnx_file"]).parent / "meta.json").read_text())
    assert meta["fusions"] and meta["fusions"].get("Attention") == 6  # onnxruntime's optimiser ran
    assert cosines(exported.encode(TEXTS), reference).min() >= PARITY


def test_onnx_failure_falls_back_to_torch_with_a_warning(model, monkeypatch, caplog, live_reference):
    def broken(*args, **kwargs):
        raise RuntimeError("onnxruntime is not installed")

    monkeypatch.setattr(onnx_files, "open_onnx", broken)
    with caplog.at_level(logging.WARNING, logger="engram.embedding"):
        fallback = E.Embedder(model, backend="onnx")
    assert fallback.backend == "torch" and fallback.backend_requested == "onnx"
    assert "falling back to sentence-transformers" in caplog.text and "onnxruntime is not installed" in caplog.text
    assert cosines(np.asarray(fallback.embed_documents(TEXTS)), live_reference).min() >= PARITY


def test_onnx_failure_without_the_models_extra_is_an_error(model, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("the graph is corrupt")

    monkeypatch.setattr(onnx_files, "open_onnx", broken)
    monkeypatch.setattr(st_route, "available", lambda: False)
    with pytest.raises(E.EmbeddingError, match="EMBEDDING_BACKEND=onnx failed .*the graph is corrupt"):
        E.Embedder(model, backend="onnx")


def test_an_unknown_backend_is_refused(model):
    with pytest.raises(E.EmbeddingError, match="EMBEDDING_BACKEND"):
        E.Embedder(model, backend="tensorflow")
