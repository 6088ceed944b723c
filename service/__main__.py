"""`python -m service`: run the Engram API with uvicorn (HOST/PORT from the environment).

Start-up errors are one line on stderr and exit status 2: a bad setting (named, with the value
tried and what is wrong), an unreachable engine (naming OPENSEARCH_URL), a model that needs the
models extra. To get there the app's lifespan runs before uvicorn starts (uvicorn runs with
`lifespan="off"`), so no server line or traceback comes first, and its shutdown runs inside
uvicorn's, before uvicorn re-raises the signal that stopped it.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import sys
from contextlib import AsyncExitStack

import uvicorn

from service.config import Settings, SettingsError, get_settings
from service.embedding import EmbeddingError, check_model
from service.errors import EngramError
from service.engine.local_node import EngineError
from service.api.http_protocol import SERVER_OPTIONS
from service.main import ConfigurationError, check_settings, create_app
from service.observability.oplog import configure_logging
from service.storage.probe import StartupError

log = logging.getLogger("engram")

# What a start-up can fail with that is the setup's fault, not a bug: one line, no traceback.
STARTUP_ERRORS = (ConfigurationError, StartupError, SettingsError, EngramError, EmbeddingError, EngineError)


def one_line(exc: BaseException) -> str:
    text = exc.message if isinstance(exc, EngramError) else str(exc)
    return " ".join(text.split()) or type(exc).__name__


class _Server(uvicorn.Server):
    """uvicorn's server, which says where everything is once the app is up, and ends the app's
    lifespan (`app_exit`) as its own shutdown's last step."""

    def __init__(self, config: uvicorn.Config, app_exit: AsyncExitStack, json_logs: bool = False):
        super().__init__(config)
        self.app_exit = app_exit
        self.json_logs = json_logs

    async def startup(self, sockets=None) -> None:
        await super().startup(sockets)
        if self.started:
            state, host, port = self.config.app.state, self.config.host, self.config.port
            if self.json_logs:  # a log shipper reads stderr: the banner as one record
                lines = banner(state, host, port).splitlines()
                log.info(lines[0], extra={k.lower(): v for k, v in (line.split(None, 1) for line in lines[1:])})
            else:
                print(banner(state, host, port), file=sys.stderr, flush=True)

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


async def serve(app, config: uvicorn.Config, json_logs: bool) -> int:
    stack = AsyncExitStack()
    try:
        await stack.enter_async_context(app.router.lifespan_context(app))
    except STARTUP_ERRORS as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr, flush=True)
        return 2
    settle_gc()
    try:
        await _Server(config, stack, json_logs).serve()
    finally:
        await stack.aclose()  # a no-op when the server's shutdown did it
    return 0


def banner(state, host: str, port: int) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    api = f"http://{shown}:{port}"
    settings: Settings = state.settings
    engine = state.opensearch_url + ("" if settings.opensearch_url else f" (local node {settings.local_node_name!r})")
    token_file = os.environ.get("ENGRAM_TOKEN_FILE")
    token = f"stored in {token_file}" if token_file else "AUTOMEM_API_TOKEN from the environment"
    return (
        f"engram is up ({state.embedder.short_name}, {state.embedder.backend})\n"
        f"  API     {api}\n  docs    {api}/docs\n  engine  {engine}\n  token   {token}"
    )


def main(argv: list[str] | None = None) -> int:
    try:
        settings = get_settings()
    except SettingsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(
        prog="python -m service",
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
    try:
        check_settings(settings)
        check_model(settings.embedding_model, settings.embedding_backend)
    except (ConfigurationError, EmbeddingError) as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    app = create_app(settings)
    # access_log=False: uvicorn's access line carries the query string (tokens, query text);
    # service.api.middleware logs method, path, status and duration instead. log_config=None: uvicorn's
    # own lines go through our handler (and its LOG_FORMAT). SERVER_OPTIONS: the HTTP parser's own
    # 400s get the error shape too.
    config = uvicorn.Config(app, host=args.host, port=args.port, log_level=args.log_level, access_log=False,
                            lifespan="off", log_config=None, **SERVER_OPTIONS)
    try:
        with asyncio.Runner(loop_factory=config.get_loop_factory()) as runner:
            return runner.run(serve(app, config, args.log_format == "json"))
    except KeyboardInterrupt:  # Ctrl-C; once the server ran, its shutdown (and the app's) is done by now
        return 130


if __name__ == "__main__":
    sys.exit(main())
