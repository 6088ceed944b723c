"""service/memory/index_only.py: the ranking aids are fields of the template, and the shapes that show a
stored memory leave them out (recall's detail view, public_memory)."""

from __future__ import annotations

from scoring.rerank import Candidate, ScoredCandidate
from service.api.responses import public_memory
from service.memory.index_only import RANKING_FIELDS
from service.recall.shaping import shape_result
from service.storage.bootstrap import load_template
from service.threads import FIELDS as THREAD_FIELDS

SOURCE = {
    "content": "Went camping", "tags": [], "thread_key": "session:s", "thread_at": 1, "thread_seq": 2, "thread_prev": "q",
    "thread_context": "What did you do?", "date_terms": ["d:2024-03-01"], "embedding": [0.1],
}


def test_every_aid_is_a_template_field_and_the_threads_agree():
    properties = load_template("memories")["template"]["mappings"]["properties"]
    assert set(RANKING_FIELDS) <= set(properties)
    assert set(THREAD_FIELDS) <= set(RANKING_FIELDS)


def test_recall_detail_and_public_memory_leave_the_aids_out():
    scored = ScoredCandidate(candidate=Candidate(id="a", content="Went camping"), final_score=0.5, components={})
    detailed = shape_result(scored, SOURCE, temporal_weight=0.0, arms=["keyword"])["memory"]
    assert detailed["content"] == "Went camping" and not set(RANKING_FIELDS) & set(detailed)
    assert not set(RANKING_FIELDS) & set(shape_result(scored, SOURCE, temporal_weight=0.0)["memory"])
    public = public_memory("a", SOURCE)
    assert public["content"] == "Went camping" and not set(RANKING_FIELDS) & set(public) and "embedding" not in public
