"""The OpenAPI document lists Hindsight's routes with Hindsight's 422; AutoMem's routes keep none."""

from __future__ import annotations

from service.config import Settings
from service.main import create_app

ROUTES = {
    ("post", "/v1/default/banks/{bank_id}/memories/recall"), ("post", "/v1/default/banks/{bank_id}/memories"),
    ("get", "/v1/default/banks/{bank_id}/memories/list"), ("get", "/v1/default/banks/{bank_id}/memories/{memory_id}"),
    ("delete", "/v1/default/banks/{bank_id}/memories/{memory_id}"), ("get", "/v1/default/banks/{bank_id}/tags"),
    ("post", "/v1/default/banks/{bank_id}/reflect"), ("get", "/v1/default/banks"), ("get", "/v1/default/banks/{bank_id}"),
    ("put", "/v1/default/banks/{bank_id}"), ("patch", "/v1/default/banks/{bank_id}"), ("delete", "/v1/default/banks/{bank_id}"),
    ("get", "/v1/default/banks/{bank_id}/stats"), ("get", "/v1/default/banks/{bank_id}/profile"),
    ("get", "/v1/default/banks/{bank_id}/operations"), ("get", "/v1/default/banks/{bank_id}/operations/{operation_id}"),
    ("patch", "/v1/default/banks/{bank_id}/memories/{memory_id}"), ("get", "/v1/default/banks/{bank_id}/memories/{memory_id}/history"),
}


def test_openapi_lists_hindsights_routes_with_its_422():
    schema = create_app(Settings(automem_api_token="t")).openapi()
    found = {(m, p) for p, ops in schema["paths"].items() if p.startswith("/v1/") for m in ops}
    assert found == ROUTES
    recall = schema["paths"]["/v1/default/banks/{bank_id}/memories/recall"]["post"]
    assert recall["operationId"] == "recall_memories" and "422" in recall["responses"]
    curate = schema["paths"]["/v1/default/banks/{bank_id}/memories/{memory_id}"]["patch"]
    assert curate["operationId"] == "update_memory" and "422" in curate["responses"]  # hindsight-client's names
    assert "422" not in schema["paths"]["/recall"]["get"]["responses"]
    assert {"TagGroupLeaf", "TagGroupAnd", "TagGroupOr", "TagGroupNot", "HTTPValidationError"} <= set(schema["components"]["schemas"])


def test_every_schema_has_a_plain_name():
    """Two surfaces' models of one class name made FastAPI fall back to module paths
    (`service__api__hindsight__models__RecallBody`) in the document clients generate code from."""
    names = create_app(Settings(automem_api_token="t")).openapi()["components"]["schemas"]
    assert [n for n in names if "__" in n or not n.isidentifier()] == []
