"""Generated from `app.routes`: every route but the open ones authenticates and declares the one bank
scope (service/api/scope.py), and no route reads `request.app.state` itself. A new route that forgets
either fails here, whoever wrote it."""

from __future__ import annotations

import inspect
from collections.abc import Iterator

import pytest
from fastapi.routing import APIRoute, iter_route_contexts

from service.api.auth import require_api_token
from service.api.scope import is_scope
from service.config import Settings
from service.main import create_app
from service.api.scope import OPEN_PATHS

# Open by design (service/api/scope.py OPEN_PATHS): liveness and readiness, the docs, /metrics (its own token), /version.
OPEN = OPEN_PATHS


def api_routes() -> list:
    app = create_app(Settings(automem_api_token="unit-token"))
    return [c for c in iter_route_contexts(app.routes) if isinstance(c.original_route, APIRoute)]


def calls(dependant) -> Iterator:
    for sub in dependant.dependencies:
        yield sub.call
        yield from calls(sub)


ROUTES = api_routes()
GUARDED = [c for c in ROUTES if c.path not in OPEN]


def test_the_routes_are_found():
    paths = {c.path for c in ROUTES}
    assert {"/recall", "/startup-recall", "/v1/default/banks/{bank_id}/memories/recall", "/api/memory/recall"} <= paths
    assert len(GUARDED) >= 40  # flattened through every included router


@pytest.mark.parametrize("route", GUARDED, ids=lambda c: f"{'|'.join(sorted(c.methods))} {c.path}")
def test_every_authenticated_route_declares_the_bank_scope(route):
    deps = list(calls(route.dependant))
    assert require_api_token in deps, "not authenticated: declare a scope from service/api/scope.py"
    assert any(is_scope(d) for d in deps), "no bank scope: declare ReadScope, WriteScope, AdminScope, ... (service/api/scope.py)"


@pytest.mark.parametrize("route", ROUTES, ids=lambda c: f"{'|'.join(sorted(c.methods))} {c.path}")
def test_no_route_reads_the_app_state(route):
    """Routes reach the app's resources through the typed dependencies of service/api/deps.py."""
    assert "app.state" not in inspect.getsource(route.endpoint)


def test_open_routes_take_no_token():
    for route in ROUTES:
        if route.path in OPEN:
            assert require_api_token not in list(calls(route.dependant)), route.path
