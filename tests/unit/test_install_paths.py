"""What an installed Engram reads and writes where: the files shipped inside the package, the local
token file, the ONNX graph cache key (the model's content, not where it is installed)."""

from __future__ import annotations

import fnmatch
import shutil
import tomllib
from pathlib import Path

from service.embedding.layout import model_files_digest
from service.paths import package_folder, token_file

ROOT = Path(__file__).resolve().parents[2]


def test_the_files_the_service_reads_are_package_data_of_the_wheel():
    """Every non-Python file under service/ that git tracks matches a package-data pattern, so
    `pip install .` ships it (a wheel had held only the .py files: no templates, no Maven project)."""
    data = [p.relative_to(ROOT) for p in (ROOT / "service").rglob("*")
            if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts and "target" not in p.parts]
    assert data, "no data files found under service/"
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]

    def shipped(path: Path) -> bool:  # fnmatch's * also crosses folders: lenient, it only finds the files no pattern names
        return any(base in path.parents and any(fnmatch.fnmatch(str(path.relative_to(base)), g) for g in globs)
                   for base, globs in ((Path(*package.split(".")), globs) for package, globs in patterns.items()))

    assert [str(p) for p in data if not shipped(p)] == []


def test_package_folders_resolve_to_the_shipped_files():
    assert (package_folder("service.engine", "maven") / "pom.xml").is_file()
    assert (package_folder("index_templates") / "memories.json").is_file()
    assert list(package_folder("index_templates", "dashboards").glob("*.ndjson"))


def test_the_token_file_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("ENGRAM_TOKEN_FILE", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    assert token_file() == tmp_path / "cfg" / "engram" / "token"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert token_file() == tmp_path / ".config" / "engram" / "token"
    monkeypatch.setenv("ENGRAM_TOKEN_FILE", "~/elsewhere/tok")
    assert token_file() == tmp_path / "elsewhere" / "tok"


def test_the_graph_cache_key_is_the_models_content_not_its_path(tmp_path):
    first = tmp_path / "venv-a" / "model"
    first.mkdir(parents=True)
    (first / "config.json").write_text('{"model_type": "bert"}')
    (first / "model.safetensors").write_bytes(b"\x00" * 64)
    second = tmp_path / "venv-b" / "site-packages" / "model"
    shutil.copytree(first, second)
    assert model_files_digest(str(first), "graph") == model_files_digest(str(second), "graph")
    (second / "model.safetensors").write_bytes(b"\x01" * 64)
    assert model_files_digest(str(first), "graph") != model_files_digest(str(second), "graph")
