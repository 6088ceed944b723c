"""`python -m service` with the recall pipeline stubbed: RecallService.recall answers its first call
for real (over the corpus of INDEX_PREFIX) and returns that same body to every later call, so a
GET /recall then costs only the web layer (uvicorn, starlette, FastAPI, the middlewares, the
dependencies, the route, the response). For bench.web_stack.

    PYTHONPATH=<tree> python <this file> [python -m service's arguments]

Run by path, with the tree under test first on PYTHONPATH: it imports nothing of bench/, so one
copy measures any commit's service.
"""

from __future__ import annotations

import sys

from service.recall.pipeline import RecallService

_real = RecallService.recall
_kept: dict[str, dict] = {}


def _constant(self, req, now, defer=None):
    if "body" not in _kept:
        # Deferred work (access tracking) is dropped: the corpus stays as it is.
        _kept["body"] = _real(self, req, now, defer=lambda *a, **k: None)
    return _kept["body"]


RecallService.recall = _constant

if __name__ == "__main__":
    from service.__main__ import main

    sys.exit(main(sys.argv[1:]))
