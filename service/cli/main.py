"""`engram` (the console script in pyproject.toml): one entry point for every command-line tool.

    engram serve                         the API
    engram import FILE | export          memories in and out as JSONL (or a backup archive in)
    engram backup | restore FILE         AutoMem-layout backup archives, directly or via --api
    engram reembed                       vectors of the configured model
    engram snapshot create|list|restore  OpenSearch snapshots (large stores)
    engram engine start|stop|status      the local OpenSearch node
    engram dashboards install --url URL  OpenSearch Dashboards saved objects
    engram bench NAME                    the benchmarks

Every command has --help. Settings come from the environment as for the service (OPENSEARCH_URL,
INDEX_PREFIX, DEFAULT_BANK, EMBEDDING_MODEL, ...), overridden by --url / --prefix / --bank.
"""

from __future__ import annotations

import sys

import typer

from service.cli import data, ops

app = typer.Typer(
    name="engram",
    help="Engram: memory recall for AI agents on OpenSearch. Settings come from the environment as for the service "
    "(OPENSEARCH_URL, INDEX_PREFIX, DEFAULT_BANK, EMBEDDING_MODEL, ...); `engram COMMAND --help` shows a command's options.",
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
data.register(app)
ops.register(app)


def main(argv: list[str] | None = None) -> int:
    """Run one command; the exit status (0 success, 1 partial failure, 2 error or usage)."""
    try:
        app(args=sys.argv[1:] if argv is None else list(argv), prog_name="engram", standalone_mode=True)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
