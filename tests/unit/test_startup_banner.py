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


def test_banner_with_the_local_node_and_a_token_file(monkeypatch):
    monkeypatch.setenv("ENGRAM_TOKEN_FILE", "/home/me/.config/engram/token")
    assert banner(state(), "0.0.0.0", 8001).splitlines() == [
        "engram is up (all-MiniLM-L6-v2, onnx)",
        "  API     http://127.0.0.1:8001",
        "  docs    http://127.0.0.1:8001/docs",
        "  engine  http://127.0.0.1:9200 (local node 'dev')",
        "  token   stored in /home/me/.config/engram/token",
    ]


def test_banner_with_an_engine_and_a_token_from_the_environment(monkeypatch):
    monkeypatch.delenv("ENGRAM_TOKEN_FILE", raising=False)
    lines = banner(state(opensearch_url="http://search:9200"), "10.1.2.3", 9000).splitlines()
    assert lines[1:] == [
        "  API     http://10.1.2.3:9000",
        "  docs    http://10.1.2.3:9000/docs",
        "  engine  http://127.0.0.1:9200",
        "  token   AUTOMEM_API_TOKEN from the environment",
    ]


def test_once_started_the_collector_leaves_startup_objects_alone_and_runs_less_often():
    # In a child process: freezing the test runner's own heap would outlive the test.
    import subprocess
    import sys

    probe = ("import gc; from service.__main__ import settle_gc, GC_GEN0_THRESHOLD; before = gc.get_threshold(); settle_gc(); "
             "print(gc.get_freeze_count() > 0, gc.get_threshold() == (GC_GEN0_THRESHOLD, *before[1:]), GC_GEN0_THRESHOLD > before[0])")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "True", "True"]
