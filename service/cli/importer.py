"""`python -m service.cli.importer FILE [options]`: the same as `engram import FILE [options]`.

The importer itself lives in service/admin/importing.py; these names stay importable from here.
"""

from __future__ import annotations

import sys

from service.admin.importing import BATCH_SIZE, WORKERS, Failure, Importer, ImportReport, relaxed_refresh
from service.admin.jobs import connect, import_file

__all__ = ["BATCH_SIZE", "WORKERS", "Failure", "ImportReport", "Importer", "connect", "import_file", "main", "relaxed_refresh"]


def main(argv: list[str] | None = None) -> int:
    from service.cli.main import main as engram

    return engram(["import", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
