"""Every authenticated operation documents the error statuses it can answer (the fuzz test checks
each status against the document; this catches an undocumented one without an engine)."""

from __future__ import annotations

import pytest

from service.config import Settings
from service.main import create_app

pytestmark = pytest.mark.unit


class _Embedder:  # create_app only reads these two attributes before startup
    dimension = 384
    short_name = "test"


def test_every_authenticated_operation_documents_400_and_401():
    """/metrics reads no input but its token, so it answers 401 and never 400."""
    app = create_app(Settings(opensearch_url="http://127.0.0.1:1", automem_api_token="t"), embedder=_Embedder())
    missing = []
    for path, methods in app.openapi()["paths"].items():
        for method, operation in methods.items():
            expected = {"401"} if path == "/metrics" else {"400", "401"}
            if operation.get("security") and not expected <= set(operation["responses"]):
                missing.append(f"{method.upper()} {path}")
    assert not missing, missing
