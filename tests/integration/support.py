"""Helpers shared by the integration tests: store, link, recall, read ids, check error bodies."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, tzinfo


def mem(api, content: str, **fields) -> str:
    resp = api.post("/memory", json={"content": content, **fields})
    assert resp.status_code == 201, resp.text
    return resp.json()["memory_id"]


def link(api, a: str, b: str, type_: str = "RELATES_TO", strength: float = 0.5, **props) -> dict:
    resp = api.post("/associate", json={"memory1_id": a, "memory2_id": b, "type": type_, "strength": strength, **props})
    assert resp.status_code == 201, resp.text
    return resp.json()


def recall(api, **params) -> dict:
    resp = api.get("/recall", params=params)
    assert resp.status_code == 200, resp.text
    return resp.json()


def ids(body: dict) -> list[str]:
    return [r["id"] for r in body["results"]]


def by_id(body: dict) -> dict[str, dict]:
    return {r["id"]: r for r in body["results"]}


def assert_error(resp, code: int, *fragments: str) -> None:
    assert resp.status_code == code, resp.text
    body = resp.json()
    assert body["status"] == "error" and body["code"] == code, body
    for fragment in fragments:
        assert fragment in body["message"], body["message"]


def clear_of_midnight(zone: tzinfo, margin: float = 60.0) -> None:
    """Wait out the next midnight in `zone` if it is less than `margin` seconds away: a test that reads
    "today" or "yesterday" before its requests must not see the day turn between them."""
    now = datetime.now(zone)
    midnight = datetime.combine(now.date() + timedelta(days=1), datetime.min.time(), tzinfo=zone)
    left = (midnight - now).total_seconds()
    if left < margin:
        time.sleep(left + 1.0)


def settled(api, timeout: float = 90.0) -> None:
    """The enrichment worker has nothing queued or in flight, three looks in a row."""
    worker, deadline, quiet = api.app.state.enrichment, time.monotonic() + timeout, 0
    while quiet < 3:
        assert time.monotonic() < deadline, f"enrichment did not settle: {worker.jobs.counts()} (queued, in flight)"
        quiet = quiet + 1 if worker.idle() else 0
        time.sleep(0.05)


def fast_api(make_client):
    """An app whose writes refresh at once (write_refresh=true) instead of waiting for the next 1 s refresh:
    the graph tests write hundreds of memories one at a time. Reads are unchanged."""
    return make_client(write_refresh="true")


def settle_accesses(api) -> None:
    """Wait until the accesses recalls handed to the app's AccessWriter are written."""
    assert api.app.state.access_writer.flush(30), "access writes still pending after 30 s"


@contextmanager
def held_access_writes(api) -> Iterator[threading.Event]:
    """The app's access writes held back until the block ends; yields the event set once one is held."""
    store = api.app.state.memories
    entered, release = threading.Event(), threading.Event()
    write = store.touch

    def held(*args):
        entered.set()
        release.wait(20)
        write(*args)

    store.touch = held
    try:
        yield entered
    finally:
        release.set()
        del store.touch


@contextmanager
def engine_requests(api) -> Iterator[list[str]]:
    """Every request the app makes to OpenSearch inside the block ("METHOD /path"), through the real
    client: a list filled as they are sent."""
    client = api.app.state.client
    calls: list[str] = []
    original = client.transport.perform_request

    def counting(method, url, *args, **kwargs):
        calls.append(f"{method} {url.split('?')[0]}")
        return original(method, url, *args, **kwargs)

    client.transport.perform_request = counting
    try:
        yield calls
    finally:
        client.transport.perform_request = original


def count_requests(api, **params) -> tuple[dict, list[str]]:
    """Recall, recording every request the app made to OpenSearch for it, the access writes it
    queued included."""
    settle_accesses(api)  # earlier recalls' writes are not this one's
    with engine_requests(api) as calls:
        body = recall(api, **params)
        settle_accesses(api)
    return body, calls
