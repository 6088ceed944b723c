"""`python -m service`: run the Engram API with uvicorn (HOST/PORT from the environment)."""

from __future__ import annotations

import argparse
import os
import sys

import uvicorn

from service.config import Settings, get_settings
from service.embedding import EmbeddingError, check_model
from service.main import ConfigurationError, check_settings, create_app
from service.oplog import configure_logging


class _Server(uvicorn.Server):
    """uvicorn's server, which says where everything is once the app is up."""

    async def startup(self, sockets=None) -> None:
        await super().startup(sockets)
        if self.started:
            print(banner(self.config.app.state, self.config.host, self.config.port), file=sys.stderr, flush=True)


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
    settings = get_settings()
    parser = argparse.ArgumentParser(
        prog="python -m service",
        description="Run the Engram memory API. Configuration comes from environment variables "
        "(AUTOMEM_API_TOKEN, OPENSEARCH_URL, INDEX_PREFIX, EMBEDDING_MODEL, SEARCH_WEIGHT_*, RECALL_*); "
        "without OPENSEARCH_URL a local OpenSearch node is started and reused.",
    )
    parser.add_argument("--host", default=settings.host, help=f"bind address (HOST, default {settings.host})")
    parser.add_argument("--port", type=int, default=settings.port, help=f"port (PORT, default {settings.port})")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    args = parser.parse_args(argv)
    configure_logging(args.log_level)  # application events append their fields as JSON (spec 003)
    try:
        check_settings(settings)
        check_model(settings.embedding_model, settings.embedding_backend)
    except (ConfigurationError, EmbeddingError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    app = create_app(settings)
    # access_log=False: uvicorn's access line carries the query string (tokens, query text);
    # service.api.middleware logs method, path, status and duration instead.
    _Server(uvicorn.Config(app, host=args.host, port=args.port, log_level=args.log_level, access_log=False)).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
