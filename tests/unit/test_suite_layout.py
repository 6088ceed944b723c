"""The suite collects as one: pytest's default import mode keys test modules by basename, so two test
files of the same name in different folders stop the run at collection (CI, 2026-12-02)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]


def test_no_two_test_modules_share_a_basename():
    testpaths = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["testpaths"]
    names = Counter(p.name for folder in testpaths for p in (ROOT / folder).rglob("test_*.py"))
    assert [name for name, n in names.items() if n > 1] == []
