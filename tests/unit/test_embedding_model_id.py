"""The model id stored with every vector (Embedder.short_name): the int8 graph's vectors are another
backend's (cosine ~0.997 to fp32), so they carry another id, with the int8 graph's version, and POST
/admin/reembed finds them after a change of EMBEDDING_BACKEND or of the graph (quantize_dynamic's
vectors were "+int8"); fp32 ONNX and torch give the same vectors and share one."""

from __future__ import annotations

import pytest

from service.config import default_embedding_model
from service.embedding import Embedder


def named(model: str, backend: str) -> Embedder:
    e = object.__new__(Embedder)  # only the naming, no model loaded
    e.model_name, e.backend = model, backend
    return e


@pytest.mark.parametrize(("backend", "expected"), [("onnx", "all-MiniLM-L6-v2"), ("torch", "all-MiniLM-L6-v2"), ("onnx-int8", "all-MiniLM-L6-v2+int8-rows-v1")])
def test_the_default_model_s_id_per_backend(backend, expected):
    assert named(default_embedding_model(), backend).short_name == expected


def test_another_model_keeps_its_name_and_int8_marks_it(tmp_path):
    folder = tmp_path / "my-model"
    folder.mkdir()
    assert named(str(folder) + "/", "onnx").short_name == "my-model"
    assert named(str(folder), "onnx-int8").short_name == "my-model+int8-rows-v1"
    assert named("org/some-model", "torch").short_name == "org/some-model"
