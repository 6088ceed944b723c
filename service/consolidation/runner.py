"""One consolidation run: the steps of a mode, in AutoMem's order, and the result it reports.

`full` runs decay, creative, cluster and forget in that order (AutoMem `consolidate`; its
LLM-based `identity` step has no offline equivalent and is not run). The result keeps AutoMem's
shape — {"mode", "dry_run", "started_at", "steps": {...}, "completed_at", "success"} — and adds
`changes`: what changed, or with `dry_run` what would change.

Every step of a run is planned first, on the store as it was when the run started, and only then
(unless `dry_run`) are the plans written, step by step: a dry run is the real run's planning
without its writes, so it reports exactly what the run would do on the same data. A later step
sees an earlier one's plan through the run's overlay (overlay.py); creative and cluster select
their memories by the relevance stored when the run started (decay's new scores count from the
next run on).
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from collections.abc import Callable
from typing import Any

from service.config import Settings
from service.consolidation import clusters as C
from service.consolidation import creative
from service.consolidation import queries as Q
from service.consolidation.engine import SCAN_PAGE, ConsolidationIO
from service.consolidation.overlay import Overlay
from service.consolidation.relevance import DecayConfig, ForgetConfig, MemoryFacts, bucket, fate, relevance_score
from service.errors import EngramError
from service.clock.instants import iso, stored_datetime
from service.memory.limits import finite_number

log = logging.getLogger("engram.consolidation")

MODES = ("full", "decay", "creative", "cluster", "forget")
STEPS = ("decay", "creative", "cluster", "forget")
# Relevance is rewritten only when it moved this much: every update re-indexes the memory's vector.
RELEVANCE_EPSILON = 0.001
# Lists in a result (archived, protected, ...) stop here; the *_count fields say how many there were.
REPORT_LIMIT = 100
SAMPLES = {"creative": 3, "cluster": 2}  # AutoMem: sample_associations[:3], sample_clusters[:2]
# The creative pass writes at most this many edges per run.
CREATIVE_LIMIT = 100


def steps_for(mode: str) -> tuple[str, ...]:
    return STEPS if mode == "full" else (mode,)


def facts_of(memory_id: str, source: dict, relationships: int = 0) -> MemoryFacts:
    meta = source.get("metadata") or {}
    protected = meta.get("protected") if isinstance(meta, dict) else None
    if isinstance(protected, str):
        protected = protected.strip().lower() not in {"", "0", "false", "no"}
    return MemoryFacts(
        id=memory_id, timestamp=stored_datetime(source.get("timestamp")),
        last_accessed=stored_datetime(source.get("last_accessed")), importance=finite_number(source.get("importance")),
        confidence=finite_number(source.get("confidence")), relationships=relationships,
        stored_relevance=finite_number(source.get("relevance_score")), type=source.get("type"),
        protected=bool(protected), protected_reason=meta.get("protected_reason") if isinstance(meta, dict) else None,
    )


@dataclass
class Graph:
    """The near-duplicate / related-memory graph of one run, shared by creative and cluster."""

    info: dict[str, dict] = field(default_factory=dict)  # id -> type, tags, importance, timestamp
    neighbours: dict[str, list[tuple[str, float]]] = field(default_factory=dict)

    def strong_pairs(self, threshold: float) -> list[tuple[str, str]]:
        return [(a, b) for a, near in self.neighbours.items() for b, cos in near if cos >= threshold]


@dataclass
class Run:
    bank: str  # every read and write of the run is of this bank
    now: datetime
    dry_run: bool
    mode: str = "full"
    graph: Graph | None = None
    overlay: Overlay = field(default_factory=Overlay)
    writes: list[Callable[[], None]] = field(default_factory=list)  # each step's plan, written after all are planned


class Consolidator:
    def __init__(self, settings: Settings, io: ConsolidationIO):
        self.settings = settings
        self.io = io
        self.decay_cfg = DecayConfig(settings.consolidation_base_decay_rate, settings.consolidation_importance_floor_factor)
        self.forget_cfg = ForgetConfig(
            archive_threshold=settings.consolidation_archive_threshold, delete_threshold=settings.consolidation_delete_threshold,
            grace_period_days=settings.consolidation_grace_period_days,
            importance_protection_threshold=settings.consolidation_importance_protection_threshold,
            protected_types=settings.protected_types,
        )
        self.cluster_threshold = settings.consolidation_cluster_similarity_threshold
        self.band = (min(settings.consolidation_creative_min_similarity, self.cluster_threshold), self.cluster_threshold)

    def run(self, bank: str, mode: str, dry_run: bool, *, decay_threshold: float | None = None, now: datetime | None = None) -> dict[str, Any]:
        now = now or datetime.now(timezone.utc)
        started = time.perf_counter()
        result: dict[str, Any] = {"mode": mode, "dry_run": dry_run, "started_at": iso(now), "steps": {}}
        run = Run(bank, now, dry_run, mode)
        try:
            for step in steps_for(mode):  # plan every step: reads only
                t = time.perf_counter()
                stats = self.decay(run, decay_threshold) if step == "decay" else getattr(self, step)(run)
                stats["elapsed_ms"] = round((time.perf_counter() - t) * 1000, 1)
                result["steps"][step] = stats
            if not dry_run:  # then write every plan, in step order (each fills in its step's written counts)
                for write in run.writes:
                    write()
            for step, stats in result["steps"].items():
                log.info("consolidation %s%s: %s", step, " (dry run)" if dry_run else "", _brief(step, stats))
            result["success"] = True
        except EngramError as exc:
            log.error("consolidation %s failed: %s", mode, exc.message)
            result["success"], result["error"] = False, exc.message
        result["completed_at"] = iso(datetime.now(timezone.utc))
        result["elapsed_ms"] = round((time.perf_counter() - started) * 1000, 1)
        result["changes"] = changes(result["steps"])
        return result

    # --- decay ------------------------------------------------------------------------------
    def decay(self, run: Run, threshold: float | None) -> dict[str, Any]:
        stats: dict[str, Any] = {
            "processed": 0, "updated": 0, "would_update": 0, "avg_relevance_before": 0.0, "avg_relevance_after": 0.0,
            "distribution": {"high": 0, "medium": 0, "low": 0, "archive": 0}, "importance_threshold": threshold,
        }
        before = after = 0.0
        changed: dict[str, dict] = {}
        for page in self.io.scan(Q.memories_query(run.bank, min_importance=threshold)):
            counts = self.io.relationship_counts(run.bank, [mid for mid, _ in page])
            for mid, source in page:
                f = facts_of(mid, source, counts.get(mid, 0))
                new = round(relevance_score(f, run.now, self.decay_cfg), 6)
                old = f.stored_relevance
                before += old if old is not None else 0.5  # AutoMem counts a missing score as 0.5
                after += new
                stats["processed"] += 1
                stats["distribution"][bucket(new)] += 1
                if old is None or abs(new - old) >= RELEVANCE_EPSILON:
                    changed[mid] = {"relevance_score": new}
        stats["would_update"] = len(changed)
        run.overlay.relevance = {mid: doc["relevance_score"] for mid, doc in changed.items()}
        if stats["processed"]:
            stats["avg_relevance_before"] = round(before / stats["processed"], 6)
            stats["avg_relevance_after"] = round(after / stats["processed"], 6)

        def write() -> None:
            items = list(changed.items())
            for start in range(0, len(items), SCAN_PAGE):
                page = dict(items[start : start + SCAN_PAGE])
                stats["updated"] += len(page) - len(self.io.update_memories(run.bank, page))
            if stats["updated"]:
                self.io.refresh()

        run.writes.append(write)
        return stats

    # --- the neighbour graph ----------------------------------------------------------------
    def _candidates(self, bank: str) -> dict:
        """What creative and cluster work on: active (relevance > 0.3 or never scored), not archived, not MetaPattern."""
        return Q.memories_query(bank, excluded_types=self.io.excluded_types, min_relevance=Q.ACTIVE_RELEVANCE)

    def graph(self, run: Run) -> Graph:
        if run.graph is not None:
            return run.graph
        g = Graph()
        query = self._candidates(run.bank)
        low = self.band[0]
        for page in self.io.scan(query):
            for mid, s in page:
                g.info[mid] = {"type": s.get("type"), "tags": tuple(s.get("tags") or ()), "importance": s.get("importance"), "timestamp": s.get("timestamp")}
            near = self.io.neighbours(run.bank, [mid for mid, _ in page], query)
            g.neighbours.update({mid: [(n, c) for n, c in lst if c >= low] for mid, lst in near.items()})
        run.graph = g
        return g

    # --- creative ---------------------------------------------------------------------------
    def creative(self, run: Run) -> dict[str, Any]:
        types, sample, neighbours, cluster_of = self._whole_graph(run) if run.mode == "full" else self._sampled_graph(run)
        near = {m for a in sample for m, _ in neighbours.get(a, ())}
        linked = self.io.edges_among(run.bank, sorted(set(sample) | near))
        links = creative.discover(sample, neighbours, cluster_of, types, linked, self.band, limit=CREATIVE_LIMIT)
        found = [{**link.as_dict(), "discovered_at": iso(run.now)} for link in links]
        edges = [
            {"source_id": link.memory1_id, "target_id": link.memory2_id, "type": Q.DISCOVERED, "strength": link.confidence,
             "properties": {"kind": link.kind, "confidence": link.confidence, "similarity": link.similarity,
                            "origin": "consolidation", "discovered_at": iso(run.now)}}
            for link in links
        ]
        run.overlay.new_edges += [(e["source_id"], e["target_id"]) for e in edges]  # pairs with no edge yet (creative.discover)
        stats = {"discovered": len(links), "created": 0, "sample_size": len(sample), "sample_associations": found[: SAMPLES["creative"]]}
        run.writes.append(lambda: stats.update(created=self.io.link(run.bank, edges, run.now)))
        return stats

    def _sample(self, ids: list[str], run: Run) -> list[str]:
        size = min(self.settings.consolidation_creative_sample_size, len(ids))
        # Seeded by the bank and the day: a dry run and the run after it sample the same memories.
        return random.Random(f"{run.bank}|{run.now.date().isoformat()}").sample(ids, size) if size else []

    def _whole_graph(self, run: Run):
        """`full` builds the whole neighbour graph anyway (cluster needs it): exact clusters."""
        g = self.graph(run)
        ids = sorted(g.info)
        cluster_of = {m: comp[0] for comp in C.components(ids, g.strong_pairs(self.cluster_threshold), 1) for m in comp}
        return {m: i["type"] for m, i in g.info.items()}, self._sample(ids, run), g.neighbours, cluster_of

    def _sampled_graph(self, run: Run):
        """`creative` alone walks only the components of the sampled memories and their partners:
        a few hundred kNN searches whatever the corpus size."""
        query = self._candidates(run.bank)
        types: dict[str, str | None] = {}
        for page in self.io.scan(query):
            types.update({mid: s.get("type") for mid, s in page})
        sample = self._sample(sorted(types), run)
        neighbours: dict[str, list[tuple[str, float]]] = {}

        def fetch(todo: list[str]) -> dict[str, list[tuple[str, float]]]:
            got = {mid: [(n, c) for n, c in near if c >= self.band[0]] for mid, near in self.io.neighbours(run.bank, todo, query).items()}
            neighbours.update(got)
            return got

        fetch(sample)
        partners = sorted({b for a in sample for b, _ in neighbours.get(a, ())})
        return types, sample, neighbours, C.local_clusters([*sample, *partners], fetch, self.cluster_threshold)

    # --- cluster ----------------------------------------------------------------------------
    def cluster(self, run: Run) -> dict[str, Any]:
        g = self.graph(run)
        groups = C.components(sorted(g.info), g.strong_pairs(self.cluster_threshold), self.settings.consolidation_min_cluster_size)
        summaries = [self._summarize(run.bank, group, g) for group in groups]
        summaries = [s for s in summaries if s is not None]
        existing = set(self.io.meta_ids(run.bank))
        wanted = {s.meta_id for s in summaries}
        stale = sorted(existing - wanted)
        stats: dict[str, Any] = {
            "clusters_found": len(summaries), "meta_memories_created": 0, "meta_memories_updated": 0,
            "meta_memories_removed": 0, "would_create": len(wanted - existing), "would_remove": len(stale),
            "sample_clusters": [_cluster_sample(s, run.now) for s in summaries[: SAMPLES["cluster"]]],
        }
        docs = self.io.summary_docs(run.bank, summaries, run.now)
        edges = [{"source_id": s.meta_id, "target_id": m, "type": Q.SUMMARIZES, "strength": 1.0, "properties": {"origin": "consolidation"}}
                 for s in summaries for m in s.member_ids]
        overlay = run.overlay
        overlay.docs.update(docs)
        overlay.new_edges += [(e["source_id"], e["target_id"]) for e in edges if e["source_id"] not in existing]  # a kept summary has its edges
        overlay.removed.update(stale)
        overlay.removed_edges += self.io.edges_touching(run.bank, stale)
        new = len(wanted - existing)

        def write() -> None:
            written = self.io.put_docs(list(docs.items()))
            self.io.link(run.bank, edges, run.now)
            stats["meta_memories_removed"] = self.io.delete_memories(run.bank, stale)
            stats["meta_memories_created"] = min(new, written)
            stats["meta_memories_updated"] = max(0, written - new)
            if summaries or stale:
                self.io.refresh()

        run.writes.append(write)
        return stats

    def _summarize(self, bank: str, group: list[str], g: Graph) -> C.Summary | None:
        vectors = self.io.vectors(bank, group)
        contents = self.io.contents(bank, group)
        members = [
            C.Member(
                id=m, content=contents.get(m, {}).get("content", ""), type=g.info[m]["type"], tags=g.info[m]["tags"],
                importance=finite_number(g.info[m]["importance"]), timestamp_days=_epoch_days(g.info[m]["timestamp"]),
                vector=tuple(vectors[m]),
            )
            for m in group if m in vectors and m in contents
        ]
        return C.summarize(members) if len(members) >= self.settings.consolidation_min_cluster_size else None

    # --- forget -----------------------------------------------------------------------------
    def forget(self, run: Run) -> dict[str, Any]:
        cfg = self.forget_cfg
        stats: dict[str, Any] = {"examined": 0, "archived": [], "deleted": [], "preserved": 0, "protected": []}
        if cfg.archive_threshold <= 0 and cfg.delete_threshold <= 0:
            return {**stats, "archived_count": 0, "deleted_count": 0, "protected_count": 0, "disabled": True,
                    "reason": "CONSOLIDATION_ARCHIVE_THRESHOLD and CONSOLIDATION_DELETE_THRESHOLD are 0.0"}
        counts_by = {"archived": 0, "deleted": 0, "protected": 0}
        doomed: list[str] = []
        changed: dict[str, dict] = {}
        delta = run.overlay.relationship_delta()
        for page in run.overlay.pages(self.io.scan(Q.memories_query(run.bank))):
            counts = self.io.relationship_counts(run.bank, [mid for mid, _ in page])
            for mid, source in page:
                stats["examined"] += 1
                f = facts_of(mid, run.overlay.stored_relevance(mid, source), counts.get(mid, 0) + delta.get(mid, 0))
                score = round(relevance_score(f, run.now, self.decay_cfg), 6)
                action, reason = fate(f, score, run.now, cfg)
                entry = {"id": mid, "content_preview": (source.get("content") or "")[:50], "relevance": score, "type": source.get("type") or "Context"}
                if action is None or reason is not None:
                    stats["preserved"] += 1
                    if reason is not None:
                        counts_by["protected"] += 1
                        _keep(stats["protected"], {**entry, "protection_reason": reason, "action": action})
                    continue
                key = "archived" if action == "archive" else "deleted"
                counts_by[key] += 1
                _keep(stats[key], entry)
                if action == "archive":
                    changed[mid] = {"archived": True, "relevance_score": score}
                else:
                    doomed.append(mid)

        def write() -> None:
            items = list(changed.items())
            for start in range(0, len(items), SCAN_PAGE):
                self.io.update_memories(run.bank, dict(items[start : start + SCAN_PAGE]))
            self.io.delete_memories(run.bank, doomed)
            if counts_by["archived"]:
                self.io.refresh()

        run.writes.append(write)
        return {**stats, **{f"{k}_count": v for k, v in counts_by.items()}}


def _keep(items: list, entry: dict) -> None:
    if len(items) < REPORT_LIMIT:
        items.append(entry)


def _epoch_days(value: Any) -> float | None:
    at = stored_datetime(value)
    return at.timestamp() / 86_400 if at else None


def _cluster_sample(s: C.Summary, now: datetime) -> dict[str, Any]:
    """AutoMem's sample_clusters entry, plus the summary's id and keywords."""
    return {
        "cluster_id": s.meta_id, "memory_ids": list(s.member_ids), "size": len(s.member_ids), "dominant_type": s.dominant_type,
        "time_span_days": s.time_span_days, "sample_content": s.content[:100], "keywords": list(s.keywords),
        "central_id": s.central_id, "created_at": iso(now),
    }


def changes(steps: dict[str, dict]) -> dict[str, int]:
    """What the run changed (or, dry, would change), one number per kind of change."""
    decay, creative_, cluster, forget = (steps.get(k, {}) for k in STEPS)
    return {
        "relevance_updates": decay.get("would_update", 0),
        "discovered_edges": creative_.get("discovered", 0),
        "meta_memories": cluster.get("would_create", 0),
        "meta_memories_removed": cluster.get("would_remove", 0),
        "archived": forget.get("archived_count", 0),
        "deleted": forget.get("deleted_count", 0),
    }


def affected_count(result: dict[str, Any]) -> int:
    """AutoMem's consolidation.run affected_count: what was written (0 for a dry run)."""
    if result.get("dry_run"):
        return 0
    decay, creative_, cluster, forget = (result.get("steps", {}).get(k, {}) for k in STEPS)
    return (decay.get("updated", 0) + creative_.get("created", 0) + cluster.get("meta_memories_created", 0)
            + forget.get("archived_count", 0) + forget.get("deleted_count", 0))


def _brief(step: str, stats: dict) -> str:
    keys = {
        "decay": ("processed", "would_update", "updated", "avg_relevance_after"),
        "creative": ("sample_size", "discovered", "created"),
        "cluster": ("clusters_found", "meta_memories_created", "meta_memories_removed"),
        "forget": ("examined", "archived_count", "deleted_count", "protected_count"),
    }[step]
    return ", ".join(f"{k}={stats.get(k)}" for k in keys) + f" in {stats.get('elapsed_ms')} ms"
