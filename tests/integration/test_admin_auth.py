"""Every admin route: 401 without the API token, 403 with only the API token (or a wrong admin
token), 200 with both (spec 003: Authentication, Admin); the API token alone never opens /backup."""

from __future__ import annotations

import pytest

from tests.conftest import ADMIN, TOKEN
from tests.integration.support import assert_error

NO_TOKEN = {"Authorization": ""}


def call(api, route: str, headers: dict, archive: bytes = b""):
    if route == "backup":
        return api.get("/backup", headers=headers)
    if route == "restore":
        return api.post("/admin/restore", content=archive, headers={**headers, "Content-Type": "application/gzip"})
    return api.post("/admin/reembed", json={"limit": 1}, headers=headers)


@pytest.fixture
def archive(api) -> bytes:
    api.post("/memory", json={"content": "one memory to back up"})
    resp = api.get("/backup", headers={"X-Admin-Token": ADMIN})
    assert resp.status_code == 200
    return resp.content


ROUTES = ["backup", "restore", "reembed"]


@pytest.mark.parametrize("route", ROUTES)
def test_admin_auth_matrix(api, archive, route):
    assert_error(call(api, route, NO_TOKEN), 401, "API token")
    assert_error(call(api, route, {"X-Admin-Token": ADMIN, **NO_TOKEN}), 401)  # the admin token alone is not an API token
    assert_error(call(api, route, {}), 403, "Admin token required")  # the regular token alone
    assert_error(call(api, route, {"X-Admin-Token": "wrong"}), 403)
    assert_error(call(api, route, {"X-Admin-Token": TOKEN}), 403)  # the API token in the admin header
    for header in ("X-Admin-Token", "X-Admin-Api-Key"):
        resp = call(api, route, {header: ADMIN}, archive)
        assert resp.status_code == 200, resp.text
    resp = call(api, route, {"X-API-Key": TOKEN, "X-Admin-Token": ADMIN, **NO_TOKEN}, archive)
    assert resp.status_code == 200, resp.text


@pytest.mark.parametrize("route", ROUTES)
def test_admin_routes_closed_without_a_distinct_admin_token(make_client, route):
    unset = make_client(admin_api_token=None)
    assert_error(call(unset, route, {"X-Admin-Token": ADMIN}), 403, "ADMIN_API_TOKEN is not configured")
    same = make_client(admin_api_token=TOKEN)
    assert_error(call(same, route, {"X-Admin-Token": TOKEN}), 403, "must differ")
