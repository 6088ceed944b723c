"""What `python -m service` prints once the app is up: where the API, its docs, the engine and the token are."""

from __future__ import annotations

from types import SimpleNamespace

from service.__main__ import banner
from service.config import Settings


def state(**settings) -> SimpleNamespace:
    return SimpleNamespace(
        settings=Settings(automem_api_token="t", **settings), opensearch_url="http://127.0.0.1:9200",
        embedder=SimpleNamespace(short_name="all-MiniLM-L6-v2", backend="onnx"),
    )


def test_banner_with_the_local_node_and_a_token_file():
    assert banner(state(), "0.0.0.0", 8001, "stored in /home/me/.config/engram/token").splitlines() == [
        "engram is up (all-MiniLM-L6-v2, onnx)",
        "  API     http://127.0.0.1:8001",
        "  docs    http://127.0.0.1:8001/docs",
        "  engine  http://127.0.0.1:9200 (local node 'dev')",
        "  token   stored in /home/me/.config/engram/token",
    ]


def test_banner_with_an_engine_and_a_token_from_the_environment():
    lines = banner(state(opensearch_url="http://search:9200"), "10.1.2.3", 9000).splitlines()
    assert lines[1:] == [
        "  API     http://10.1.2.3:9000",
        "  docs    http://10.1.2.3:9000/docs",
        "  engine  http://127.0.0.1:9200",
        "  token   AUTOMEM_API_TOKEN from the environment",
    ]


def test_banner_names_a_loaded_tokens_file():
    shown = state(engram_tokens_file="/etc/engram/tokens.json")
    shown.tokens = ["agent-a", "agent-b"]  # what the lifespan loaded (a TokenRegistry has a length)
    assert banner(shown, "127.0.0.1", 8001).splitlines()[-1] == "  tokens  2 scoped tokens from /etc/engram/tokens.json"


def test_without_an_api_token_the_local_token_file_is_made_once_and_reused(tmp_path, monkeypatch):
    import os

    from service.__main__ import api_token

    path = tmp_path / "config" / "engram" / "token"
    monkeypatch.setenv("ENGRAM_TOKEN_FILE", str(path))
    first, source = api_token(Settings())
    assert source == f"stored in {path}" and first.automem_api_token == path.read_text().strip()
    assert len(first.automem_api_token) >= 32 and os.stat(path).st_mode & 0o777 == 0o600
    again, _ = api_token(Settings())
    assert again.automem_api_token == first.automem_api_token
    given, source = api_token(Settings(automem_api_token="from-env"))
    assert (given.automem_api_token, source) == ("from-env", "AUTOMEM_API_TOKEN from the environment")


def test_an_unusable_token_file_is_one_clear_error(tmp_path, monkeypatch):
    import pytest

    from service.__main__ import api_token
    from service.auth.local_token import LocalTokenError

    monkeypatch.setenv("ENGRAM_TOKEN_FILE", str(tmp_path))  # a folder
    with pytest.raises(LocalTokenError, match=f"ENGRAM_TOKEN_FILE='{tmp_path}': cannot read the token file"):
        api_token(Settings())


def test_once_started_the_collector_leaves_startup_objects_alone_and_runs_less_often():
    # In a child process: freezing the test runner's own heap would outlive the test.
    import subprocess
    import sys

    probe = ("import gc; from service.__main__ import settle_gc, GC_GEN0_THRESHOLD; before = gc.get_threshold(); settle_gc(); "
             "print(gc.get_freeze_count() > 0, gc.get_threshold() == (GC_GEN0_THRESHOLD, *before[1:]), GC_GEN0_THRESHOLD > before[0])")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "True", "True"]
