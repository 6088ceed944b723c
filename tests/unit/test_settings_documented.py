"""docs/settings.md lists every setting (its environment variable), so the page stays true."""

from __future__ import annotations

import re
from pathlib import Path

from service.config import Settings

DOC = Path(__file__).resolve().parents[2] / "docs" / "settings.md"


def env_names() -> list[str]:
    names = []
    for name, field in Settings.model_fields.items():
        alias = field.validation_alias if isinstance(field.validation_alias, str) else name
        names.append(alias.upper())
    return names


def test_every_setting_is_documented():
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", DOC.read_text()))
    missing = [n for n in env_names() if n not in documented]
    assert missing == [], f"add these to docs/settings.md: {missing}"


def test_every_documented_setting_exists():
    known = set(env_names())
    documented = {n for n in re.findall(r"^\| `([A-Z][A-Z0-9_]+)`", DOC.read_text(), flags=re.M)}
    assert documented - known == set()
