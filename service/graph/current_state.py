"""Current-state recall (spec 000 "State Filtering Parameters"): what is true at an instant.

A memory is not current when it is archived, not yet valid (t_valid in the future), expired
(t_invalid passed) or superseded (an outgoing INVALIDATED_BY / EVOLVED_INTO edge, recorded on
the memory as `supersessions` when the edge is written). As of a past instant T (`as_of`), a memory
exists only if it was valid at T: t_valid (else its timestamp) <= T, and not expired or superseded
by T (service/filters/clauses.py builds the same rules as engine filters). Where it can, the filter runs inside
OpenSearch (`candidate_must_not`), so a page is never emptied after the fact. Superseded memories
are the exception: they stay candidates so that the head of their chain can take their place
(A -> B -> C returns C where A ranked), which needs to know where A ranked.

Everything here is pure; the one I/O step — fetching the next memories of all chains, one request
per hop — is passed in as `lookup`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from scoring.rerank import ScoredCandidate
from service.clock.instants import stored_datetime

# spec 000: "Resolution is bounded at 5 hops and is cycle-safe."
MAX_HOPS = 5
STATE_REPLACEMENT = "state_replacement"  # spec 000 "Result fields" match_type

# Chain outcomes reported under state_filter (state_debug) when no head could replace a memory.
RESOLVED, CYCLE, TOO_LONG, MISSING, INACTIVE = "resolved", "cycle", "too_long", "missing", "inactive"

# lookup(ids) -> {id: (source, passes)}: `passes` = the memory may be returned (the request's filters
# and strictly current). Ids that do not exist are simply absent.
Lookup = Callable[[list[str]], Mapping[str, tuple[dict, bool]]]
# rescore(head id, head source, replaced) -> the head as a result in the replaced memory's place: its
# final_score is the replaced one's (its rank), its components its own.
Rescore = Callable[[str, dict, ScoredCandidate], ScoredCandidate]


# --- one memory ------------------------------------------------------------------------------------
def validity_reason(source: Mapping[str, Any], at: datetime, *, as_of: bool = False) -> str | None:
    """AutoMem recall.py `_state_reason_for_memory`: archived, not_yet_valid, expired, in that order.
    With `as_of`, a memory without t_valid is valid from its timestamp."""
    if source.get("archived") is True:
        return "archived"
    t_valid = stored_datetime(source.get("t_valid"))
    if t_valid is None and as_of:
        t_valid = stored_datetime(source.get("timestamp"))
    if t_valid is not None and t_valid > at:
        return "not_yet_valid"
    t_invalid = stored_datetime(source.get("t_invalid"))
    if t_invalid is not None and t_invalid <= at:
        return "expired"
    return None


def supersession(source: Mapping[str, Any], at: datetime) -> dict | None:
    """The supersession in force at `at`: of the entries whose time has come, the newest (write order,
    newest last — "newest edge wins"). None when the memory is not superseded at `at`."""
    entries = source.get("supersessions") or []
    if not entries and source.get("superseded_by") and source.get("superseded_at"):
        entries = [{"by": source["superseded_by"], "type": source.get("supersede_type"), "at": source["superseded_at"]}]
    live = [e for e in entries if e.get("by") and (moment := stored_datetime(e.get("at"))) is not None and moment <= at]
    return live[-1] if live else None


# --- chains ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Chain:
    start: str
    entry: dict  # the start's supersession: by, type, at, strength
    path: tuple[str, ...]  # the memories after `start`, in order
    outcome: str  # RESOLVED, CYCLE, TOO_LONG, MISSING or INACTIVE
    head: str | None = None


@dataclass
class Resolution:
    chains: dict[str, Chain]
    sources: dict[str, dict]  # every memory looked up on the way
    hops: int = 0  # lookups made (engine requests)


def resolve_chains(starts: Mapping[str, dict], lookup: Lookup, at: datetime, max_hops: int = MAX_HOPS) -> Resolution:
    """Follow every chain from its start's supersession to its head, all chains in lockstep: hop k
    looks up the k-th memory of every unfinished chain in ONE call, so a page with twenty superseded
    memories costs as many requests as one with a single one.

    The head is the first memory that is not superseded at `at`; it must also pass the request's
    filters (`lookup`'s flag), else the chain is INACTIVE. Revisiting a memory is a CYCLE; needing
    more than `max_hops` hops is TOO_LONG. Neither yields a head: every memory of a cycle is superseded.
    """
    known: dict[str, tuple[dict, bool]] = {}
    paths = {sid: [entry["by"]] for sid, entry in starts.items()}
    seen = {sid: {sid} for sid in starts}
    chains: dict[str, Chain] = {}
    hops = 0
    for _ in range(max_hops):
        open_ids = [sid for sid in starts if sid not in chains]
        if not open_ids:
            break
        wanted = list(dict.fromkeys(paths[sid][-1] for sid in open_ids if paths[sid][-1] not in known and paths[sid][-1] not in seen[sid]))
        if wanted:
            known.update(lookup(wanted))
            hops += 1
        for sid in open_ids:
            path = paths[sid]
            current, head = path[-1], None
            if current in seen[sid]:
                outcome = CYCLE
            elif current not in known:
                outcome = MISSING
            else:
                seen[sid].add(current)
                source, passes = known[current]
                nxt = supersession(source, at)
                if nxt is not None:
                    path.append(nxt["by"])  # one more hop
                    continue
                outcome, head = (RESOLVED, current) if passes else (INACTIVE, None)
            chains[sid] = Chain(sid, dict(starts[sid]), tuple(path), outcome, head)
    for sid in starts:
        if sid not in chains:
            last = paths[sid][-1]
            chains[sid] = Chain(sid, dict(starts[sid]), tuple(paths[sid]), CYCLE if last in seen[sid] else TOO_LONG)
    return Resolution(chains, {mid: src for mid, (src, _) in known.items()}, hops)


# --- a ranked list -----------------------------------------------------------------------------
@dataclass
class StateOutcome:
    ranked: list[ScoredCandidate]
    suppressed: list[dict] = field(default_factory=list)
    replacements: list[dict] = field(default_factory=list)
    # Per replacement head: what shape_result adds (its stored source, state_replaces, relations).
    extras: dict[str, dict] = field(default_factory=dict)
    hops: int = 0

    def to_response(self, *, debug: bool) -> dict:
        """spec 000 Standard Response Structure `state_filter` (+ detail under state_debug)."""
        out: dict[str, Any] = {
            "current_only": True,
            "suppressed_count": len(self.suppressed),
            "replacement_count": len(self.replacements),
        }
        if debug:
            out["suppressed"] = self.suppressed
            out["replacements"] = self.replacements
        return out


def apply_current_state(
    ranked: Sequence[ScoredCandidate],
    sources: Mapping[str, dict],
    at: datetime,
    lookup: Lookup,
    rescore: Rescore,
    max_hops: int = MAX_HOPS,
    page: int | None = None,
    as_of: bool = False,
    stored: Callable[[list[str]], Mapping[str, dict]] | None = None,
) -> StateOutcome:
    """Suppress what is not current at `at` (`as_of`: a past instant, see validity_reason); put the
    head of a superseded memory's chain in its place.

    With `page` (the caller keeps only the first `page` results, in this order), chains are resolved
    only for superseded memories that can still reach the page — those with fewer than `page` current
    memories above them — so the usual recall makes no lookup at all. Those further down are
    suppressed without a replacement (and without a request).

    The head takes the suppressed memory's place — its final score, as AutoMem recall.py
    `_apply_current_state_filter` does — but reports its own score components (`rescore`), with
    `match_type: "state_replacement"`, `state_replaces` and a relation whose `from` is the suppressed memory. A head already in the list is not repeated. A superseded
    memory reports the reason "superseded" even when it also expired (a supersede sets t_invalid).

    A source may hold only the supersession summary (superseded_at: the earliest supersession;
    superseded_by / supersede_type: the newest), enough to tell whether the memory is superseded at
    `at`; `stored(ids)` then gives the stored memories of the chain starts about to be resolved, whose
    own supersessions say which one is in force.
    """
    reasons: dict[str, str] = {}
    starts: dict[str, dict] = {}
    for s in ranked:
        source = sources.get(s.candidate.id, {})
        entry = supersession(source, at)
        if entry is not None and source.get("archived") is not True:
            reasons[s.candidate.id] = "superseded"
            starts[s.candidate.id] = entry
        else:
            reason = validity_reason(source, at, as_of=as_of)
            if reason:
                reasons[s.candidate.id] = reason
    if page is not None and starts:
        starts = _reaching(ranked, reasons, starts, page)
    if starts and stored is not None:
        for mid, source in stored(list(starts)).items():
            entry = supersession(source, at)
            if entry is not None and mid in starts:
                starts[mid] = entry
    resolution = resolve_chains(starts, lookup, at, max_hops) if starts else Resolution({}, {})
    position = {s.candidate.id: i for i, s in enumerate(ranked)}
    placed: set[str] = set()  # ids already in the output
    moved: set[str] = set()  # heads that ranked lower on their own and moved up to a suppressed memory's place
    out = StateOutcome([], hops=resolution.hops)
    for i, s in enumerate(ranked):
        mid = s.candidate.id
        if mid in moved:
            continue
        reason = reasons.get(mid)
        if reason is None:
            out.ranked.append(s)
            placed.add(mid)
            continue
        item: dict[str, Any] = {"id": mid, "reason": reason}
        chain = resolution.chains.get(mid)
        if chain is not None:
            item["relation_type"] = chain.entry.get("type")
            if chain.head is None:
                item["chain"] = chain.outcome
            else:
                item["replacement_id"] = chain.head
                # "a recall that would surface A returns C instead" (spec 000): the head takes A's place
                # unless it already ranks above A on its own.
                if chain.head not in placed:
                    if position.get(chain.head, -1) > i:
                        moved.add(chain.head)
                    placed.add(chain.head)
                    out.ranked.append(_replacement(s, chain, resolution.sources[chain.head], rescore, out))
        out.suppressed.append(item)
    return out


def _reaching(ranked: Sequence[ScoredCandidate], reasons: Mapping[str, str], starts: dict[str, dict], page: int) -> dict[str, dict]:
    """The chain starts ranked above the `page`-th current memory: only their heads can land on the page."""
    reaching: dict[str, dict] = {}
    current = 0
    for s in ranked:
        if current >= page:
            break
        mid = s.candidate.id
        if mid in starts:
            reaching[mid] = starts[mid]
        elif mid not in reasons:
            current += 1
    return reaching


def _replacement(s: ScoredCandidate, chain: Chain, source: dict, rescore: Rescore, out: StateOutcome) -> ScoredCandidate:
    head = chain.head
    assert head is not None
    relation = {"type": chain.entry.get("type"), "strength": chain.entry.get("strength"), "from": chain.start}
    if len(chain.path) > 1:
        relation["hops"] = len(chain.path)
    out.replacements.append({"id": head, "replaces_id": chain.start, "relation_type": chain.entry.get("type"), "hops": len(chain.path)})
    out.extras[head] = {"source": source, "state_replaces": chain.start, "relations": [relation]}
    return rescore(head, source, s)
