"""Hindsight's async retain as durable operations, against the real engine: the operation is stored
before the 200, its status and the bank's list are served in Hindsight's shapes, an operation a stop
or a kill -9 left unfinished is resumed at the next start, and a resumed item is never stored twice."""

from __future__ import annotations

import signal
import time
import uuid

import httpx

from service.storage.bootstrap import drop_prefix
from tests.integration.test_service_process import run_service

BANK = "/v1/default/banks"


def retain_async(api, bank: str, texts: list[str], **extra) -> str:
    resp = api.post(f"{BANK}/{bank}/memories", json={"items": [{"content": t} for t in texts], "async": True, **extra})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["async"] is True and body["items_count"] == len(texts)
    return body["operation_id"]


def wait_status(api, bank: str, operation_id: str, timeout: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        resp = api.get(f"{BANK}/{bank}/operations/{operation_id}")
        assert resp.status_code == 200, resp.text
        if resp.json()["status"] in ("completed", "failed") or time.monotonic() > deadline:
            return resp.json()
        time.sleep(0.1)


def stored_texts(api, bank: str) -> list[str]:
    resp = api.get(f"{BANK}/{bank}/memories/list", params={"limit": 1000})
    assert resp.status_code == 200, resp.text
    return sorted(item["text"] for item in resp.json()["items"])


def test_an_async_retain_is_an_operation_whose_status_is_served(make_client):
    api = make_client()
    op = retain_async(api, "ops", ["Alice deploys on Tuesdays.", "Bob reviews on Fridays."])
    status = wait_status(api, "ops", op)
    assert status["status"] == "completed", status
    assert (status["operation_id"], status["id"], status["task_type"]) == (op, op, "retain")
    assert status["result_metadata"] == {"items_count": 2, "memories_count": 2} and status["error_message"] is None
    assert stored_texts(api, "ops") == ["Alice deploys on Tuesdays.", "Bob reviews on Fridays."]
    with_payload = api.get(f"{BANK}/ops/operations/{op}", params={"include_payload": "true"}).json()
    assert [i["content"] for i in with_payload["task_payload"]["items"]] == ["Alice deploys on Tuesdays.", "Bob reviews on Fridays."]

    second = retain_async(api, "ops", ["Carol owns the billing service."])
    wait_status(api, "ops", second)
    listed = api.get(f"{BANK}/ops/operations").json()
    assert (listed["bank_id"], listed["total"], listed["limit"], listed["offset"]) == ("ops", 2, 20, 0)
    assert [o["operation_id"] for o in listed["operations"]] == [second, op]  # newest first
    assert listed["operations"][1]["items_count"] == 2 and listed["operations"][1]["status"] == "completed"
    assert api.get(f"{BANK}/ops/operations", params={"status": "failed"}).json()["total"] == 0
    assert api.get(f"{BANK}/other/operations").json()["total"] == 0  # operations are the bank's
    missing = api.get(f"{BANK}/ops/operations/{uuid.uuid4()}")
    assert missing.status_code == 404 and "not found" in missing.json()["detail"]
    assert api.get(f"{BANK}/other/operations/{op}").status_code == 404
    assert api.get(f"{BANK}/ops/operations", params={"limit": 0}).status_code == 422  # Hindsight's validation shape
    # Bank deletion takes its operations along.
    assert api.delete(f"{BANK}/ops").json()["operations_deleted"] == 2


def test_an_operation_left_unfinished_is_resumed_at_the_next_start(make_client):
    first = make_client()
    prefix = first.app.state.settings.index_prefix
    first.app.state.hindsight_operations.stop()  # as if the process died right after answering
    op = retain_async(first, "resume", ["The backup runs at 02:00.", "Restores are tested monthly."], operation_id="op-resume-1")
    assert first.get(f"{BANK}/resume/operations/{op}").json()["status"] == "pending"
    assert stored_texts(first, "resume") == []
    second = make_client(index_prefix=prefix)  # the next start, on the same store
    assert wait_status(second, "resume", op)["status"] == "completed"
    assert stored_texts(second, "resume") == ["Restores are tested monthly.", "The backup runs at 02:00."]
    # Run again (a replica resuming it too, say): its items derive their ids from the operation, so nothing doubles.
    second.app.state.hindsight_operations.operations.update("resume", op, {"status": "processing"})
    second.app.state.hindsight_operations.run("resume", op)
    assert wait_status(second, "resume", op)["status"] == "completed"
    assert stored_texts(second, "resume") == ["Restores are tested monthly.", "The backup runs at 02:00."]


def test_kill_9_of_the_service_after_acknowledged_async_retains_loses_none(engine_url, os_client):
    """The issue's run: 40 async retains acknowledged, kill -9 of the service, a restart: all 40 are
    stored, and every operation says completed."""
    prefix = f"t{uuid.uuid4().hex[:10]}"
    proc, url = run_service(engine_url, prefix)
    headers = {"Authorization": "Bearer tok"}
    try:
        with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
            ops = {}
            for i in range(40):
                resp = http.post(f"{BANK}/crash/memories", json={"items": [{"content": f"acknowledged async retain number {i}"}], "async": True})
                assert resp.status_code == 200, resp.text
                ops[resp.json()["operation_id"]] = f"acknowledged async retain number {i}"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        proc, url = run_service(engine_url, prefix)
        with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
            statuses = {op: wait_status(http, "crash", op)["status"] for op in ops}
            assert set(statuses.values()) == {"completed"}, statuses
            assert stored_texts(http, "crash") == sorted(ops.values())
        proc.send_signal(signal.SIGINT)
        resumed = [line for line in proc.communicate(timeout=60)[1].splitlines() if "unfinished Hindsight operations" in line]
        print(f"40 acknowledged, kill -9; after the restart: {resumed or 'none left to resume'}")
    finally:
        proc.kill()
        proc.wait(timeout=30)
        drop_prefix(os_client, prefix)
