"""scoring/ is pure: importing it drags in no engine client, web framework or service code."""

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

PROJECT_ROOT = Path(__file__).resolve().parents[3]
FORBIDDEN = ("opensearchpy", "fastapi", "service", "numpy", "starlette", "pydantic")

PROBE = """
import sys
import scoring
import scoring.components, scoring.context, scoring.floors
import scoring.keywords, scoring.rerank, scoring.weights
import scoring.idf_share, scoring.metadata_sidecar, scoring.metadata_terms, scoring.neighbours
roots = sorted({name.split('.')[0] for name in sys.modules})
print('\\n'.join(roots))
"""


def test_importing_scoring_imports_nothing_forbidden():
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    roots = set(result.stdout.split())
    assert "scoring" in roots
    assert "snowballstemmer" in roots
    assert roots.isdisjoint(FORBIDDEN), sorted(roots & set(FORBIDDEN))
