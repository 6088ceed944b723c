"""`query_params(Model)` (one validation of the whole query string) against FastAPI's own binding of
`Annotated[Model, Query()]`, which the routes used before: for the same query string, the same
model, warnings and RecallRequest, or the same 400 and message. Query strings are generated
(hypothesis) from each model's fields, its aliases, auth and unknown names, and awkward values."""

# No `from __future__ import annotations`: the reference routes' annotations are built in a loop.
from datetime import UTC, datetime
from typing import Annotated, Any
from urllib.parse import urlencode

import pytest
from fastapi import FastAPI, Query
from fastapi._compat import field_annotation_is_sequence
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings as hyp_settings
from hypothesis import strategies as st

from service.api.automem.graph_models import ByTagQuery, RelatedQuery, TagsQuery
from service.api.automem.recall_models import RecallQuery
from service.api.errors import install_error_handlers
from service.api.query_model import QueryModel, _is_sequence, document, documented_parameters, query_params
from service.api.signet.models import LegacySearchQuery, SearchQuery, SimilarQuery
from service.config import Settings

MODELS = [RecallQuery, TagsQuery, ByTagQuery, RelatedQuery, SearchQuery, LegacySearchQuery, SimilarQuery]
SETTINGS = Settings(automem_api_token="t")
NOW = datetime(2026, 5, 13, 12, 0, tzinfo=UTC)
DIMENSION = 3


def _outcome(params: QueryModel) -> dict[str, Any]:
    out: dict[str, Any] = {"model": params.model_dump(mode="json"), "warnings": params.warnings}
    if isinstance(params, RecallQuery):
        out["request"] = repr(params.to_request(SETTINGS, dimension=DIMENSION, now=NOW, bank="default"))
    return out


def _app() -> FastAPI:
    app = FastAPI()
    install_error_handlers(app)  # the 400 and its message, as the service answers
    for model in MODELS:
        def before(params: Annotated[model, Query()]) -> dict:  # noqa: B023 - bound per loop turn below
            return _outcome(params)

        def after(params: query_params(model)) -> dict:  # noqa: B023
            return _outcome(params)

        app.add_api_route(f"/before/{model.__name__}", before, methods=["GET"])
        app.add_api_route(f"/after/{model.__name__}", after, methods=["GET"])
    return app


CLIENT = TestClient(_app())


def _same(model: type[QueryModel], query: str) -> None:
    before = CLIENT.get(f"/before/{model.__name__}?{query}")
    after = CLIENT.get(f"/after/{model.__name__}?{query}")
    assert (after.status_code, after.json()) == (before.status_code, before.json()), query
    assert before.status_code in (200, 400), (query, before.text)


AWKWARD = ["", " ", "0", "1", "-1", "3", "50", "101", "1e3", "2.5", "true", "False", "yes", "on", "nan", "inf", "-0",
           "Score", "TIME_DESC", "updated_asc", "any", "ALL", "exact", "Prefix", "history", "AUTO", "automem",
           "a,b", "a, ,b", ",", "x:y:z", "[0.1, 0.2, 0.3]", "0.1,0.2,0.3", "1,2", "2026-01-01", "2026-01-01T00:00:00+02:00",
           "yesterday", "last week", "between 2025-01-01 and 2025-01-31", "not a date", "*", "x" * 300, "é", "\u0000"]


def _names(model: type[QueryModel]) -> list[str]:
    return [*model.model_fields, *model.aliases, "bank", "api_key", "scope", "unknown", "Tags", "tags[]", "limit[]"]


def queries(model: type[QueryModel]) -> st.SearchStrategy[str]:
    value = st.one_of(st.sampled_from(AWKWARD), st.text(max_size=12), st.integers(-5, 300).map(str))
    pairs = st.lists(st.tuples(st.sampled_from(_names(model)), value), max_size=8)
    return pairs.map(urlencode)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
@hyp_settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_one_validation_matches_fastapis_binding(model, data):
    _same(model, data.draw(queries(model)))


@pytest.mark.parametrize("query", [
    "", "query=which+database", "limit=3&limit=5", "limit=0", "limit=abc", "limit=", "order_by=score&order_by=time_desc",
    "sort=score&order_by=time_desc", "order_by=Time_Desc", "tags[]=a&tags=b,c&tags=", "tags=a&exclude_tags=a,b&exclude_tags[]=c",
    "foo=1&foo=2&bar=", "queries=a,b&queries=c&queries[]=d", "embedding=0.1,0.2,0.3", "embedding=[0.1,0.2]", "embedding=x",
    "time=yesterday&start=2026-01-01", "start=2026-13-01", "as_of=2026-01-01", "offset=2&offset=x", "offset=-1",
    "current_only=false&state_mode=current", "entity_expansion=1&expand_entities=0", "tag_mode=ALL&tag_match=Exact",
    "parse_dates=true&query=what+happened+on+May+13+2026", "per_query_limit=51", "min_score=-0.1", "api_key=x&bank=b",
    "limit=5&limit=0", "limit=0&limit=5", "tags=" + ",".join(f"t{i}" for i in range(201)),
])
def test_recall_cases(query):
    _same(RecallQuery, query)


@pytest.mark.parametrize("model,query", [
    (TagsQuery, ""), (TagsQuery, "tags="), (TagsQuery, "tags[]=a"), (ByTagQuery, "tags=a&limit=0&offset=-1"),
    (RelatedQuery, "relationship_types=RELATES_TO,prefers&max_depth=4"), (SearchQuery, "q=x&session_key=s&sessionKey=t"),
    (SearchQuery, "importanceMin=2&since="), (LegacySearchQuery, "q=&tags=a,b"), (SimilarQuery, "id=&k=x"),
])
def test_other_models_cases(model, query):
    _same(model, query)


def test_list_fields_are_the_ones_fastapi_reads_as_lists():
    for model in MODELS:
        for name, field in model.model_fields.items():
            assert _is_sequence(field.annotation) == field_annotation_is_sequence(field.annotation), (model.__name__, name)


def test_the_parameters_are_documented_as_the_query_form_documents_them():
    """Each model field, in FastAPI's place for a query model: after the path parameters, before those
    of the route's dependencies (a header here)."""
    from fastapi import Header

    app = FastAPI()

    def route(item_id: str, x_bank: Annotated[str | None, Header()] = None, params: query_params(RelatedQuery) = None) -> None:
        return None

    app.add_api_route("/items/{item_id}", route, methods=["GET"])
    schema = app.openapi()
    document(schema, app.routes)
    names = [(p["name"], p["in"]) for p in schema["paths"]["/items/{item_id}"]["get"]["parameters"]]
    assert names == [("item_id", "path"), *((name, "query") for name in RelatedQuery.model_fields), ("x-bank", "header")]
    documented = {p["name"]: p for p in documented_parameters(RelatedQuery)}
    assert documented["max_depth"]["schema"] == {"type": "integer", "maximum": 3, "minimum": 1, "description": "Hops from the memory (1-3)",
                                                 "default": 1, "title": "Max Depth"}
    assert all("$ref" not in str(p) for model in MODELS for p in documented_parameters(model))  # no components to carry over


def test_the_apps_routes_document_their_query_models():
    """docs.py wires `document` in: each route's query parameters open with its model's, as FastAPI
    documents `Annotated[Model, Query()]`, and X-Bank stays last."""
    from service.main import create_app

    paths = create_app(Settings(automem_api_token="t")).openapi()["paths"]
    for path, method, model in [("/recall", "get", RecallQuery), ("/memory/by-tag", "get", ByTagQuery),
                                ("/memory/by-tag", "delete", TagsQuery), ("/memories/{memory_id}/related", "get", RelatedQuery)]:
        params = paths[path][method]["parameters"]
        query = [p for p in params if p["in"] == "query"]
        assert query[: len(model.model_fields)] == list(documented_parameters(model)), (method, path)
        assert params[-1]["name"] == "X-Bank", (method, path)
