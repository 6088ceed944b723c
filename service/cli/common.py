"""What every `engram` command shares: settings from options and the environment, errors as exit codes,
and the HTTP client for commands that talk to a running service instead of the engine."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer

from service.config import Settings, SettingsError, load_settings
from service.errors import EngramError

F = TypeVar("F", bound=Callable[..., Any])

# Options shared by the commands that work on the engine directly.
UrlOpt = Annotated[str | None, typer.Option("--url", help="OpenSearch URL (default: $OPENSEARCH_URL, else the local node)", show_default=False)]
PrefixOpt = Annotated[str | None, typer.Option("--prefix", help="INDEX_PREFIX (default: $INDEX_PREFIX or engram)", show_default=False)]
BankOpt = Annotated[str | None, typer.Option("--bank", help="bank (default: $DEFAULT_BANK or default)", show_default=False)]
ApiOpt = Annotated[str | None, typer.Option(
    "--api", help="a running Engram service (e.g. http://127.0.0.1:8001) to call over HTTP instead of the engine; "
    "tokens from --token/--admin-token or $AUTOMEM_API_TOKEN/$ADMIN_API_TOKEN", show_default=False)]
TokenOpt = Annotated[str | None, typer.Option("--token", help="API token for --api (default: $AUTOMEM_API_TOKEN)", show_default=False)]
AdminTokenOpt = Annotated[str | None, typer.Option("--admin-token", help="admin token for --api (default: $ADMIN_API_TOKEN)", show_default=False)]
JsonOpt = Annotated[bool, typer.Option("--json", help="print the result as JSON")]
NoProgressOpt = Annotated[bool, typer.Option("--no-progress", help="no progress bar")]


def settings_from(url: str | None = None, prefix: str | None = None, bank: str | None = None) -> Settings:
    overrides: dict[str, Any] = {}
    if url:
        overrides["opensearch_url"] = url
    if prefix:
        overrides["index_prefix"] = prefix
    if bank:
        overrides["default_bank"] = bank
    return load_settings(**overrides)


def fail(message: str, code: int = 2) -> typer.Exit:
    print(f"error: {message}", file=sys.stderr)
    return typer.Exit(code)


def reported(fn: F) -> F:
    """The project's errors end the command with a one-line message and exit status 2 (no traceback)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from service.embedding import EmbeddingError
        from service.engine.local_node import EngineError

        try:
            return fn(*args, **kwargs)
        except EngramError as exc:
            raise fail(exc.message) from None
        except (EmbeddingError, EngineError, SettingsError) as exc:
            raise fail(str(exc)) from None
        except KeyboardInterrupt:
            raise fail("interrupted", 130) from None

    return wrapper  # type: ignore[return-value]


def counted(n: int, one: str, many: str | None = None) -> str:
    """`1 edge`, `2 edges`, `1,024 memories`."""
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def skipped_text(skipped: dict) -> str:
    """A restore's skipped records ({"nodes": {label: n}, "relationships": {type: n}}) as words."""
    parts = [f"{counted(n, 'node')} labelled {label}" for label, n in sorted((skipped.get("nodes") or {}).items())]
    parts += [f"{counted(n, 'relationship')} of type {kind}" for kind, n in sorted((skipped.get("relationships") or {}).items())]
    return "skipped " + ", ".join(parts) if parts else "nothing skipped"


def emit(result: dict, as_json: bool, text: str) -> None:
    print(json.dumps(result, default=str) if as_json else text)


class ServiceClient:
    """The admin routes of a running service (httpx), with its two tokens."""

    def __init__(self, base: str, token: str | None, admin_token: str | None, timeout: float | None = None):
        import httpx

        token = token or os.environ.get("AUTOMEM_API_TOKEN")
        admin_token = admin_token or os.environ.get("ADMIN_API_TOKEN")
        if not token or not admin_token:
            raise EngramError("--api needs the API token and the admin token (--token/--admin-token or $AUTOMEM_API_TOKEN/$ADMIN_API_TOKEN)")
        headers = {"Authorization": f"Bearer {token}", "X-Admin-Token": admin_token}
        self.http = httpx.Client(base_url=base.rstrip("/"), headers=headers, timeout=httpx.Timeout(timeout, connect=10.0))

    def check(self, resp) -> None:
        if resp.status_code >= 400:
            try:
                message = resp.json().get("message", resp.text)
            except ValueError:
                message = resp.text
            raise EngramError(f"{resp.request.method} {resp.request.url.path}: {resp.status_code} {message}")
