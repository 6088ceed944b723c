"""The session dedupe ledger's document transitions (service/storage/ledger.py), pure."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from service.storage.ledger import Session, advanced_doc, claimed_doc, expired_query, live_source, session_doc_id

NOW = datetime(2026, 5, 20, 12, tzinfo=timezone.utc)
KEY = Session("default", "session-uuid", "alice")
DAY = 86_400.0


def test_doc_ids_are_stable_and_separate_banks_sessions_and_agents():
    assert session_doc_id("default", "s", "a") == session_doc_id("default", "s", "a")
    assert len({session_doc_id("default", "s", "a"), session_doc_id("other", "s", "a"), session_doc_id("default", "s2", "a"),
                session_doc_id("default", "s", "b"), session_doc_id("default", "s\na", "")}) == 5
    assert KEY.doc_id == session_doc_id("default", "session-uuid", "alice")


def test_a_first_claim_starts_epoch_zero():
    doc = claimed_doc(None, KEY, ["m1", "m2", "m1"], NOW, DAY, 100)
    assert doc == {
        "bank": "default", "session_key": "session-uuid", "agent_id": "alice", "context_epoch": 0, "recalled": ["m1", "m2"],
        "created_at": "2026-05-20T12:00:00+00:00", "updated_at": "2026-05-20T12:00:00+00:00", "expires_at": "2026-05-21T12:00:00+00:00",
    }


def test_later_claims_append_once_and_keep_the_newest():
    first = claimed_doc(None, KEY, ["m1", "m2"], NOW, DAY, 3)
    later = NOW + timedelta(hours=1)
    second = claimed_doc(first, KEY, ["m2", "m3", "m4"], later, DAY, 3)
    assert second["recalled"] == ["m2", "m3", "m4"]  # at most 3: the oldest (m1) is forgotten
    assert (second["created_at"], second["expires_at"]) == (first["created_at"], "2026-05-21T13:00:00+00:00")
    assert first["recalled"] == ["m1", "m2"]  # not mutated


def test_advancing_starts_an_empty_epoch():
    doc = claimed_doc(None, KEY, ["m1"], NOW, DAY, 10)
    nxt = advanced_doc(doc, KEY, "compaction-complete", "summary-1", NOW, DAY)
    assert (nxt["context_epoch"], nxt["recalled"], nxt["reason"], nxt["source_ref"]) == (1, [], "compaction-complete", "summary-1")
    assert advanced_doc(nxt, KEY, "compaction-complete", None, NOW, DAY)["context_epoch"] == 2
    assert advanced_doc(None, KEY, "compaction-complete", None, NOW, DAY)["context_epoch"] == 1


def test_expired_documents_are_not_live():
    doc = claimed_doc(None, KEY, ["m1"], NOW, DAY, 10)
    assert live_source(doc, NOW + timedelta(hours=23)) is doc
    assert live_source(doc, NOW + timedelta(hours=24)) is None
    assert live_source(None, NOW) is None
    assert expired_query(NOW) == {"range": {"expires_at": {"lte": "2026-05-20T12:00:00+00:00"}}}
