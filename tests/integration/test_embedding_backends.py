"""The ONNX Runtime embedder against sentence-transformers, with the real packaged model (no engine needed).

The first run in a fresh cache exports the model (~10 s); later runs reuse the cached file.
Speed is measured by `python -m bench.embedder`, never here.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from service import embedding as E
from service.config import default_embedding_model

TEXTS = [
    "Chose PostgreSQL over MongoDB for the primary database.",
    "slack:channel:ops — the nightly backup failed twice; Dana moved it to 03:00 UTC.",
    "ok",
    "   whitespace around a short note   ",
    "Prefer small pull requests with one reviewer; big refactors get a design doc first. " * 9,  # > 128 tokens
]
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def model() -> str:
    return default_embedding_model()


@pytest.fixture(scope="module")
def reference(model) -> np.ndarray:
    """sentence-transformers fp32, the reference every backend is compared with."""
    return E.TorchBackend(model).encode(TEXTS)


@pytest.fixture(scope="module")
def onnx_fp32(model) -> E.Embedder:
    return E.Embedder(model, backend="onnx")


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_onnx_fp32_reproduces_sentence_transformers(onnx_fp32, reference):
    assert onnx_fp32.backend == "onnx" and onnx_fp32.dimension == 384
    got = np.asarray(onnx_fp32.embed_documents(TEXTS))
    assert got.shape == (len(TEXTS), 384)
    assert cosines(got, reference).min() >= 0.9999
    assert np.linalg.norm(got, axis=1) == pytest.approx(np.ones(len(TEXTS)), abs=1e-5)


def test_onnx_int8_stays_close(model, reference):
    """Memory-sized texts (40+ characters) keep a cosine >= 0.98; a one-word text drifts more (~0.97)."""
    int8 = E.Embedder(model, backend="onnx-int8")
    assert int8.backend == "onnx-int8"
    got = np.asarray(int8.embed_documents(TEXTS))
    sims = cosines(got, reference)
    memory_sized = [float(c) for c, t in zip(sims, TEXTS) if len(t.strip()) >= 40]
    assert len(memory_sized) == 3 and min(memory_sized) >= 0.98
    assert sims.min() >= 0.95
    assert np.linalg.norm(got, axis=1) == pytest.approx(np.ones(len(TEXTS)), abs=1e-5)


def test_batching_does_not_change_vectors(onnx_fp32):
    """Micro-batches are padded to their own longest text: alone or in a batch, a text gets one vector."""
    batched = np.asarray(onnx_fp32.embed_documents(TEXTS * 4))  # 20 texts: two micro-batches of mixed lengths
    alone = np.asarray([onnx_fp32.embed_documents([t])[0] for t in TEXTS])
    assert cosines(batched[: len(TEXTS)], alone).min() >= 0.99999
    assert cosines(batched[len(TEXTS) * 3 :], alone).min() >= 0.99999


def test_query_cache_returns_the_same_vector(onnx_fp32):
    first = onnx_fp32.embed_query("what database did we choose?")
    assert onnx_fp32.embed_query("what database did we choose?") is first
    assert first == pytest.approx(onnx_fp32.embed_documents(["what database did we choose?"])[0], abs=1e-6)


def test_the_exported_files_are_cached_outside_the_repo_and_reused(model, onnx_fp32, caplog):
    folder = E.onnx_cache_dir(model)
    assert (folder / "model.onnx").is_file() and (folder / "tokenizer.json").is_file()
    assert REPO not in folder.parents
    E.Embedder(model, backend="onnx-int8")  # makes sure the int8 file exists too
    before = {name: (folder / name).stat() for name in ("model.onnx", "model.int8.onnx")}
    with caplog.at_level(logging.INFO, logger="engram.embedding"):
        again = E.Embedder(model, backend="onnx")
        again_int8 = E.Embedder(model, backend="onnx-int8")
    assert not [r for r in caplog.records if "exporting" in r.getMessage()]
    for name, stat in before.items():
        now = (folder / name).stat()
        assert (now.st_ino, now.st_mtime_ns) == (stat.st_ino, stat.st_mtime_ns)
    assert again.describe()["onnx_file"] == str(folder / "model.onnx")
    assert again_int8.describe()["onnx_file"] == str(folder / "model.int8.onnx")


def test_the_cache_key_follows_the_model_files(tmp_path, model):
    """A changed model file is a new cache folder, never a stale export."""
    copy = tmp_path / "model"
    copy.mkdir()
    for path in Path(model).iterdir():
        if path.is_file() and path.suffix in (".json", ".txt"):
            (copy / path.name).write_bytes(path.read_bytes())
    first = E.model_files_digest(str(copy))
    (copy / "config.json").write_text((copy / "config.json").read_text() + "\n")
    assert E.model_files_digest(str(copy)) != first


def test_onnx_failure_falls_back_to_torch_with_a_warning(model, monkeypatch, caplog, reference):
    def broken(*args, **kwargs):
        raise RuntimeError("onnxruntime is not installed")

    monkeypatch.setattr(E, "open_onnx", broken)
    with caplog.at_level(logging.WARNING, logger="engram.embedding"):
        fallback = E.Embedder(model, backend="onnx")
    assert fallback.backend == "torch" and fallback.backend_requested == "onnx"
    assert "falling back to sentence-transformers" in caplog.text and "onnxruntime is not installed" in caplog.text
    assert cosines(np.asarray(fallback.embed_documents(TEXTS)), reference).min() >= 0.9999


def test_an_unknown_backend_is_refused(model):
    with pytest.raises(E.EmbeddingError, match="EMBEDDING_BACKEND"):
        E.Embedder(model, backend="tensorflow")
