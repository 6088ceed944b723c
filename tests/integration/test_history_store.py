"""The consolidation history's store against a real engine: a prune that fails is reported per run,
never counted as done; each bank's runs are its own."""

from __future__ import annotations

import logging

from service.storage.history import HistoryStore


def run_result(i: int) -> dict:
    return {"mode": "decay", "success": True, "dry_run": False, "started_at": f"2026-01-0{i + 1}T00:00:00+00:00",
            "completed_at": f"2026-01-0{i + 1}T00:00:01+00:00", "steps": {"decay": {}}}


def test_a_failed_prune_is_reported_per_run_and_retried(make_client, os_client, caplog):
    api = make_client(write_refresh="true")
    alias = api.app.state.settings.consolidation_alias
    keep_all = HistoryStore(os_client, alias, 10, refresh="true")
    for i in range(3):
        keep_all.record("x", run_result(i), trigger="manual", affected=0)
    keep_all.record("y", run_result(0), trigger="manual", affected=0)
    keep_one = HistoryStore(os_client, alias, 1, refresh="true")
    os_client.indices.put_settings(index=alias, body={"index.blocks.write": True})
    try:
        with caplog.at_level(logging.WARNING, logger="engram.consolidation"):
            blocked = keep_one.prune("x")
    finally:
        os_client.indices.put_settings(index=alias, body={"index.blocks.write": False})
    assert blocked.deleted == 0 and [e.status for e in blocked.failed] == [403, 403]
    assert "2 of 2 old runs were not deleted" in caplog.text
    assert len(keep_all.recent("x")) == 3  # nothing was lost, nothing claimed done
    again = keep_one.prune("x")
    assert (again.deleted, again.failed) == (2, [])
    assert [r["started_at"] for r in keep_all.recent("x")] == ["2026-01-03T00:00:00+00:00"]  # the newest stays
    assert len(keep_all.recent("y")) == 1  # another bank's runs are not this bank's to prune
    assert keep_one.prune("x").deleted == 0
