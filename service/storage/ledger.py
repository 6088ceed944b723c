"""RecallLedger: the session dedupe ledger index ({INDEX_PREFIX}-recall-ledger), every client call on it.

Spec 004: "When sessionKey is present, recall uses a daemon-owned context ledger keyed by
(sessionKey, agentId, contextEpoch). Rows returned once in the current epoch are suppressed".
Here one document per (bank, sessionKey, agentId) holds the current epoch and the ids returned in
it. It is read with a realtime GET (no refresh to wait for) and rewritten at the version it was
read (if_seq_no): a replica that lost the race reads again, and the ids another recall claimed in
between are reported back (`Claim.taken`), so two concurrent recalls of one session never both
return a memory as new. Documents expire RECALL_LEDGER_TTL_SECONDS after the session's last recall.

The document transitions are pure functions (`claimed_doc`, `advanced_doc`) with unit tests.
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from opensearchpy import OpenSearch
from opensearchpy.exceptions import ConflictError, NotFoundError

from service.errors import EngineUnavailable
from service.storage.client import engine_errors
from service.clock.instants import iso, stored_datetime

log = logging.getLogger("engram.ledger")

# Document ids: uuid5 of (bank, sessionKey, agentId) in a namespace of our own.
LEDGER_NAMESPACE = uuid.UUID("3c8e1f0a-54b7-4d0e-9a61-7f2d9b3c5e18")
# A lost race (another recall of the session wrote first) is retried after a short random pause; 8
# concurrent writers of one session on two replicas (tests/integration/test_signet_dedupe.py) lost
# 5 races in a row without the pause.
WRITE_ATTEMPTS = 12
# Expired documents are purged at most this often per process (reads ignore them anyway).
PURGE_INTERVAL_SECONDS = 3600.0


def session_doc_id(bank: str, session_key: str, agent_id: str) -> str:
    return str(uuid.uuid5(LEDGER_NAMESPACE, f"{bank}\n{session_key}\n{agent_id}"))


@dataclass(frozen=True)
class Session:
    """A session's ledger as read: the current epoch, what it returned, the version (None: no document)."""

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
    """The document after `ids` were returned: appended to the epoch's list (each once, newest last,
    at most `max_items`), expiry renewed. `current` None starts at epoch 0."""
    base = current or {"bank": key.bank, "session_key": key.session_key, "agent_id": key.agent_id, "context_epoch": 0,
                       "recalled": [], "created_at": iso(now)}
    recalled = list(dict.fromkeys([*(base.get("recalled") or []), *ids]))[-max_items:]
    return {**base, "recalled": recalled, "updated_at": iso(now), "expires_at": iso(now + timedelta(seconds=ttl_s))}


def advanced_doc(current: dict | None, key: Session, reason: str, source_ref: str | None, now: datetime, ttl_s: float) -> dict:
    """The document of the next context epoch: nothing returned in it yet."""
    epoch = int((current or {}).get("context_epoch") or 0) + 1
    base = current or {"bank": key.bank, "session_key": key.session_key, "agent_id": key.agent_id, "created_at": iso(now)}
    return {
        **base, "context_epoch": epoch, "recalled": [], "reason": reason, "source_ref": source_ref,
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
        key = Session(bank, session_key, agent_id)
        with engine_errors("read the recall ledger"):
            try:
                doc = self.client.get(index=self.alias, id=key.doc_id)
            except NotFoundError:
                return key
        version = (doc["_seq_no"], doc["_primary_term"])
        source = live_source(doc["_source"], now)
        if source is None:  # expired: the session starts over (the stale document is overwritten)
            return Session(bank, session_key, agent_id, version=version)
        return Session(
            bank, session_key, agent_id, epoch=int(source.get("context_epoch") or 0),
            recalled=frozenset(source.get("recalled") or ()), source=source, version=version,
        )

    def claim(self, session: Session, ids: Sequence[str], now: datetime) -> Claim:
        """Record `ids` as returned in the session's current epoch (written before the recall answers,
        so the session's next recall, on any replica, sees them)."""
        current = session
        taken: set[str] = set()
        for attempt in range(WRITE_ATTEMPTS):
            taken |= (current.recalled - session.recalled) & set(ids)
            doc = claimed_doc(current.source, session, ids, now, self.ttl_s, self.max_items)
            if self._write(session.doc_id, doc, current.version):
                self._maybe_purge(now)
                return Claim(int(doc["context_epoch"]), taken)
            _pause(attempt)
            current = self.read(session.bank, session.session_key, session.agent_id, now)
        raise EngineUnavailable(f"recall ledger: {WRITE_ATTEMPTS} concurrent recalls of one session wrote first; retry")

    def advance(self, bank: str, session_key: str, agent_id: str, *, reason: str, source_ref: str | None, now: datetime) -> int:
        """Start the session's next context epoch (nothing in it is suppressed); returns its number."""
        for attempt in range(WRITE_ATTEMPTS):
            current = self.read(bank, session_key, agent_id, now)
            doc = advanced_doc(current.source, current, reason, source_ref, now, self.ttl_s)
            if self._write(current.doc_id, doc, current.version):
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
