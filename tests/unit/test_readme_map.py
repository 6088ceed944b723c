"""The README's map of the code names what is there: every module and folder it names exists, and
every package of service/ is on it (the map had gone stale by a whole layout, issue 22)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _section() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("## The code\n")
    return text[start : text.index("\n## ", start + 1)]


def test_every_name_on_the_map_exists():
    names = set(re.findall(r"`([\w./*-]+)`", _section()))
    files = {p.name for p in ROOT.glob("**/*.py") if ".venv" not in p.parts}
    folders = {p.name for p in ROOT.glob("**/") if p.is_dir()}
    missing = [n for n in names if n.endswith(".py") and "*" not in n and Path(n).name not in files]
    missing += [n for n in names if n.endswith("/") and Path(n.rstrip("/")).name not in folders]
    assert missing == []


def test_every_service_package_is_on_the_map():
    section = _section()
    packages = [p.parent.name for p in (ROOT / "service").glob("*/__init__.py")]
    assert [p for p in packages if f"`{p}/" not in section] == []
