"""`engram` (the console script in pyproject.toml): one entry point for the command-line tools.

    engram serve [--port 8001]        the API (python -m service)
    engram import FILE.jsonl [...]    bulk import (python -m service.cli.importer)
    engram engine start|stop|status   the local OpenSearch node (python -m service.localnode)
"""

from __future__ import annotations

import sys

COMMANDS = {
    "serve": ("service.__main__", "run the API"),
    "import": ("service.cli.importer", "bulk-import memories from JSONL"),
    "engine": ("service.localnode", "build, start, stop or inspect the local OpenSearch node"),
}


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help") or args[0] not in COMMANDS:
        print(__doc__.strip())
        for name, (_, what) in COMMANDS.items():
            print(f"  {name:8s} {what}")
        return 0 if args and args[0] in ("-h", "--help") else 2
    import importlib

    module = importlib.import_module(COMMANDS[args[0]][0])
    return int(module.main(args[1:]) or 0)


if __name__ == "__main__":
    sys.exit(main())
