"""Date phrases in recall queries against the real engine: a table of queries -> the window, the content
query and the memories returned; the same parsing on AutoMem's GET /recall behind `parse_dates`."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from tests.integration.support import clear_of_midnight

DENVER = ZoneInfo("America/Denver")


@pytest.fixture
def dated(make_client):
    api = make_client(write_refresh="true", recall_date_timezone="America/Denver")
    clear_of_midnight(DENVER)  # "yesterday" is read here, and again by the recall the test makes
    yesterday_noon = datetime.combine(datetime.now(DENVER).date() - timedelta(days=1), datetime.min.time(), tzinfo=DENVER) + timedelta(hours=12)
    specs = {
        "e1": ("The editor now uses vim keybindings", "2026-05-13T15:00:00Z"),
        "e2": ("The editor theme switched to solarized", "2026-05-14T03:00:00Z"),  # 21:00 on May 13 in Denver
        "d1": ("Deployed the billing api to production", "2026-05-13T16:00:00Z"),
        "e3": ("The editor font is now Iosevka", "2026-05-12T15:00:00Z"),
        "y1": ("The editor crashed while saving", yesterday_noon.astimezone(timezone.utc).isoformat()),
    }
    ids = {}
    for name, (content, ts) in specs.items():
        resp = api.post("/memory", json={"content": content, "timestamp": ts})
        assert resp.status_code == 201, resp.text
        ids[name] = resp.json()["memory_id"]
    return api, ids, yesterday_noon.date()


def day(d) -> tuple[str, str]:
    start = datetime.combine(d, datetime.min.time(), tzinfo=DENVER).astimezone(timezone.utc)
    end = datetime.combine(d + timedelta(days=1), datetime.min.time(), tzinfo=DENVER).astimezone(timezone.utc)
    fmt = "%Y-%m-%dT%H:%M:%S.000Z"
    return start.strftime(fmt), end.strftime(fmt)


MAY13 = ("2026-05-13T06:00:00.000Z", "2026-05-14T06:00:00.000Z")  # spec 004's example window


@pytest.mark.parametrize(
    ("query", "window", "content", "mode", "expected", "ordered"),
    [
        ("2026/05/13 editor", MAY13, "editor", "filter", {"e1", "e2", "d1"}, False),
        ("2026-05-13", MAY13, "", "timeline", ["e1", "d1", "e2"], True),
        ("May 13 2026", MAY13, "", "timeline", ["e1", "d1", "e2"], True),
        ("what changed in the editor on May 13, 2026?", MAY13, "what changed in the editor?", "filter", {"e1", "e2", "d1"}, False),
        ("2026-05-12 editor", ("2026-05-12T06:00:00.000Z", "2026-05-13T06:00:00.000Z"), "editor", "filter", ["e3"], True),
        ("yesterday editor", "yesterday", "editor", "filter", ["y1"], True),
        ("editor settings", None, "editor settings", None, {"e1", "e2", "e3", "y1", "d1"}, False),
    ],
)
def test_date_phrase_table(dated, query, window, content, mode, expected, ordered):
    api, ids, yesterday = dated
    body = api.post("/api/memory/recall", json={"query": query}).json()
    got = [next(k for k, v in ids.items() if v == r["id"]) for r in body["results"]]
    assert (got if ordered else set(got)) == expected
    temporal = body["meta"].get("temporal")
    if window is None:
        assert temporal is None
        return
    start, end = day(yesterday) if window == "yesterday" else window
    assert (temporal["start"], temporal["end"], temporal["contentQuery"], temporal["mode"], temporal["source"], temporal["originalQuery"]) == (
        start, end, content, mode, "query", query)
    assert all(r["temporal_facet"] == "captured" for r in body["results"])
    if mode == "filter" and len(expected) > 1:
        assert got[-1] == "d1"  # inside the window, the content query still ranks: the deploy is last


def test_get_search_parses_dates_too(dated):
    api, ids, _ = dated
    body = api.get("/api/memory/search", params={"q": "2026/05/13 editor"}).json()
    assert body["meta"]["temporal"]["contentQuery"] == "editor" and {r["id"] for r in body["results"]} == {ids["e1"], ids["e2"], ids["d1"]}


def test_automem_recall_parses_dates_only_when_asked(dated):
    api, ids, _ = dated
    # no window and the query as given (the date still counts in the engram profile's date component, as
    # every date a query names does; without the adaptive floor nothing is left out)
    plain = api.get("/recall", params={"query": "2026/05/13 editor", "adaptive_floor": "false"}).json()
    assert "time_window" not in plain and plain["query"] == "2026/05/13 editor" and len(plain["results"]) == 5
    parsed = api.get("/recall", params={"query": "2026/05/13 editor", "parse_dates": "true"}).json()
    assert parsed["time_window"] == {"start": "2026-05-13T06:00:00+00:00", "end": "2026-05-14T06:00:00+00:00", "expression": "2026/05/13"}
    assert parsed["query"] == "editor" and {r["id"] for r in parsed["results"]} == {ids["e1"], ids["e2"], ids["d1"]}
    assert "warnings" not in parsed
    only_date = api.get("/recall", params={"query": "May 13 2026", "parse_dates": "true"}).json()
    assert [r["id"] for r in only_date["results"]] == [ids["e2"], ids["d1"], ids["e1"]]  # no query: newest first (AutoMem's rule)
    explicit = api.get("/recall", params={"query": "2026/05/13 editor", "parse_dates": "true", "time_query": "last year"}).json()
    assert explicit["time_window"]["expression"] == "last year" and explicit["query"] == "2026/05/13 editor"  # an explicit window wins
