"""`python -m service`: run the Engram API with uvicorn (HOST/PORT from the environment)."""

from __future__ import annotations

import argparse
import logging
import sys

import uvicorn

from service.api.http_protocol import SERVER_OPTIONS
from service.config import get_settings
from service.main import ConfigurationError, check_settings, create_app


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
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        check_settings(settings)
    except ConfigurationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    # access_log=False: uvicorn's access line carries the query string (tokens, query text);
    # service.api.middleware logs method, path, status and duration instead. SERVER_OPTIONS: the
    # HTTP parser's own 400s get the error shape too.
    uvicorn.run(create_app(settings), host=args.host, port=args.port, log_level=args.log_level, access_log=False, **SERVER_OPTIONS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
