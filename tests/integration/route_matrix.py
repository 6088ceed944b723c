"""Requests generated from `app.routes` (and the OpenAPI page FastAPI derives from them): for each route
and method, a request per way its surface names a bank, with path, query and body filled from the
route's own parameters and schemas. The matrices over routes (tests/integration/test_banks.py) are
built from these, so a new route is in them the day it is added."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from fastapi.routing import APIRoute, iter_route_contexts

from service.api.auth import require_admin_token, require_api_token
from service.api.scope import OPEN_PATHS

OPEN = OPEN_PATHS


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    admin: bool  # behind the admin token (403 before any bank is resolved, for a token without it)
    sse: bool  # an event stream: never ends while the bank is the caller's own
    operation: Mapping[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Call:
    route: Route
    way: str  # how the bank is named: "own" (not at all, or the caller's own bank), or how another one is
    path: str
    params: dict[str, Any]
    headers: dict[str, str]
    json: Any = None

    @property
    def names_other_bank(self) -> bool:
        return not self.way.startswith("own")

    def send(self, client, token_headers: Mapping[str, str]):
        kwargs: dict[str, Any] = {"params": self.params, "headers": {**token_headers, **self.headers}}
        if self.json is not None:
            kwargs["json"] = self.json
        return client.request(self.route.method, self.path, **kwargs)

    def __str__(self) -> str:
        return f"{self.route.method} {self.path} ({self.way}) params={self.params} headers={self.headers} json={self.json}"


def _calls(dependant) -> Iterator:
    for sub in dependant.dependencies:
        yield sub.call
        yield from _calls(sub)


def guarded_routes(app) -> list[Route]:
    """Every route and method behind the API token, in the app's order."""
    spec = app.openapi()
    out = []
    for ctx in iter_route_contexts(app.routes):
        if not isinstance(ctx.original_route, APIRoute) or ctx.path in OPEN:
            continue
        deps = list(_calls(ctx.dependant))
        assert require_api_token in deps, f"{ctx.path} is neither open nor authenticated"
        sse = "EventSourceResponse" in getattr(ctx.response_class, "__name__", str(ctx.response_class))
        for method in sorted(ctx.methods):
            op = spec["paths"].get(ctx.path, {}).get(method.lower(), {})
            out.append(Route(method, ctx.path, require_admin_token in deps, sse, op))
    return out


class Filler:
    """Values for the route's own parameters and body fields: `values` by field name (the ids and words
    of the test's data), else a plain value of the field's type."""

    def __init__(self, spec: Mapping[str, Any], values: Mapping[str, Any]):
        self.spec = spec
        self.values = values

    def _resolve(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        while "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[-1]
            schema = self.spec["components"]["schemas"][name]
        for key in ("anyOf", "oneOf", "allOf"):
            if key in schema:
                options = [s for s in schema[key] if self._resolve(s).get("type") != "null"]
                return self._resolve(options[0]) if options else {}
        return schema

    def value(self, name: str, schema: Mapping[str, Any], depth: int = 0) -> Any:
        if name in self.values:
            return self.values[name]
        schema = self._resolve(schema)
        kind = schema.get("type")
        if "enum" in schema:
            return schema["enum"][0]
        if kind == "object" or "properties" in schema:
            return self.object(schema, depth + 1)
        if kind == "array":
            return [self.value(name, schema.get("items", {}), depth + 1)]
        if kind == "boolean":
            return False
        if kind in ("integer", "number"):
            return schema.get("minimum", 1) or 1
        return "probe"

    def object(self, schema: Mapping[str, Any], depth: int = 0, *, plain: bool = False) -> dict[str, Any]:
        """The required fields, and (unless `plain`) every field `values` names."""
        schema = self._resolve(schema)
        props = schema.get("properties", {})
        if not props:  # an untyped body: the fields that name memories
            return {k: v for k, v in self.values.items() if k in ("ids",)}
        wanted = set(schema.get("required", ())) | (set() if plain else {k for k in props if k in self.values})
        return {k: self.value(k, props[k], depth) for k in props if k in wanted and depth < 4}


def calls(app, route: Route, *, own: str, other: str, values: Mapping[str, Any]) -> list[Call]:
    """The requests of one route: its bank named not at all (or as `own` in the path) — with every field
    `values` names, and ("own plain") with the required ones alone —, and `other` named every way the
    route accepts (X-Bank, ?bank=, the path, Signet's `scope`, a body's `bank`)."""
    op, fill = route.operation, Filler(app.openapi(), values)
    params = {p["name"]: p for p in op.get("parameters", [])}
    query = {n: fill.value(n, p.get("schema", {})) for n, p in params.items()
             if p["in"] == "query" and n not in ("bank", "scope") and (p.get("required") or n in values)}
    plain_query = {n: v for n, v in query.items() if params[n].get("required")}
    body_schema = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    body = fill.object(body_schema) if body_schema is not None else None
    plain_body = fill.object(body_schema, plain=True) if body_schema is not None else None
    body_props = fill._resolve(body_schema).get("properties", {}) if body_schema is not None else {}
    path = route.path
    for n, p in params.items():
        if p["in"] == "path" and n != "bank_id":
            path = path.replace("{" + n + "}", str(fill.value(n, p.get("schema", {}))))
    out: list[Call] = []

    def add(way: str, bank_in_path: str | None = None, q: dict | None = None, h: dict | None = None, b: Any = None,
            base: dict | None = None) -> None:
        target = path.replace("{bank_id}", bank_in_path) if bank_in_path else path
        out.append(Call(route, way, target, {**(query if base is None else base), **(q or {})}, h or {}, body if b is None else b))

    in_path = own if "bank_id" in params else None
    add("own", in_path)
    if (plain_query, plain_body) != (query, body):
        add("own plain", in_path, b=plain_body if plain_body is not None else None, base=plain_query)
    if "bank_id" in params:
        add("path", other)
    if "X-Bank" in params:
        add("header", h={"X-Bank": other})
        add("query", q={"bank": other})
    if "scope" in params:
        add("scope query", q={"scope": other})
    for name in ("scope", "bank"):
        if name in body_props:
            add(f"body {name}", b={**(body or {}), name: other})
    if route.sse:
        out = [c for c in out if c.names_other_bank]  # the caller's own stream would never end
    return out
