"""QueryModel: the base of every query-string model, and `query_params(Model)`, the type a route
declares to receive one.

The query string reaches the model in ONE validation (`QueryModel.from_query`): FastAPI's own
binding of `Annotated[Model, Query()]` looks every declared field up and classifies its type on each
request (38 fields for GET /recall: ~0.4-0.5 ms of the web layer's ~2 ms of CPU a recall,
bench.web_stack). The dict it builds is the one FastAPI built (declared list fields every value,
other declared fields the last one, undeclared names their value, or the list of them when
repeated), so the model, its warnings and its errors (a RequestValidationError, `query.<field>:
...`) are the same; OpenAPI documents the parameters as FastAPI documents the `Query()` form
(`document`, called by service/api/docs.py). tests/unit/test_query_params.py holds both forms to
the same results. Signet's GET routes keep the `Query()` form: their bank scope reads a query
parameter of its own (`scope`, at most 200 characters), and FastAPI reports its error together
with the model's, which a dependency that raises cannot.

Every model gets every query parameter (extras included, since `extra="allow"`); the `before`
validator folds AutoMem clients' habits onto the declared fields:
- aliases (`order_by` -> `sort`) and PHP-style list spellings (`tags[]`); a field's own name wins;
- lists repeated or comma-separated (`tags=a,b&tags=c`); vectors as `0.1,0.2` or `[0.1, 0.2]`;
- empty values mean "not given"; choices are case-insensitive.
Unknown parameters are accepted (clients send extras) and named by `warnings`.
"""

from __future__ import annotations

import copy
import functools
import inspect
import types
import typing
from collections.abc import Callable, Iterable
from typing import Annotated, Any, ClassVar

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute, iter_route_contexts
from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError, model_validator

from service.memory.tags import split_list_param

# Read by the auth and bank layers, never a model's business.
AUTH_PARAMETERS = frozenset({"api_key", "bank"})


def list_aliases(*names: str) -> dict[str, str]:
    return {f"{name}[]": name for name in names}


class QueryModel(BaseModel):
    model_config = ConfigDict(extra="allow", allow_inf_nan=False)

    aliases: ClassVar[dict[str, str]] = {}
    list_fields: ClassVar[tuple[str, ...]] = ()  # repeated and comma-separated
    plain_list_fields: ClassVar[tuple[str, ...]] = ()  # repeated only (values may hold commas)
    vector_fields: ClassVar[tuple[str, ...]] = ()
    choice_fields: ClassVar[tuple[str, ...]] = ()
    read_elsewhere: ClassVar[tuple[str, ...]] = ()  # parameters another dependency reads (Signet's `scope`): not unknown

    _unknown: list[str] = PrivateAttr(default_factory=list)

    @classmethod
    def from_query(cls, params: Any) -> Any:
        """The model from a query string (starlette's QueryParams, or any `multi_items()` source)."""
        raw: dict[str, Any] = {}
        extra: dict[str, list[str]] = {}
        lists, declared = _list_fields(cls), cls.model_fields
        for key, value in params.multi_items():
            if key in lists:
                raw.setdefault(key, []).append(value)
            elif key in declared:
                raw[key] = value  # the last one, as FastAPI's lookup of a single value
            else:
                extra.setdefault(key, []).append(value)
        for key, values in extra.items():
            raw[key] = values[0] if len(values) == 1 else values
        try:
            return cls.model_validate(raw)
        except ValidationError as exc:
            # FastAPI's own errors for a query model: the same entries, located under "query".
            raise RequestValidationError([{**e, "loc": ("query", *e["loc"])} for e in exc.errors(include_url=False)]) from None

    @model_validator(mode="before")
    @classmethod
    def _fold(cls, raw: Any) -> Any:
        if not isinstance(raw, dict):
            return raw
        lists = set(cls.list_fields) | set(cls.plain_list_fields) | set(cls.vector_fields)
        out: dict[str, Any] = {}
        # Own names first, so `sort` wins over `order_by` whatever their order in the URL.
        for key in sorted(raw, key=lambda k: k in cls.aliases):
            name = cls.aliases.get(key, key)
            values = raw[key] if isinstance(raw[key], list) else [raw[key]]
            values = [v for v in values if not (isinstance(v, str) and not v.strip())]
            if not values:
                continue
            if name in lists:
                out[name] = [*out.get(name, []), *values]
            elif name not in out:
                out[name] = values[0] if len(values) == 1 else values
        for name in cls.list_fields:
            if name in out:
                out[name] = split_list_param([str(v) for v in out[name]])
        for name in cls.plain_list_fields:
            if name in out:
                out[name] = [str(v).strip() for v in out[name] if str(v).strip()]
        for name in cls.vector_fields:
            if name in out:
                out[name] = [p for v in out[name] for p in map(str.strip, str(v).replace("[", "").replace("]", "").split(",")) if p]
        for name in cls.choice_fields:
            if isinstance(out.get(name), str):
                out[name] = out[name].strip().lower()
        return out

    @model_validator(mode="after")
    def _collect_unknown(self):
        extra = self.__pydantic_extra__ or {}
        self._unknown = sorted(k for k in extra if k not in AUTH_PARAMETERS and k not in self.read_elsewhere)
        extra.clear()
        return self

    @property
    def warnings(self) -> list[str]:
        return [f"Unknown parameter '{name}' ignored" for name in self._unknown]


# --- the dependency, and its documentation ------------------------------------------------------------
PARSERS: dict[Callable[..., Any], type[QueryModel]] = {}


def query_params(model: type[QueryModel]) -> Any:
    """`Annotated[model, Depends(...)]`, for a route's signature. Declare it as the route's LAST
    parameter: FastAPI checks query parameters after the route's dependencies, so a bad token or bank
    is answered (401/403/404) before a bad parameter (400), as with the `Query()` form."""

    async def parse(request: Request) -> Any:
        return model.from_query(request.query_params)

    parse.__name__ = parse.__qualname__ = f"parse_{model.__name__}"
    PARSERS[parse] = model
    return Annotated[model, Depends(parse)]


@functools.cache
def _list_fields(model: type[QueryModel]) -> frozenset[str]:
    """Fields FastAPI reads with getlist (a sequence annotation, also inside Optional/Annotated)."""
    return frozenset(name for name, field in model.model_fields.items() if _is_sequence(field.annotation))


def _is_sequence(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _is_sequence(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return any(_is_sequence(arg) for arg in typing.get_args(annotation))
    kind = origin or annotation
    return isinstance(kind, type) and issubclass(kind, (list, tuple, set, frozenset))


@functools.cache
def documented_parameters(model: type[QueryModel]) -> tuple[dict[str, Any], ...]:
    """The parameters FastAPI documents for `Annotated[model, Query()]`, taken from a throwaway app's
    OpenAPI, so the page lists each one as before (type, default, bounds, enum, description)."""

    def endpoint(**_: Any) -> None:
        return None

    endpoint.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("params", inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[model, Query()])])
    app = FastAPI()
    app.add_api_route("/", endpoint, methods=["GET"])
    return tuple(app.openapi()["paths"]["/"]["get"].get("parameters", []))


def _parsers(dependant: Any) -> Iterable[type[QueryModel]]:
    for sub in dependant.dependencies:
        if sub.call in PARSERS:
            yield PARSERS[sub.call]
        yield from _parsers(sub)


def document(schema: dict[str, Any], routes: Iterable[Any]) -> None:
    """Put each route's query-model parameters into its operation, where FastAPI put a `Query()`
    model's: after the path parameters, before those of the route's dependencies."""
    for ctx in iter_route_contexts(routes):
        if not isinstance(ctx.original_route, APIRoute):
            continue
        models = list(dict.fromkeys(_parsers(ctx.dependant)))
        for method in ctx.methods if models else ():
            operation = schema.get("paths", {}).get(ctx.path, {}).get(method.lower())
            if operation is None:
                continue  # not in the schema (include_in_schema=False)
            parameters = operation.setdefault("parameters", [])
            at = sum(1 for p in parameters if p.get("in") == "path")
            parameters[at:at] = [copy.deepcopy(p) for model in models for p in documented_parameters(model)]
