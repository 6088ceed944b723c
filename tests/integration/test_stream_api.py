"""GET /stream against a real uvicorn server: every event type with its fields, nothing for failed
requests, keepalive comments, authentication, and a slow subscriber dropped while writes go on."""

from __future__ import annotations

import json
import queue
import socket
import threading
import time

import httpx
import pytest

from tests.conftest import AUTH, TOKEN
from tests.integration.live import live_app


class Reader:
    """Reads one SSE stream in a thread: raw lines and decoded events."""

    def __init__(self, url: str, headers: dict | None = None, path: str = "/stream"):
        self.events: queue.Queue = queue.Queue()
        self.lines: list[str] = []
        self.status: int | None = None
        self._client = httpx.Client(timeout=httpx.Timeout(30.0, read=60.0))
        self._thread = threading.Thread(target=self._run, args=(url + path, AUTH if headers is None else headers), daemon=True)
        self._thread.start()

    def _run(self, url: str, headers: dict) -> None:
        try:
            with self._client.stream("GET", url, headers=headers) as resp:
                self.status = resp.status_code
                self.content_type = resp.headers.get("content-type")
                for line in resp.iter_lines():
                    self.lines.append(line)
                    if line.startswith("data: "):
                        self.events.put(json.loads(line[6:]))
        except (httpx.HTTPError, RuntimeError):
            pass  # closed at the end of the test

    def next(self, timeout: float = 10.0) -> dict:
        return self.events.get(timeout=timeout)

    def close(self) -> None:
        self._client.close()


def wait_for(predicate, timeout: float = 20.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def subscribers(api: httpx.Client) -> int:
    return api.get("/stream/status").json()["subscribers"]


@pytest.fixture
def served(engine_url, embedder, os_client):
    with live_app(engine_url, embedder, os_client, stream_keepalive_seconds=0.3, consolidation_tick_seconds=0) as (app, url):
        with httpx.Client(base_url=url, headers=AUTH, timeout=60.0) as api:
            yield app, url, api


def test_every_event_type_with_its_fields(served):
    app, url, api = served
    reader = Reader(url)
    try:
        wait_for(lambda: subscribers(api) == 1 and reader.status is not None, what="the subscriber and its response headers")
        assert reader.status == 200 and reader.content_type.startswith("text/event-stream")

        content = "Chose PostgreSQL over MongoDB for the billing service because of transactions, mature tooling and the team's experience."
        one = api.post("/memory", json={"content": content, "tags": ["t1", "t2", "t3", "t4", "t5", "t6"], "importance": 0.8, "type": "Decision"}).json()["memory_id"]
        e = reader.next()
        assert e["type"] == "memory.store" and e["timestamp"].endswith("+00:00")
        d = e["data"]
        assert (d["id"], d["content_preview"], d["type"], d["importance"], d["tags"], d["size_bytes"], d["count"]) == (
            one, content[:100] + "...", "Decision", 0.8, ["t1", "t2", "t3", "t4", "t5"], len(content), 1)
        assert d["elapsed_ms"] > 0

        batch = api.post("/memory/batch", json={"memories": [{"content": "first of two", "tags": ["b"]}, {"content": "second of two", "tags": ["b"]}]}).json()
        d = reader.next()["data"]
        assert d["count"] == 2 and d["ids"] == batch["memory_ids"] and d["content_preview"] == "first of two" and d["elapsed_ms"] > 0

        api.get("/recall", params={"query": "billing database", "limit": 3, "tags": "t1"})
        e = reader.next()
        assert e["type"] == "memory.recall"
        assert {k: e["data"][k] for k in ("query", "limit", "result_count", "tags")} == {"query": "billing database", "limit": 3, "result_count": 1, "tags": ["t1"]}
        assert e["data"]["elapsed_ms"] > 0

        api.patch(f"/memory/{one}", json={"importance": 0.9, "tags": ["x"]})
        e = reader.next()
        assert e["type"] == "memory.update"
        assert e["data"] == {"id": one, "content_preview": content[:100] + "...", "type": "Decision", "importance": 0.9, "tags": ["x"], "fields": ["importance", "tags"]}

        a, b = batch["memory_ids"]
        api.post("/associate", json={"memory1_id": a, "memory2_id": b, "type": "RELATES_TO", "strength": 0.7})
        e = reader.next()
        assert e["type"] == "memory.associate"
        assert e["data"] == {"memory1_id": a, "memory2_id": b, "relation_type": "RELATES_TO", "strength": 0.7, "count": 1}

        resp = api.post("/associate", json={"associations": [
            {"memory1_id": a, "memory2_id": one, "type": "LEADS_TO", "strength": 0.5},
            {"memory1_id": b, "memory2_id": one, "type": "CONTRADICTS", "strength": 0.5},
            {"memory1_id": a, "memory2_id": "missing-id", "type": "LEADS_TO"},
        ]})
        assert resp.status_code == 207
        e = reader.next()
        assert e["type"] == "memory.associate" and e["data"] == {"count": 2, "failed_count": 1, "relation_types": ["CONTRADICTS", "LEADS_TO"]}

        api.delete(f"/memory/{one}")
        e = reader.next()
        assert e["type"] == "memory.delete" and e["data"] == {"id": one, "count": 1}

        api.delete("/memory/by-tag", params={"tags": "b"})
        e = reader.next()
        assert e["type"] == "memory.delete" and e["data"] == {"count": 2, "tags": ["b"]}

        api.post("/consolidate", json={"mode": "decay", "dry_run": True})
        e = reader.next()
        assert e["type"] == "consolidation.run"
        d = e["data"]
        assert (d["task_type"], d["success"], d["dry_run"], d["affected_count"], d["steps"], d["trigger"]) == ("decay", True, True, 0, ["decay"], "manual")
        # The schedule starts now (AutoMem's control record): a day from now, or 23 h and change.
        assert d["next_scheduled"] in ("In 1 day(s)", "In 23 hour(s)") and d["elapsed_ms"] > 0

        # The enrichment worker publishes through the same bus (its on_event callback).
        for kind in ("enrichment.start", "enrichment.complete", "enrichment.failed"):
            app.state.events.on_event(kind, {"memory_id": a})
            e = reader.next()
            assert (e["type"], e["data"]) == (kind, {"memory_id": a})

        # Keepalive comments arrive between events (every 0.3 s here, 30 s by default).
        wait_for(lambda: ": keepalive" in reader.lines, what="a keepalive comment")
        assert all(line.startswith(("data: ", ": keepalive")) or line == "" for line in reader.lines)
    finally:
        reader.close()
    wait_for(lambda: subscribers(api) == 0, what="the subscriber to leave")


def test_failed_requests_emit_nothing(served):
    _, url, api = served
    reader = Reader(url)
    try:
        wait_for(lambda: subscribers(api) == 1 and reader.status is not None, what="the subscriber and its response headers")
        good = api.post("/memory", json={"content": "a memory"}).json()["memory_id"]
        assert reader.next()["data"]["id"] == good
        failures = [
            api.post("/memory", json={}),
            api.post("/memory", json={"content": "   "}),
            api.post("/memory/batch", json={"memories": []}),
            api.patch("/memory/does-not-exist", json={"importance": 0.1}),
            api.patch(f"/memory/{good}", json={"importance": 7}),
            api.delete("/memory/does-not-exist"),
            api.delete("/memory/by-tag"),
            api.post("/associate", json={"memory1_id": good, "memory2_id": good, "type": "RELATES_TO"}),
            api.post("/associate", json={"memory1_id": good, "memory2_id": "nope", "type": "SIMILAR_TO"}),
            api.post("/associate", json={"associations": [{"memory1_id": good, "memory2_id": "nope"}]}),  # 207, nothing created
            api.get("/recall", params={"query": "x", "limit": "many"}),
            api.post("/consolidate", json={"mode": "dream"}),
            httpx.post(f"{url}/memory", json={"content": "no token"}),
        ]
        assert [r.status_code for r in failures] == [400, 400, 400, 404, 400, 404, 400, 400, 400, 207, 400, 400, 401]
        sentinel = api.post("/memory", json={"content": "the sentinel"}).json()["memory_id"]
        nxt = reader.next()
        assert (nxt["type"], nxt["data"]["id"]) == ("memory.store", sentinel)  # nothing came in between
    finally:
        reader.close()


def test_stream_needs_the_api_token(served):
    _, url, api = served
    assert httpx.get(f"{url}/stream").status_code == 401
    assert httpx.get(f"{url}/stream", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert httpx.get(f"{url}/stream/status").status_code == 401
    body = httpx.get(f"{url}/stream", headers={"Authorization": "Bearer wrong"}).json()
    assert body["status"] == "error" and body["code"] == 401
    # X-API-Key and ?api_key= work too (spec 003: Authentication).
    by_header, by_query = Reader(url, headers={"X-API-Key": TOKEN}), Reader(url, headers={}, path=f"/stream?api_key={TOKEN}")
    try:
        # The server counts a subscriber before its response headers reach the client: wait for both.
        wait_for(lambda: subscribers(api) == 2 and None not in (by_header.status, by_query.status),
                 what="the X-API-Key and ?api_key= subscribers and their response headers")
        assert by_header.status == by_query.status == 200
    finally:
        by_header.close()
        by_query.close()


def test_a_slow_subscriber_is_dropped_and_writes_go_on(served):
    app, url, api = served
    bus = app.state.events
    fast = Reader(url)
    host, port = url.removeprefix("http://").split(":")
    slow = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # and it never reads
    slow.connect((host, int(port)))
    slow.sendall(f"GET /stream HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {TOKEN}\r\n\r\n".encode())
    try:
        wait_for(lambda: subscribers(api) == 2, what="both subscribers")
        blob = "z" * 60_000
        n = 400  # 24 MB: far more than the socket buffers of a client that does not read
        publish_times, received = [], []
        for i in range(n):
            t = time.perf_counter()
            bus.publish("test.blob", {"i": i, "blob": blob})
            publish_times.append(time.perf_counter() - t)
            if i % 10 == 9:  # the fast client keeps up: take what it got before publishing more
                received += [fast.next()["data"]["i"] for _ in range(10)]
        wait_for(lambda: bus.dropped_subscribers == 1, what="the slow subscriber to be dropped")
        assert subscribers(api) == 1
        # The fast one got every blob, in order.
        assert received == list(range(n))
        # Writes go on, and the fast subscriber still sees them.
        started = time.perf_counter()
        ids = [api.post("/memory", json={"content": f"written while a client is stuck {i}"}).json()["memory_id"] for i in range(5)]
        write_ms = (time.perf_counter() - started) * 1000 / 5
        assert [fast.next()["data"]["id"] for _ in range(5)] == ids
        print(f"publish p50 {sorted(publish_times)[n // 2] * 1e6:.0f} us, max {max(publish_times) * 1e6:.0f} us "
              f"({n} events of 60 kB); POST /memory {write_ms:.1f} ms with a stuck client dropped")
    finally:
        slow.close()
        fast.close()


def test_a_bank_scoped_token_streams_only_its_banks_events(engine_url, embedder, os_client, tmp_path):
    """A token scoped to bank a never sees what is written in bank b (content previews are in the
    events); the API token (every bank) sees both."""
    from service.auth.tokens import hash_token

    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({"tokens": [{"name": "agent-a", "sha256": hash_token("token-a"), "banks": ["a"], "permissions": ["recall", "remember"]}]}))
    with live_app(engine_url, embedder, os_client, engram_tokens_file=str(tokens), stream_keepalive_seconds=0.3) as (app, url):
        with httpx.Client(base_url=url, headers=AUTH, timeout=60.0) as api:
            scoped, everything = Reader(url, headers={"Authorization": "Bearer token-a"}), Reader(url)
            try:
                wait_for(lambda: subscribers(api) == 2, what="both subscribers")
                assert api.post("/memory", json={"content": "bank b: the secret plan"}, headers={"X-Bank": "b"}).status_code == 201
                assert api.post("/memory", json={"content": "bank a: the public plan"}, headers={"X-Bank": "a"}).status_code == 201
                seen_all = [everything.next()["data"]["content_preview"] for _ in range(2)]
                assert seen_all == ["bank b: the secret plan", "bank a: the public plan"]
                assert scoped.next()["data"]["content_preview"] == "bank a: the public plan"
                api.get("/recall", params={"query": "plan"}, headers={"X-Bank": "b"})
                assert everything.next()["type"] == "memory.recall"
                # A marker written in bank a after all that: the scoped stream's next event is the marker,
                # so nothing of bank b reached it before (a stream keeps the order events were published in).
                assert api.post("/memory", json={"content": "bank a: the marker"}, headers={"X-Bank": "a"}).status_code == 201
                assert scoped.next()["data"]["content_preview"] == "bank a: the marker"
            finally:
                scoped.close()
                everything.close()
