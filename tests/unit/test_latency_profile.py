"""bench/latency_profile.py: a profiled function's file and stage, whatever the checkout's path."""

from __future__ import annotations

import pytest

from bench.latency_profile import home, short


@pytest.mark.parametrize(("path", "expected"), [
    ("/work/main/service/recall/lean.py", "service/recall/lean.py"),
    ("/tmp/w/wt/scoring/rerank.py", "scoring/rerank.py"),
    ("/tmp/wt-before/service/recall/pipeline.py", "service/recall/pipeline.py"),
    ("service/recall/retrieval.py", "service/recall/retrieval.py"),
    ("/root/.cache/engram/venv-x/lib/python3.11/site-packages/anyio/to_thread.py", "anyio/to_thread.py"),
    ("/root/.cache/engram/venv-x/lib/python3.11/site-packages/opensearchpy/service/x.py", "opensearchpy/service/x.py"),
    ("/root/.pyenv/versions/3.11.7/lib/python3.11/threading.py", "stdlib/threading.py"),
    ("~", "~"),
])
def test_short(path, expected):
    assert short(path) == expected


@pytest.mark.parametrize(("func", "stage"), [
    (("/work/main/scoring/rerank.py", 227, "score_candidate"), "scoring"),
    (("/work/main/service/recall/retrieval.py", 220, "parse_responses"), "arms' response -> candidates"),
    (("/work/main/service/recall/pipeline.py", 1, "track_access"), "access tracking"),
    (("/work/main/service/recall/pipeline.py", 1, "recall"), "recall pipeline glue"),
    (("/work/main/service/recall/pool.py", 1, "candidate_of"), "scoring"),
    (("/work/main/service/recall/pool.py", 1, "source"), "recall pipeline glue"),
    (("/x/lib/python3.11/site-packages/anyio/_backends/_asyncio.py", 1, "run"), "thread-pool handoff (anyio)"),
    (("~", 0, "<method 'get' of 'dict' objects>"), None),  # a builtin: charged to its callers
])
def test_home(func, stage):
    assert home(func) == stage
