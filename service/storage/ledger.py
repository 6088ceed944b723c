"""RecallLedger: the session dedupe ledger index ({INDEX_PREFIX}-recall-ledger), every client call on it.

Spec 004: "When sessionKey is present, recall uses a daemon-owned context ledger keyed by
(sessionKey, agentId, contextEpoch). Rows returned once in the current epoch are suppressed".
Here one document per (bank, sessionKey, agentId) holds the epoch it was written in and the ids
returned in it, and one document per (bank, sessionKey) holds the session's epoch: a compaction
starts the next epoch of the session, for every agent at once, as Signet resets dedupe by the
session key alone. An agent document written in an earlier epoch than the session's counts as empty.

Both are read with one realtime multi-get (no refresh to wait for) and rewritten at the version
they were read (if_seq_no): a replica that lost the race reads again, and the ids another recall
claimed in between are reported back (`Claim.taken`), so two concurrent recalls of one session
never both return a memory as new. Documents expire RECALL_LEDGER_TTL_SECONDS after the last write.

The document transitions are pure functions (`claimed_doc`, `advanced_doc`) with unit tests.
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from opensearchpy import OpenSearch
from opensearchpy.exceptions import ConflictError

from service.errors import EngineUnavailable
from service.storage.client import engine_errors
from service.clock.instants import iso, stored_datetime

log = logging.getLogger("engram.ledger")

# Document ids: uuid5 of (bank, sessionKey, agentId) in a namespace of our own; a session's epoch
# document, uuid5 of (bank, sessionKey) in another (so no agent's id can ever equal it).
LEDGER_NAMESPACE = uuid.UUID("3c8e1f0a-54b7-4d0e-9a61-7f2d9b3c5e18")
EPOCH_NAMESPACE = uuid.UUID("8d2f6b1e-0c47-4a9e-b35d-61e0f7a2c9d4")
# A lost race (another recall of the session wrote first) is retried after a short random pause; 8
# concurrent writers of one session on two replicas (tests/integration/test_signet_dedupe.py) lost
# 5 races in a row without the pause.
WRITE_ATTEMPTS = 12
# Expired documents are purged at most this often per process (reads ignore them anyway).
PURGE_INTERVAL_SECONDS = 3600.0


def session_doc_id(bank: str, session_key: str, agent_id: str) -> str:
    return str(uuid.uuid5(LEDGER_NAMESPACE, f"{bank}\n{session_key}\n{agent_id}"))


def epoch_doc_id(bank: str, session_key: str) -> str:
    return str(uuid.uuid5(EPOCH_NAMESPACE, f"{bank}\n{session_key}"))


@dataclass(frozen=True)
class Session:
    """One agent's ledger of a session as read: the session's current epoch, what the agent was shown
    in it, its document's version (None: no document)."""

    bank: str
    session_key: str
    agent_id: str
    epoch: int = 0
    recalled: frozenset[str] = frozenset()
    source: dict | None = None
    version: tuple[int, int] | None = None  # (_seq_no, _primary_term)

    @property
    def doc_id(self) -> str:
        return session_doc_id(self.bank, self.session_key, self.agent_id)


def current_session(key: Session, agent: dict | None, session_epoch: int, version: tuple[int, int] | None) -> Session:
    """The agent's ledger in the session's current epoch: its own epoch, unless the session has moved
    on since it was written (a compaction), in which case nothing was shown in the current one yet."""
    own = int((agent or {}).get("context_epoch") or 0)
    if agent is None or own < session_epoch:
        return replace(key, epoch=max(own, session_epoch), recalled=frozenset(), source=agent, version=version)
    return replace(key, epoch=own, recalled=frozenset(agent.get("recalled") or ()), source=agent, version=version)


@dataclass
class Claim:
    """The outcome of recording returned ids: the epoch they went into, and those another recall of the
    same session recorded first (between this recall's read and its write)."""

    epoch: int
    taken: set[str] = field(default_factory=set)


def live_source(source: dict | None, now: datetime) -> dict | None:
    """The stored document, or None when it has expired."""
    if source is None:
        return None
    expires = stored_datetime(source.get("expires_at"))
    return None if expires is not None and expires <= now else source


def claimed_doc(
    current: dict | None, key: Session, ids: Sequence[str], now: datetime, ttl_s: float, max_items: int,
) -> dict:
    """The agent's document after `ids` were returned in epoch `key.epoch`: appended to that epoch's
    list (each once, newest last, at most `max_items`), expiry renewed; a document of an earlier epoch
    starts the list over."""
    base = current or {"bank": key.bank, "session_key": key.session_key, "agent_id": key.agent_id, "created_at": iso(now)}
    kept = base.get("recalled") or [] if int(base.get("context_epoch") or 0) == key.epoch else []
    recalled = list(dict.fromkeys([*kept, *ids]))[-max_items:]
    return {**base, "context_epoch": key.epoch, "recalled": recalled, "updated_at": iso(now), "expires_at": iso(now + timedelta(seconds=ttl_s))}


def advanced_doc(current: dict | None, key: Session, reason: str, source_ref: str | None, now: datetime, ttl_s: float) -> dict:
    """The session's epoch document once its next context epoch started: `key.epoch` (the epoch the
    session is in) plus one."""
    base = current or {"bank": key.bank, "session_key": key.session_key, "created_at": iso(now)}
    return {
        **base, "context_epoch": key.epoch + 1, "reason": reason, "source_ref": source_ref,
        "updated_at": iso(now), "expires_at": iso(now + timedelta(seconds=ttl_s)),
    }


def _pause(attempt: int) -> None:
    time.sleep(random.uniform(0, 0.005 * (attempt + 1)))  # spread the contenders out


def expired_query(now: datetime) -> dict:
    return {"range": {"expires_at": {"lte": iso(now)}}}


class RecallLedger:
    def __init__(self, client: OpenSearch, alias: str, *, ttl_s: float, max_items: int):
        self.client = client
        self.alias = alias
        self.ttl_s = ttl_s
        self.max_items = max_items
        self._last_purge = 0.0

    def read(self, bank: str, session_key: str, agent_id: str, now: datetime) -> Session:
        """The agent's ledger in the session's current epoch (an expired document counts as none; it
        is overwritten at its version)."""
        return self._state(Session(bank, session_key, agent_id), now)[0]

    def _state(self, key: Session, now: datetime) -> tuple[Session, dict | None, tuple[int, int] | None]:
        """The agent's ledger, and the session's live epoch document with its version: one multi-get."""
        with engine_errors("read the recall ledger"):
            docs = self.client.mget(index=self.alias, body={"ids": [key.doc_id, epoch_doc_id(key.bank, key.session_key)]})["docs"]
        agent, epoch = ((d["_source"], (d["_seq_no"], d["_primary_term"])) if d.get("found") else None for d in docs)
        epoch_source = live_source(epoch[0], now) if epoch else None
        session = current_session(key, live_source(agent[0], now) if agent else None, int((epoch_source or {}).get("context_epoch") or 0),
                                  agent[1] if agent else None)
        return session, epoch_source, epoch[1] if epoch else None

    def claim(self, session: Session, ids: Sequence[str], now: datetime) -> Claim:
        """Record `ids` as returned in the session's current epoch (written before the recall answers,
        so the session's next recall, on any replica, sees them)."""
        current = session
        taken: set[str] = set()
        for attempt in range(WRITE_ATTEMPTS):
            # another recall's claims since this one read (of the epoch now current, were it a newer one)
            taken |= (current.recalled - session.recalled) & set(ids)
            doc = claimed_doc(current.source, current, ids, now, self.ttl_s, self.max_items)
            if self._write(session.doc_id, doc, current.version):
                self._maybe_purge(now)
                return Claim(int(doc["context_epoch"]), taken)
            _pause(attempt)
            current = self.read(session.bank, session.session_key, session.agent_id, now)
        raise EngineUnavailable(f"recall ledger: {WRITE_ATTEMPTS} concurrent recalls of one session wrote first; retry")

    def advance(self, bank: str, session_key: str, agent_id: str, *, reason: str, source_ref: str | None, now: datetime) -> int:
        """Start the session's next context epoch, for all its agents (nothing in it is suppressed):
        one past the epoch `agent_id` is in. Returns its number."""
        key = Session(bank, session_key, agent_id)
        for attempt in range(WRITE_ATTEMPTS):
            current, epoch_source, version = self._state(key, now)
            doc = advanced_doc(epoch_source, current, reason, source_ref, now, self.ttl_s)
            if self._write(epoch_doc_id(bank, session_key), doc, version):
                return int(doc["context_epoch"])
            _pause(attempt)
        raise EngineUnavailable(f"recall ledger: {WRITE_ATTEMPTS} concurrent writes to one session came first; retry")

    def _write(self, doc_id: str, doc: dict, version: tuple[int, int] | None) -> bool:
        """Write at the version read (create when there was none); False when another write came first."""
        guard = {"op_type": "create"} if version is None else {"if_seq_no": version[0], "if_primary_term": version[1]}
        with engine_errors("write the recall ledger", write=True):
            try:
                self.client.index(index=self.alias, id=doc_id, body=doc, **guard)
            except ConflictError:
                return False
        return True

    def _maybe_purge(self, now: datetime) -> None:
        if time.monotonic() - self._last_purge < PURGE_INTERVAL_SECONDS:
            return
        self._last_purge = time.monotonic()
        try:
            self.client.delete_by_query(
                index=self.alias, body={"query": expired_query(now)}, conflicts="proceed", wait_for_completion=False,
            )
        except Exception:  # noqa: BLE001 - a purge that fails now runs again later; reads ignore expired documents
            log.warning("purging expired recall ledger documents failed", exc_info=True)
