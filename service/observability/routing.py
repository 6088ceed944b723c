"""The route a request would reach, for answers given before the router ran (RequestGuard's 413, a
request the HTTP parser refused): the metrics label it with the route's template
(`http_metrics`), the error takes the route's shape (`service.api.errors.unrouted_body`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.routing import Match


def _flat_routes(app: Any) -> list[Any]:
    """The app's routes with FastAPI's included routers (FastAPI >= 0.116) expanded into theirs."""
    flat: list[Any] = []
    for route in getattr(app, "routes", ()):
        contexts = getattr(route, "effective_route_contexts", None)
        if callable(contexts):
            flat.extend(getattr(c, "starlette_route", None) or c for c in contexts())
        else:
            flat.append(route)
    return flat


def route_for(app: Any, scope: Mapping[str, Any]) -> tuple[Any, Match]:
    """The first route matching the request's method and path, as the router picks (Match.FULL); else
    the first matching its path only (Match.PARTIAL: another method's); else (None, Match.NONE)."""
    partial = None
    for route in _flat_routes(app):
        if not isinstance(getattr(route, "path", None), str):
            continue
        match, _ = route.matches(scope)
        if match == Match.FULL:
            return route, match
        if match == Match.PARTIAL and partial is None:
            partial = route
    return (partial, Match.PARTIAL) if partial is not None else (None, Match.NONE)
