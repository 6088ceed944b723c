"""Optional reranking stage: a cross-encoder reads the query with each of the top N candidates.

Off unless `RECALL_RERANK_MODEL` names a sentence-transformers CrossEncoder (a model name it can
load, or a folder). The top `RECALL_RERANK_TOP_N` of each query's scored candidates (before
placement: priority ids, anchors and scope-fallback fills keep their places) each get the model's relevance in
[0, 1] as the `rerank` component and `RECALL_RERANK_WEIGHT` x that added to their final score,
and are re-sorted; the rest follow unchanged (the bonus is never negative, so they stay below).
The model runs on the CPU in the request's thread; it needs the models extra (torch).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from scoring.rerank import ScoredCandidate, sort_scored

log = logging.getLogger("engram.rerank")
RERANK = "rerank"


class RerankerUnavailable(RuntimeError):
    """RECALL_RERANK_MODEL is set but cannot be loaded (no sentence-transformers, no such model)."""


def blend(ranked: Sequence[ScoredCandidate], scores: Sequence[float], weight: float) -> list[ScoredCandidate]:
    """The first len(scores) candidates with their reranker score added (weight x score, shown as
    the `rerank` component), re-sorted; the others after them, as they were. Pure."""
    head = [
        replace(s, final_score=s.final_score + weight * float(score), components={**s.components, RERANK: float(score)})
        for s, score in zip(ranked, scores)
    ]
    return sort_scored(head) + list(ranked[len(head):])


class CrossEncoderReranker:
    def __init__(self, model: str, *, top_n: int, weight: float, batch_size: int = 32):
        try:
            from sentence_transformers import CrossEncoder
        except ImportError as exc:
            raise RerankerUnavailable(
                "RECALL_RERANK_MODEL needs sentence-transformers (the models extra: pip install '.[models]')"
            ) from exc
        try:
            self.model = CrossEncoder(model, device="cpu")
        except Exception as exc:  # noqa: BLE001 - any loading failure is a configuration error at start-up
            raise RerankerUnavailable(f"RECALL_RERANK_MODEL={model!r} could not be loaded: {exc}") from exc
        self.name, self.top_n, self.weight, self.batch_size = model, top_n, weight, batch_size

    def scores(self, query: str, texts: Sequence[str]) -> list[float]:
        """Relevance of each text to the query in [0, 1] (the model's sigmoid for one label)."""
        if not texts:
            return []
        out = self.model.predict([(query, t) for t in texts], batch_size=self.batch_size, show_progress_bar=False)
        return [float(v) for v in out]

    def rerank(self, query: str, ranked: Sequence[ScoredCandidate], texts: Sequence[str]) -> list[ScoredCandidate]:
        """`texts`: what the model reads for each of the first candidates (their content)."""
        n = min(self.top_n, len(ranked), len(texts))
        return blend(ranked, self.scores(query, texts[:n]), self.weight)


def load_reranker(model: str | None, *, top_n: int, weight: float) -> CrossEncoderReranker | None:
    if not model:
        return None
    reranker = CrossEncoderReranker(model, top_n=top_n, weight=weight)
    log.info("recall reranker: %s (top %d, weight %.2f)", model, top_n, weight)
    return reranker
