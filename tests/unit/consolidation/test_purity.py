"""The consolidation math and the insights/stream builders are pure: no engine client, no web framework."""

import subprocess
import sys
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[3]
FORBIDDEN = ("opensearchpy", "fastapi", "starlette", "numpy", "pydantic", "sse_starlette")

PROBE = """
import sys
import service.consolidation.relevance, service.consolidation.clusters, service.consolidation.creative
import service.consolidation.queries, service.stream.payloads
mods = sorted(m for m in sys.modules if m.startswith('service'))
print(' '.join(sorted({name.split('.')[0] for name in sys.modules})))
print(' '.join(mods))
"""


@pytest.mark.unit
def test_pure_modules_import_nothing_forbidden():
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True).stdout.splitlines()
    roots, service_modules = set(out[0].split()), set(out[1].split())
    assert roots.isdisjoint(FORBIDDEN), sorted(roots & set(FORBIDDEN))
    assert {"service.storage", "service.recall", "service.writes.writer"}.isdisjoint(service_modules)
