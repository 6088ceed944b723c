"""An index of the store that disappears under a running service (deleted by hand, a half-done
migration) is the engine's state, not the caller's request: reads and writes answer 503 with the
error shape, never a 404 that would tell a client its memory does not exist."""

from __future__ import annotations

from tests.integration.support import assert_error, mem


def test_a_missing_index_is_a_503_not_a_404(make_client, os_client):
    api = make_client()
    mid = mem(api, "kept in an index that will vanish")
    settings = api.app.state.settings
    os_client.indices.delete(index=list(os_client.indices.get_alias(name=settings.memories_alias)))
    assert_error(api.get("/recall", params={"query": "vanish"}), 503, "missing")
    assert_error(api.get(f"/memory/{mid}"), 503, "missing")
    assert_error(api.get("/memory/by-tag", params={"tags": "x"}), 503, "missing")
    # a document that is simply absent is still a 404
    os_client.indices.create(index=f"{settings.memories_alias}-empty", body={"aliases": {settings.memories_alias: {}}})
    assert_error(api.get(f"/memory/{mid}"), 404, "not found")
