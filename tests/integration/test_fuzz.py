"""Schema fuzzing in the regular suite: schemathesis against the app's own OpenAPI document, every
operation, a real app (uvicorn, with the production HTTP options) on the real engine.

The same harness as `python -m bench.fuzz` (the long run, >= 5,000 cases), with a small budget and
a fixed seed (derandomized generation): the schema's examples, the coverage phase (boundary and
negative values: out-of-bound numbers, wrong types, missing required fields, unexpected methods),
valid and invalid generated data with hostile strings and numbers mixed in, and stateful sequences.
Checks on every response: no 5xx, a documented status, the documented content type and schema, and
the exact error shape for every error. Nothing may be logged at ERROR meanwhile.
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter

import pytest
from fastapi import FastAPI
from fastapi.responses import JSONResponse, PlainTextResponse

from bench.fuzz import fuzz_config, run, seed_memories
from service.api.http_protocol import SERVER_OPTIONS
from service.storage.bootstrap import drop_prefix
from tests.conftest import ADMIN, TOKEN
from tests.integration.live_server import serve

# Generated cases per operation in the fuzzing phase (the coverage phase adds ~1,400 fixed ones): the
# default run keeps a short seeded profile; the long one is marked slow (`make test-slow`, `make fuzz`).
SHORT_EXAMPLES = 5
LONG_EXAMPLES = 25
SEED = 20240601


@pytest.fixture
def live_app(engine_url, embedder, os_client):
    from service.config import Settings
    from service.main import create_app

    prefix = f"t{uuid.uuid4().hex[:10]}"
    # No consolidation scheduler of its own (tick 0): the log check below leaves out the scheduler
    # threads of other apps in this worker process, whose indices other tests have dropped.
    settings = Settings(opensearch_url=engine_url, index_prefix=prefix, automem_api_token=TOKEN, admin_api_token=ADMIN,
                        enrichment_enabled=False, write_refresh="true", consolidation_tick_seconds=0)
    app = create_app(settings, embedder=embedder)
    try:
        with serve(app, **SERVER_OPTIONS) as base:
            yield app, base
    finally:
        drop_prefix(os_client, prefix)


def operations(openapi: dict) -> set[str]:
    return {f"{method.upper()} {path}" for path, methods in openapi["paths"].items() for method in methods}


@pytest.mark.parametrize("max_examples", [pytest.param(SHORT_EXAMPLES, id="short"),
                                          pytest.param(LONG_EXAMPLES, id="long", marks=pytest.mark.slow)])
def test_every_operation_holds_under_schema_fuzzing(live_app, caplog, max_examples):
    app, base = live_app
    ids, tags = seed_memories(base, TOKEN)
    openapi = app.openapi()
    with caplog.at_level(logging.WARNING):
        report = run(openapi, fuzz_config(base, token=TOKEN, admin_token=ADMIN, max_examples=max_examples, seed=SEED, ids=ids, tags=tags))
    print(report.summary())

    assert not report.failures, report.summary()
    assert not report.errors, report.errors
    assert set(report.cases) == operations(openapi), "every operation is fuzzed"
    assert {"coverage", "fuzzing", "stateful"} <= set(report.phases), report.phases
    # Hostile data was really sent and refused, and valid data really went through.
    seen: Counter = Counter()
    for counter in report.statuses.values():
        seen.update(counter)
    assert seen[400] > 100 and seen[401] > 0 and seen[404] > 0, seen
    assert seen[200] > 50 and seen[201] > 0, seen
    assert report.total > 1000, report.total
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR and r.threadName != "consolidation-scheduler"]
    assert not errors, [r.getMessage() for r in errors]


# --- the harness can fail: a deliberately broken app is caught ---------------------------------
def broken_app() -> FastAPI:
    app = FastAPI()

    @app.get("/crash", responses={200: {"description": "ok"}})
    def crash(n: int = 0):
        if n > 3:
            raise RuntimeError("boom")  # a 500
        return {"n": n}

    @app.get("/plain", responses={200: {"description": "ok"}})
    def plain(n: int = 0):
        return PlainTextResponse("nope", status_code=400)  # neither documented nor JSON

    @app.get("/shape", responses={200: {"description": "ok"}, 404: {"description": "missing"}})
    def shape(n: int = 0):
        return JSONResponse({"detail": "missing"}, status_code=404)  # documented, but not the error shape

    return app


def test_the_harness_reports_5xx_undocumented_statuses_and_wrong_error_bodies():
    app = broken_app()
    with serve(app) as base:
        report = run(app.openapi(), fuzz_config(base, token=TOKEN, admin_token=ADMIN, max_examples=20, seed=SEED))
    found = {(f.check, f.operation) for f in report.failures}
    assert ("no_server_error", "GET /crash") in found, report.summary()
    assert ("status_code_conformance", "GET /plain") in found, report.summary()
    assert ("error_shape", "GET /plain") in found, report.summary()
    assert ("error_shape", "GET /shape") in found, report.summary()
    assert ("status_code_conformance", "GET /shape") not in found, report.summary()
