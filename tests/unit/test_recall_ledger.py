"""The session dedupe ledger's document transitions (service/storage/ledger.py), pure."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

from service.storage.ledger import Session, advanced_doc, claimed_doc, current_session, epoch_doc_id, expired_query, live_source, session_doc_id

NOW = datetime(2026, 5, 20, 12, tzinfo=timezone.utc)
KEY = Session("default", "session-uuid", "alice")
DAY = 86_400.0


def test_doc_ids_are_stable_and_separate_banks_sessions_and_agents():
    assert session_doc_id("default", "s", "a") == session_doc_id("default", "s", "a")
    assert len({session_doc_id("default", "s", "a"), session_doc_id("other", "s", "a"), session_doc_id("default", "s2", "a"),
                session_doc_id("default", "s", "b"), session_doc_id("default", "s\na", "")}) == 5
    assert KEY.doc_id == session_doc_id("default", "session-uuid", "alice")
    # a session's epoch document: one per (bank, session), never an agent's id
    assert epoch_doc_id("default", "s") == epoch_doc_id("default", "s") != epoch_doc_id("other", "s")
    assert epoch_doc_id("default", "s") not in {session_doc_id("default", "s", a) for a in ("", "a", "default")}


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


def test_advancing_writes_the_sessions_next_epoch():
    nxt = advanced_doc(None, KEY, "compaction-complete", "summary-1", NOW, DAY)
    assert nxt == {"bank": "default", "session_key": "session-uuid", "created_at": "2026-05-20T12:00:00+00:00", "context_epoch": 1,
                   "reason": "compaction-complete", "source_ref": "summary-1", "updated_at": "2026-05-20T12:00:00+00:00",
                   "expires_at": "2026-05-21T12:00:00+00:00"}  # no agent: the epoch is the whole session's
    later = advanced_doc(nxt, replace(KEY, epoch=1), "compaction-complete", None, NOW + timedelta(hours=1), DAY)
    assert (later["context_epoch"], later["created_at"], later["source_ref"]) == (2, nxt["created_at"], None)


def test_an_agent_document_of_an_earlier_epoch_counts_as_empty():
    """Signet resets dedupe by the session key alone: a compaction moves every agent of the session on."""
    doc = claimed_doc(None, KEY, ["m1", "m2"], NOW, DAY, 10)
    same = current_session(KEY, doc, 0, (3, 1))
    assert (same.epoch, same.recalled, same.version) == (0, frozenset({"m1", "m2"}), (3, 1))
    moved = current_session(KEY, doc, 1, (3, 1))
    assert (moved.epoch, moved.recalled, moved.source, moved.version) == (1, frozenset(), doc, (3, 1))
    assert current_session(KEY, None, 2, None).epoch == 2
    # an agent ahead of the session (written before epochs were kept per session) keeps its own
    ahead = claimed_doc(None, replace(KEY, epoch=3), ["m9"], NOW, DAY, 10)
    assert (current_session(KEY, ahead, 1, None).epoch, current_session(KEY, ahead, 1, None).recalled) == (3, frozenset({"m9"}))
    # claiming in the new epoch starts its list over, in that epoch
    fresh = claimed_doc(doc, moved, ["m3"], NOW, DAY, 10)
    assert (fresh["context_epoch"], fresh["recalled"], fresh["created_at"]) == (1, ["m3"], doc["created_at"])


def test_expired_documents_are_not_live():
    doc = claimed_doc(None, KEY, ["m1"], NOW, DAY, 10)
    assert live_source(doc, NOW + timedelta(hours=23)) is doc
    assert live_source(doc, NOW + timedelta(hours=24)) is None
    assert live_source(None, NOW) is None
    assert expired_query(NOW) == {"range": {"expires_at": {"lte": "2026-05-20T12:00:00+00:00"}}}
