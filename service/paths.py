"""Where Engram keeps what it builds outside the repository (engine builds, node folders, ONNX graphs)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """$ENGRAM_HOME, else $XDG_CACHE_HOME/engram, else ~/.cache/engram."""
    if os.environ.get("ENGRAM_HOME"):
        return Path(os.environ["ENGRAM_HOME"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "engram"
