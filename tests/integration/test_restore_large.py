"""An archive over MAX_REQUEST_BYTES (8 MiB) restores through the API and `engram restore --api`: the
upload route has its own limit (service/api/middleware.UPLOAD_PATHS) and streams the body to disk.
Before, RequestGuard answered 413 to any archive over 8 MiB, and the CLI failed the same way."""

from __future__ import annotations

import httpx
import numpy as np

from service.cli.main import main
from tests.conftest import ADMIN, AUTH, TOKEN
from tests.integration.admin_support import ADMIN_HEADERS
from tests.integration.live import live_app

MEMORIES = 5_000  # ~1.9 KB of archive each (a 384-float vector of its own): ~9.7 MB
BATCH = 500


def _empty(app, os_client) -> None:
    s = app.state.settings
    for alias in (s.memories_alias, s.edges_alias):
        os_client.delete_by_query(index=alias, body={"query": {"match_all": {}}}, refresh=True)


def test_an_archive_over_max_request_bytes_restores_through_the_api_and_the_cli(engine_url, embedder, os_client, tmp_path, monkeypatch):
    rng = np.random.default_rng(7)
    with live_app(engine_url, embedder, os_client) as (app, url), httpx.Client(base_url=url, headers=AUTH, timeout=600) as http:
        for start in range(0, MEMORIES, BATCH):
            vectors = rng.normal(size=(BATCH, 384))
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            batch = [{"content": f"Release note {start + i}: service {(start + i) % 17} upgraded.", "embedding": v.tolist(), "tags": ["release"]}
                     for i, v in enumerate(vectors[: min(BATCH, MEMORIES - start)])]
            assert http.post("/memory/batch", json={"memories": batch}).status_code == 201
        archive = http.get("/backup", headers=ADMIN_HEADERS).content
        limit = app.state.settings.max_request_bytes
        assert len(archive) > limit == 8 * 1024 * 1024

        _empty(app, os_client)
        resp = http.post("/admin/restore", content=archive, headers={**ADMIN_HEADERS, "Content-Type": "application/gzip"})
        assert resp.status_code == 200, resp.text
        assert resp.json()["memories"]["restored"] == MEMORIES and resp.json()["memories"]["vectors_reused"] == MEMORIES

        _empty(app, os_client)
        path = tmp_path / "large.tar.gz"
        path.write_bytes(archive)
        monkeypatch.setenv("AUTOMEM_API_TOKEN", TOKEN)
        monkeypatch.setenv("ADMIN_API_TOKEN", ADMIN)
        assert main(["restore", str(path), "--api", url, "--json"]) == 0
        assert app.state.memories.count() == MEMORIES
        # Other routes keep MAX_REQUEST_BYTES.
        assert http.post("/memory", content=b"x" * (limit + 1), headers={"Content-Type": "application/json"}).status_code == 413
