"""Where Engram keeps what it builds outside the repository (engine builds, node folders, ONNX graphs),
where the API token of a local install lives, and where the files shipped inside the package are."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path


def cache_root() -> Path:
    """$ENGRAM_HOME, else $XDG_CACHE_HOME/engram, else ~/.cache/engram."""
    if os.environ.get("ENGRAM_HOME"):
        return Path(os.environ["ENGRAM_HOME"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "engram"


def token_file() -> Path:
    """The API token file of a local install (`make run`, `engram serve` without AUTOMEM_API_TOKEN; the
    MCP server reads it too): $ENGRAM_TOKEN_FILE, else $XDG_CONFIG_HOME/engram/token, else
    ~/.config/engram/token."""
    if os.environ.get("ENGRAM_TOKEN_FILE"):
        return Path(os.environ["ENGRAM_TOKEN_FILE"]).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "engram" / "token"


def package_folder(package: str, *parts: str) -> Path:
    """A folder or file shipped inside `package` (index templates, the engine's Maven project), as a
    path: the same in a checkout, an editable install and a wheel installed into site-packages."""
    found = resources.files(package).joinpath(*parts)
    if not isinstance(found, Path):  # a zipped install: Maven and OpenSearch need real files
        raise RuntimeError(f"{package}/{'/'.join(parts)} is not on the file system ({found}); install Engram unzipped")
    return found
