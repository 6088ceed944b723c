"""`who`, `project` and `pinned` are stored fields, settable through every write API (POST /memory,
/memory/batch, PATCH, import) and read back; AutoMem's GET /recall is unchanged for memories without them."""

from __future__ import annotations

import json

import pytest

from service.cli.main import main as cli
from tests.integration.support import assert_error, mem, recall
from tests.conftest import app_for


@pytest.fixture
def api(request):
    return app_for(request, write_refresh="true")


def stored(api, mid: str) -> dict:
    return api.get(f"/memory/{mid}").json()["memory"]


@pytest.mark.own_app('imports into the default bank')
def test_every_write_api_sets_them(api, tmp_path):
    one = mem(api, "Written by an agent", who="claude-code", project="engram", pinned=True)
    assert {k: stored(api, one)[k] for k in ("who", "project", "pinned")} == {"who": "claude-code", "project": "engram", "pinned": True}
    batch = api.post("/memory/batch", json={"memories": [{"content": "batch one", "who": "cursor"}, {"content": "batch two", "pinned": False}]})
    first, second = batch.json()["memory_ids"]
    assert stored(api, first)["who"] == "cursor" and stored(api, second)["pinned"] is False
    plain = mem(api, "No attribution at all")
    assert not {"who", "project", "pinned"} & set(stored(api, plain))  # nothing stored that was not given

    assert api.patch(f"/memory/{plain}", json={"who": "bob", "pinned": True}).status_code == 200
    assert (stored(api, plain)["who"], stored(api, plain)["pinned"]) == ("bob", True)
    assert api.patch(f"/memory/{plain}", json={"who": None, "project": "p"}).status_code == 200  # an explicit null clears
    assert (stored(api, plain)["who"], stored(api, plain)["project"], stored(api, plain)["pinned"]) == (None, "p", True)

    lines = tmp_path / "in.jsonl"
    lines.write_text(json.dumps({"id": "imported-1", "content": "Imported with attribution", "who": "importer", "project": "legacy", "pinned": True}) + "\n")
    s = api.app.state.settings
    assert cli(["import", str(lines), "--url", s.opensearch_url, "--prefix", s.index_prefix, "--no-progress"]) == 0
    assert {k: stored(api, "imported-1")[k] for k in ("who", "project", "pinned")} == {"who": "importer", "project": "legacy", "pinned": True}

    out = tmp_path / "out.jsonl"
    assert cli(["export", "--url", s.opensearch_url, "--prefix", s.index_prefix, "-o", str(out), "--no-progress"]) == 0
    exported = {r["id"]: r for r in map(json.loads, out.read_text().splitlines()) if "content" in r}
    assert {k: exported[one][k] for k in ("who", "project", "pinned")} == {"who": "claude-code", "project": "engram", "pinned": True}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"content": "x", "who": "a\ud800"}, "who"),
        ({"content": "x", "project": "p\udfff"}, "project"),
        ({"content": "x", "who": "w" * 257}, "who"),
        ({"content": "x", "pinned": "sometimes"}, "pinned"),
        ({"content": "x", "who": 5}, "who"),
    ],
)
def test_bad_values_are_400(api, body, field):
    raw = json.dumps(body).encode("utf-8", "surrogatepass")
    assert_error(api.post("/memory", content=raw, headers={"content-type": "application/json"}), 400, field)


def test_automem_recall_is_unchanged_without_them_and_shows_them_when_stored(api):
    plain = mem(api, "The cafeteria opens at eight")
    got = recall(api, query="when does the cafeteria open")
    assert got["results"][0]["id"] == plain
    assert not {"who", "project", "pinned"} & set(got["results"][0]["memory"])
    assert not {"suppressed"} & set(got)
    attributed = mem(api, "The cafeteria closes at three", who="facilities")
    by_id = {r["id"]: r for r in recall(api, query="cafeteria hours")["results"]}
    assert by_id[attributed]["memory"]["who"] == "facilities"
