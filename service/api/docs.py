"""The API's own documentation, served offline.

FastAPI's /docs and /redoc load Swagger UI and ReDoc from a CDN, so on a machine without internet
they render blank. The assets come from the maintained `fastapi-offline` package instead and are
served from /docs-assets (FastAPI's self-hosted docs recipe). Query models parsed in one validation
(service/api/query_model.py) get their parameters documented here, as FastAPI documents them. The OpenAPI document drops the 422
responses FastAPI adds to every route: validation errors are answered 400 (service/errors.py),
except on Hindsight's routes (/v1/...), which answer Hindsight's 422.
"""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.staticfiles import StaticFiles

from service.api.query_model import document

ASSETS = Path(fastapi_offline.__file__).resolve().parent / "static"
ASSETS_URL = "/docs-assets"
HINDSIGHT_PREFIX = "/v1/"


def install_docs(app: FastAPI) -> None:
    app.mount(ASSETS_URL, StaticFiles(directory=ASSETS), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def swagger():
        return get_swagger_ui_html(
            openapi_url=app.openapi_url, title=f"{app.title} — API",
            swagger_js_url=f"{ASSETS_URL}/swagger-ui-bundle.js", swagger_css_url=f"{ASSETS_URL}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS_URL}/favicon.png",
            swagger_ui_parameters={"persistAuthorization": True, "displayRequestDuration": True},
        )

    @app.get("/redoc", include_in_schema=False)
    async def redoc():
        return get_redoc_html(
            openapi_url=app.openapi_url, title=f"{app.title} — API", redoc_js_url=f"{ASSETS_URL}/redoc.standalone.js",
            redoc_favicon_url=f"{ASSETS_URL}/favicon.png", with_google_fonts=False,
        )

    def openapi() -> dict:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes, tags=app.openapi_tags)
            document(schema, app.routes)  # the query models' parameters (service/api/query_model.py)
            for url, path in schema.get("paths", {}).items():
                if url.startswith(HINDSIGHT_PREFIX):
                    continue  # Hindsight's routes answer its own 422 (service/api/hindsight/errors.py)
                for operation in path.values():
                    operation.get("responses", {}).pop("422", None)
            components = schema.get("components", {}).get("schemas", {})
            if not any(url.startswith(HINDSIGHT_PREFIX) for url in schema.get("paths", {})):
                for name in ("HTTPValidationError", "ValidationError"):
                    components.pop(name, None)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
