"""Session dedupe around one recall (spec 004): read the session's ledger, suppress or mark what it
was shown in its current context epoch, record what this recall returns.

- no sessionKey: nothing happens (`meta.dedupe.enabled: false`);
- sessionKey: memories returned in the current epoch leave the ranking before the page is cut
  (RecallRequest.suppress_ids) and are counted in `suppressed`; with includeRecalled they stay,
  marked `already_recalled: true`, and are counted in `repeatedReturned`;
- what is returned is recorded before the response is sent; a memory a concurrent recall of the
  same session recorded first is treated as already recalled (suppressed, or marked).

The agent defaults as Signet's resolveAgentId does: the agentId given, else `id` of a session key
of the form `agent:<id>:...`, else `default`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from service.storage.ledger import RecallLedger, Session

DEFAULT_AGENT = "default"


def agent_of(agent_id: str | None, session_key: str) -> str:
    if agent_id and agent_id.strip():
        return agent_id.strip()
    parts = session_key.split(":")
    if len(parts) > 1 and parts[0] == "agent" and parts[1].strip():
        return parts[1].strip()
    return DEFAULT_AGENT


@dataclass
class Dedupe:
    """One recall's dedupe state, from `begin` to `finish`."""

    ledger: RecallLedger | None
    session: Session | None
    include_recalled: bool
    timings: dict[str, float] = field(default_factory=dict)
    suppressed: int = 0
    repeated: int = 0
    epoch: int | None = None

    @classmethod
    def begin(cls, ledger: RecallLedger, bank: str, session_key: str | None, agent_id: str | None, include_recalled: bool, now: datetime) -> Dedupe:
        if not session_key:
            return cls(None, None, include_recalled)
        started = time.perf_counter()
        session = ledger.read(bank, session_key, agent_of(agent_id, session_key), now)
        out = cls(ledger, session, include_recalled, epoch=session.epoch)
        out.timings["ledger_read"] = (time.perf_counter() - started) * 1000
        return out

    @property
    def suppress_ids(self) -> frozenset[str]:
        """What the pipeline drops before the page is cut."""
        if self.session is None or self.include_recalled:
            return frozenset()
        return self.session.recalled

    def finish(self, rows: list[dict[str, Any]], pipeline_suppressed: int, now: datetime) -> list[dict[str, Any]]:
        """Record the returned rows; the rows as sent (concurrently claimed ones dropped or marked)."""
        if self.session is None or self.ledger is None:
            return rows
        started = time.perf_counter()
        self.suppressed = pipeline_suppressed
        known = self.session.recalled if self.include_recalled else frozenset()
        claim = self.ledger.claim(self.session, [r["id"] for r in rows], now)
        self.epoch = claim.epoch
        if self.include_recalled:
            seen = known | claim.taken
            for r in rows:
                if r["id"] in seen:
                    r["already_recalled"] = True
                    self.repeated += 1
        elif claim.taken:
            rows = [r for r in rows if r["id"] not in claim.taken]
            self.suppressed += len(claim.taken)
        self.timings["ledger_write"] = (time.perf_counter() - started) * 1000
        return rows
