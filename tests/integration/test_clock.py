"""One clock (issue 22, part 3) against the real engine: every surface finds the same dates in a query,
reads "yesterday" in the one zone (RECALL_DATE_TIMEZONE), and reads every request instant the same way
(service/clock/). as_of is tested in test_graph_state_api.py."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from tests.integration.hindsight_support import BANKS, hrecall, remember, result_ids
from tests.integration.support import assert_error, clear_of_midnight, mem

DENVER = ZoneInfo("America/Denver")


def denver_day(d: date) -> tuple[datetime, datetime]:
    start = datetime.combine(d, time.min, tzinfo=DENVER)
    return start.astimezone(timezone.utc), datetime.combine(d + timedelta(days=1), time.min, tzinfo=DENVER).astimezone(timezone.utc)


@pytest.mark.parametrize("phrase", ["2023-05-13", "May 13 2023", "13 May 2023", "2023/05/13"])
def test_hindsight_recall_finds_the_date_in_the_query(make_client, phrase):
    # Before: trace.temporal_window was null for these queries (only time_query's phrases were looked for).
    api = make_client(write_refresh="true", recall_adaptive_floor=False)
    reviewed = remember(api, "rev", "Lunch order for the team", timestamp="2023-05-13T12:00:00Z")
    other = remember(api, "rev", "Lunch order for the team", timestamp="2023-05-20T12:00:00Z")
    got = hrecall(api, "rev", f"what did the team review on {phrase}", budget="low", trace=True)
    assert got["trace"]["temporal_window"] == {"start": "2023-05-13T00:00:00+00:00", "end": "2023-05-14T00:00:00+00:00", "expression": phrase}
    assert got["trace"]["results_by_arm"]["temporal"] == 1
    scores = {r["id"]: r["scores"]["final"] for r in got["results"]}
    # the same text, both older than the recency window: the dated one gains the temporal arm's weight
    # (SEARCH_WEIGHT_TEMPORAL 0.1) and the date component's (SEARCH_WEIGHT_DATE 0.1, its date_terms meet the query's date)
    assert result_ids(got) == [reviewed, other] and scores[reviewed] == pytest.approx(scores[other] + 0.2, abs=2e-6)


def test_every_surface_reads_yesterday_in_the_one_zone(make_client):
    # Before: Hindsight and time_query read "yesterday" as a UTC day, Signet and parse_dates as a Denver day.
    api = make_client(write_refresh="true", recall_date_timezone="America/Denver", recall_adaptive_floor=False)
    # Hindsight's anchor: 03:00Z on May 20 is 21:00 on May 19 in Denver, so yesterday is May 18 there (May 19 in UTC).
    start, end = denver_day(date(2026, 5, 18))
    got = hrecall(api, "z", "what did the editor do yesterday", budget="low", query_timestamp="2026-05-20T03:00:00Z", trace=True)
    assert (got["trace"]["temporal_window"]["start"], got["trace"]["temporal_window"]["end"]) == (start.isoformat(), end.isoformat())

    # The other surfaces read against now. The memory is dated yesterday noon, so no midnight may pass
    # before the last recall; the windows are compared with the day taken before and after the requests.
    clear_of_midnight(DENVER)
    before = datetime.now(DENVER).date() - timedelta(days=1)
    crash = mem(api, "The editor crashed while saving", timestamp=(denver_day(before)[0] + timedelta(hours=12)).isoformat())
    mem(api, "The editor crashed while saving", timestamp=(denver_day(before)[0] - timedelta(hours=12)).isoformat())  # the day before (Denver and UTC)
    windows = {
        "time_query": api.get("/recall", params={"query": "editor", "time_query": "yesterday"}).json()["time_window"],
        "parse_dates": api.get("/recall", params={"query": "yesterday editor", "parse_dates": "true"}).json()["time_window"],
    }
    signet = api.post("/api/memory/recall", json={"query": "yesterday editor"}).json()
    after = datetime.now(DENVER).date() - timedelta(days=1)
    assert [r["id"] for r in signet["results"]] == [crash]
    signet_window = tuple(datetime.fromisoformat(signet["meta"]["temporal"][k].replace("Z", "+00:00")) for k in ("start", "end"))
    expected = {denver_day(before), denver_day(after)}
    for name, w in windows.items():
        assert (datetime.fromisoformat(w["start"]), datetime.fromisoformat(w["end"])) in expected, name
    assert signet_window in expected
    assert {r["id"] for r in api.get("/recall", params={"query": "editor", "time_query": "yesterday"}).json()["results"]} == {crash}


# Every request instant reads the same way: (method, path, body or params, status, the field named).
BAD = "soon"
INVALID_INSTANTS = [
    ("post", "/memory", {"json": {"content": "x", "timestamp": BAD}}, 400, "timestamp"),
    ("post", "/memory", {"json": {"content": "x", "t_valid": BAD}}, 400, "t_valid"),
    ("post", "/memory", {"json": {"content": "x", "t_invalid": "2025-02-30"}}, 400, "t_invalid"),
    ("post", "/memory", {"json": {"content": "x", "updated_at": 1700000000}}, 400, "updated_at"),
    ("post", "/memory", {"json": {"content": "x", "last_accessed": "2025-01-15T10:00:00+25:00"}}, 400, "last_accessed"),
    ("post", "/memory/batch", {"json": {"memories": [{"content": "x"}, {"content": "y", "timestamp": BAD}]}}, 400, "memories.1.timestamp"),
    ("patch", "/memory/{id}", {"json": {"t_valid": BAD}}, 400, "t_valid"),
    ("get", "/recall", {"params": {"query": "x", "start": BAD}}, 400, "start"),
    ("get", "/recall", {"params": {"query": "x", "end": "1736899200"}}, 400, "end"),
    ("get", "/recall", {"params": {"query": "x", "as_of": BAD}}, 400, "as_of"),
    ("post", "/api/memory/recall", {"json": {"query": "x", "since": BAD}}, 400, "since"),
    ("post", "/api/memory/recall", {"json": {"query": "x", "until": 12}}, 400, "until"),
    ("post", "/api/memory/recall", {"json": {"query": "x", "time": {"start": BAD}}}, 400, "time.start"),
    ("get", "/api/memory/search", {"params": {"q": "x", "since": BAD}}, 400, "since"),
    ("get", "/memory/search", {"params": {"since": BAD}}, 400, "since"),
    ("post", f"{BANKS}/c/memories/recall", {"json": {"query": "x", "query_timestamp": BAD}}, 400, "query_timestamp"),
    ("get", f"{BANKS}/c/memories/list", {"params": {"start_date": BAD}}, 400, "start_date"),
]


@pytest.mark.parametrize(("method", "path", "request_", "status", "field"), INVALID_INSTANTS)
def test_an_invalid_instant_is_a_400_naming_its_field(api, method, path, request_, status, field):
    if "{id}" in path:
        path = path.format(id=mem(api, "a memory to patch"))
    resp = getattr(api, method)(path, **request_)
    if path.startswith(BANKS):  # Hindsight's shape: {"detail": ...} (with status / code / message)
        assert resp.status_code == status and field in resp.json()["detail"], resp.text
    else:
        assert_error(resp, status, field)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"query": "x", "temporal_window": {"start": BAD, "end": "2024-01-21T00:00:00Z"}}, ["body", "temporal_window", "start"]),
        # Before: a unix time was taken (pydantic's datetime reads numbers); it is no ISO 8601 instant.
        ({"query": "x", "temporal_window": {"start": 1700000000, "end": 1700086400}}, ["body", "temporal_window", "start"]),
    ],
)
def test_hindsight_refuses_what_is_no_iso_instant_with_its_422(api, body, field):
    resp = api.post(f"{BANKS}/c/memories/recall", json=body)
    assert resp.status_code == 422 and resp.json()["detail"][0]["loc"] == field, resp.text
    resp = api.post(f"{BANKS}/c/memories", json={"items": [{"content": "x", "timestamp": 1700000000}]})
    assert resp.status_code == 422 and resp.json()["detail"][0]["loc"][-1] == "timestamp", resp.text


def test_mixed_offsets_are_one_kind_of_instant(api):
    # Before: a naive start and an aware end could not be compared (TypeError, a 500); naive means UTC.
    window = {"start": "2024-01-20T00:00:00", "end": "2024-01-21T00:00:00Z"}
    got = hrecall(api, "c", "anything", temporal_window=window, trace=True)
    assert got["trace"]["temporal_window"]["start"] == "2024-01-20T00:00:00+00:00"
    signet = api.post("/api/memory/recall", json={"query": "x", "time": {"start": "2024-01-20T00:00:00", "end": "2024-01-20T01:00:00+01:00"}})
    assert signet.status_code == 200 and signet.json()["meta"]["temporal"]["end"] == "2024-01-20T00:00:00.000Z"
    stored = api.get(f"/memory/{mem(api, 'x', timestamp='2024-01-20T05:30:00+05:30', t_valid='2024-01-20')}").json()["memory"]
    assert (stored["timestamp"], stored["t_valid"]) == ("2024-01-20T00:00:00+00:00", "2024-01-20T00:00:00+00:00")
