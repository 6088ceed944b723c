"""The API token of a local install: one random token in a file only its owner can read.

`make run` and `engram serve` use it when AUTOMEM_API_TOKEN is not set (made on the first start),
and the MCP server reads it when no AUTOMEM_API_KEY is given, so a local setup needs no token in
any configuration. Where the file is: service.paths.token_file() (ENGRAM_TOKEN_FILE, default
~/.config/engram/token). The token itself is never printed, only where it is.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path


class LocalTokenError(RuntimeError):
    """The token file cannot be read or written; the message names it."""


def read_token(path: Path) -> str | None:
    """The token stored in `path`, or None when there is no such file (or it is empty)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise LocalTokenError(f"ENGRAM_TOKEN_FILE={str(path)!r}: cannot read the token file ({exc.strerror or exc})") from None
    return text.strip() or None


def ensure_token(path: Path) -> str:
    """The token stored in `path`, made (random, mode 0600) when the file does not exist or is empty.
    The file appears whole (written aside, then linked into place): two processes starting at once
    keep one token, the second reads the first's."""
    token = read_token(path)
    if token:
        return token
    token = secrets.token_urlsafe(32)
    aside = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(token + "\n")
        try:
            os.link(aside, path)
        except FileExistsError:
            existing = read_token(path)
            if existing:
                return existing
            os.replace(aside, path)  # an empty file: fill it
    except OSError as exc:
        raise LocalTokenError(f"ENGRAM_TOKEN_FILE={str(path)!r}: cannot write the token file ({exc.strerror or exc})") from None
    finally:
        aside.unlink(missing_ok=True)
    return token
