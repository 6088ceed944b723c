"""scoring.rerank: the weighted sum, both profiles, the relevance gate and the order."""

import dataclasses
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scoring.context import build_context_profile
from scoring.keywords import extract_keywords
from scoring.rerank import GATED_COMPONENTS, Candidate, ScoredCandidate, ScoringRequest, rank, rank_key, score_candidate, sort_scored
from scoring.weights import Weights

pytestmark = pytest.mark.unit

NOW = datetime(2025, 3, 10, 10, 30, tzinfo=timezone.utc)
QUERY = "PostgreSQL database decisions"
COMPONENT_KEYS = {
    "vector", "keyword", "metadata", "relation", "tag", "importance", "confidence",
    "recency", "exact", "relevance", "context", "evidence", "relevance_gated",
}


def request(query=QUERY, **kwargs):
    return ScoringRequest(query=query, keywords=tuple(extract_keywords(query)), now=NOW, **kwargs)


def example_candidate(**overrides):
    fields = dict(
        id="a1b2c3d4-e5f6-7890-abcd-ef1234567890",
        content="Chose PostgreSQL over MongoDB for the primary database.",
        tags=("project-alpha", "database"),
        importance=0.9,
        confidence=0.9,
        type="Decision",
        timestamp=NOW - timedelta(days=54),
        vector_cosine=0.82,
        in_vector_arm=True,
    )
    fields.update(overrides)
    return Candidate(**fields)


def test_spec_worked_example_scores_0_792():
    """spec 000 "Standard Response Structure": the sample result, word for word."""
    req = request(profile="automem")
    assert req.keywords == ("postgresql", "database", "decisions")
    scored = score_candidate(example_candidate(), req)
    assert scored.final_score == pytest.approx(0.792, abs=1e-3)
    assert scored.final_score == pytest.approx(
        0.35 * 0.82 + 0.35 * 0.6667 + 0.2 * 0.3333 + 0.1 * 0.9 + 0.05 * 0.9 + 0.1 * 0.7, abs=1e-3
    )
    assert scored.components == {
        "vector": pytest.approx(0.82),
        "keyword": pytest.approx(0.6667, abs=1e-4),
        "metadata": 0.0,
        "relation": 0.0,
        "tag": pytest.approx(0.3333, abs=1e-4),
        "importance": pytest.approx(0.9),
        "confidence": pytest.approx(0.9),
        "recency": pytest.approx(0.7),
        "exact": 0.0,
        "relevance": 0.0,
        "context": 0.0,
        "evidence": pytest.approx(0.82),
        "relevance_gated": False,
    }


def test_worked_example_under_the_engram_profile():
    scored = score_candidate(example_candidate(), request())
    assert scored.final_score == pytest.approx(0.792, abs=1e-9)
    idf = {"postgresql": 3.0, "database": 1.0, "decisions": 2.0}
    scored = score_candidate(example_candidate(), request(idf=idf))
    assert scored.components["keyword"] == pytest.approx(4 / 6)
    assert scored.final_score == pytest.approx(0.792 + 0.35 * (4 / 6 - 2 / 3), abs=1e-9)


def test_automem_vector_counts_only_for_vector_arm_candidates():
    keyword_hit = example_candidate(in_vector_arm=False, in_keyword_arm=True, match_type="keyword")
    scored = score_candidate(keyword_hit, request(profile="automem"))
    assert scored.components["vector"] == 0.0
    assert scored.components["keyword"] == pytest.approx(5 / 12)  # keyword-arm points
    assert scored.final_score == pytest.approx(
        0.35 * 5 / 12 + 0.2 / 3 + 0.1 * 0.9 + 0.05 * 0.9 + 0.1 * 0.7
    )
    neither = example_candidate(in_vector_arm=False, match_type="relation", relation=0.8)
    scored = score_candidate(neither, request(profile="automem"))
    assert (scored.components["vector"], scored.components["keyword"]) == (0.0, 0.0)
    assert scored.components["relation"] == 0.8
    assert scored.final_score == pytest.approx(
        0.25 * 0.8 + 0.2 / 3 + 0.1 * 0.9 + 0.05 * 0.9 + 0.1 * 0.7
    )


def test_engram_uses_every_known_cosine_clamped_at_zero():
    not_in_arm = example_candidate(in_vector_arm=False, in_keyword_arm=True)
    assert score_candidate(not_in_arm, request()).components["vector"] == pytest.approx(0.82)
    negative = example_candidate(vector_cosine=-0.3)
    assert score_candidate(negative, request()).components["vector"] == 0.0
    assert score_candidate(negative, request(profile="automem")).components["vector"] == -0.3
    unknown = example_candidate(vector_cosine=None)
    assert score_candidate(unknown, request()).components["vector"] == 0.0


def test_engram_bm25_keyword_mode():
    req = request(keyword_mode="bm25", max_bm25=8.0)
    assert score_candidate(example_candidate(bm25=6.0), req).components["keyword"] == 0.75
    assert score_candidate(example_candidate(bm25=None), req).components["keyword"] == 0.0


def test_metadata_component_only_for_metadata_arm():
    metadata = {"source": "claude-code"}
    query = "claude code memories"
    outside = example_candidate(metadata=metadata)
    assert score_candidate(outside, request(query)).components["metadata"] == 0.0
    inside = example_candidate(metadata=metadata, in_metadata_arm=True)
    scored = score_candidate(inside, request(query, profile="automem"))
    assert scored.components["metadata"] == pytest.approx(0.95)
    assert scored.components["evidence"] == pytest.approx(0.95)


def test_exact_and_tag_components_from_metadata():
    candidate = example_candidate(
        tags=(),
        metadata={"source": "locomo", "entities": {"people": ["Result Json"]}},
    )
    scored = score_candidate(candidate, request("result json locomo", profile="automem"))
    # the generated entities do not count for the tag component (AutoMem)
    assert scored.components["tag"] == pytest.approx(1 / 3)
    scored = score_candidate(candidate, request("Result Json", profile="automem"))
    assert scored.components["exact"] == 1.0


def test_stored_metadata_terms_are_used_when_metadata_is_absent():
    candidate = example_candidate(tags=(), metadata_terms=("locomo",))
    scored = score_candidate(candidate, request("locomo", profile="automem"))
    assert (scored.components["tag"], scored.components["exact"]) == (1.0, 1.0)


def test_trending_keyword_is_importance():
    trending = example_candidate(
        vector_cosine=None, in_vector_arm=False, match_type="trending", importance=0.7
    )
    scored = score_candidate(trending, request(""))
    assert scored.components["keyword"] == 0.7
    assert scored.final_score == pytest.approx(0.35 * 0.7 + 0.1 * 0.7 + 0.05 * 0.9 + 0.1 * 0.7)


def test_missing_numbers_score_zero():
    bare = Candidate(id="x", content="")
    scored = score_candidate(bare, request())
    assert set(scored.components) == COMPONENT_KEYS
    assert scored.final_score == 0.0
    assert all(scored.components[k] == 0.0 for k in COMPONENT_KEYS - {"relevance_gated"})


def test_context_bonus_is_added_unweighted():
    profile = build_context_profile(context_tags=["project-alpha"], priority_ids=["p"])
    scored = score_candidate(example_candidate(id="p"), request(profile="automem", context=profile))
    assert scored.components["context"] == pytest.approx(1.35)
    assert scored.final_score == pytest.approx(0.792 + 1.35)


def test_custom_weights():
    weights = dataclasses.replace(Weights(), vector=1.0, relevance=0.5)
    scored = score_candidate(
        example_candidate(relevance_score=0.4), request(profile="automem", weights=weights)
    )
    assert scored.final_score == pytest.approx(0.792 - 0.35 * 0.82 + 0.82 + 0.5 * 0.4)


# ----- relevance gate (automem/config.py RECALL_RELEVANCE_GATE; AutoMem's tests) -----------

GATE_QUERY = "quarterly metrics dashboard"


def gate_candidate(**overrides):
    fields = dict(
        id="g",
        content="Different words about other things",
        tags=("quarterly",),
        importance=0.8,
        confidence=0.4,
        timestamp=NOW - timedelta(days=90),
        vector_cosine=0.1,
        in_vector_arm=True,
    )
    fields.update(overrides)
    return Candidate(**fields)


def test_gate_ramps_query_independent_components_linearly():
    scored = score_candidate(gate_candidate(), request(GATE_QUERY, relevance_gate=0.2))
    c = scored.components
    assert c["relevance_gated"] is True
    assert c["evidence"] == pytest.approx(0.1)
    assert (c["importance"], c["confidence"], c["recency"], c["tag"]) == (
        pytest.approx(0.4), pytest.approx(0.2), pytest.approx(0.25), pytest.approx(1 / 6),
    )
    assert scored.final_score == pytest.approx(
        0.35 * 0.1 + 0.1 * 0.4 + 0.05 * 0.2 + 0.1 * 0.25 + 0.2 / 6
    )


def test_gate_off_by_default_and_at_threshold():
    off = score_candidate(gate_candidate(), request(GATE_QUERY))
    assert off.components["relevance_gated"] is False
    assert off.components["importance"] == 0.8
    at = score_candidate(gate_candidate(vector_cosine=0.2), request(GATE_QUERY, relevance_gate=0.2))
    assert at.components["relevance_gated"] is False
    assert at.components["recency"] == pytest.approx(0.5)


def test_gate_zero_evidence_zeroes_query_independent_components_but_not_context():
    profile = build_context_profile(context_tags=["quarterly"])
    scored = score_candidate(
        gate_candidate(vector_cosine=0.0, relevance_score=0.8),
        request(
            GATE_QUERY,
            relevance_gate=0.2,
            context=profile,
            weights=dataclasses.replace(Weights(), relevance=0.3),
        ),
    )
    c = scored.components
    assert c["relevance_gated"] is True
    assert (c["importance"], c["confidence"], c["recency"], c["tag"], c["relevance"]) == (
        0.0, 0.0, 0.0, 0.0, 0.0,
    )
    assert c["context"] == 0.45
    assert scored.final_score == pytest.approx(0.45)


def test_gate_scales_relevance_before_weighting():
    scored = score_candidate(
        gate_candidate(tags=(), importance=0.0, confidence=None, relevance_score=0.8),
        request(
            GATE_QUERY, relevance_gate=0.2, weights=dataclasses.replace(Weights(), relevance=0.3)
        ),
    )
    assert scored.components["relevance"] == pytest.approx(0.4)
    assert scored.final_score == pytest.approx(0.35 * 0.1 + 0.1 * 0.25 + 0.3 * 0.4)


def test_gate_inactive_without_query_keywords():
    scored = score_candidate(gate_candidate(vector_cosine=0.0), request("", relevance_gate=0.2))
    assert scored.components["relevance_gated"] is False
    assert scored.components["importance"] == 0.8


def test_gate_demotes_off_topic_high_importance():
    off_topic = gate_candidate(
        id="off", vector_cosine=0.0, tags=(), importance=1.0, confidence=1.0, timestamp=NOW
    )
    on_topic = gate_candidate(
        id="on", vector_cosine=0.5, tags=(), importance=0.0, confidence=None,
        timestamp=NOW - timedelta(days=400),
    )
    ungated = rank([off_topic, on_topic], request(GATE_QUERY, profile="automem"))
    assert [s.candidate.id for s in ungated] == ["off", "on"]
    assert [s.final_score for s in ungated] == [pytest.approx(0.25), pytest.approx(0.175)]
    gated = rank([off_topic, on_topic], request(GATE_QUERY, profile="automem", relevance_gate=0.2))
    assert [s.candidate.id for s in gated] == ["on", "off"]
    assert [s.final_score for s in gated] == [pytest.approx(0.175), pytest.approx(0.0)]


@pytest.mark.parametrize(("gate", "expected"), [(1.5, 1.0), (-0.5, 0.0), (0.2, 0.2)])
def test_gate_is_clamped_to_the_unit_interval(gate, expected):
    assert request(relevance_gate=gate).relevance_gate == expected


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"profile": "bm25"}, "profile must be one of automem, engram; got 'bm25'"),
        ({"keyword_mode": "rrf"}, "keyword_mode must be one of idf, bm25; got 'rrf'"),
    ],
)
def test_invalid_modes_name_the_valid_values(kwargs, message):
    with pytest.raises(ValueError) as excinfo:
        request(**kwargs)
    assert str(excinfo.value) == message


# ----- ordering and purity ------------------------------------------------------------------


def test_rank_orders_by_score_then_newest_then_id():
    base = dict(content="", importance=0.5)
    cands = [
        Candidate(id="old", timestamp=NOW - timedelta(days=400), **base),
        Candidate(id="b-new", timestamp=NOW - timedelta(days=400, seconds=-1), **base),
        Candidate(id="a-new", timestamp=NOW - timedelta(days=400, seconds=-1), **base),
        Candidate(id="none", timestamp=None, **base),
        Candidate(id="top", timestamp=None, content="", importance=0.9),
    ]
    ranked = rank(cands, request(""))
    assert [s.candidate.id for s in ranked] == ["top", "a-new", "b-new", "old", "none"]
    assert [s.final_score for s in ranked] == [
        pytest.approx(0.09), pytest.approx(0.05), pytest.approx(0.05),
        pytest.approx(0.05), pytest.approx(0.05),
    ]


_TIMESTAMPS = st.one_of(
    st.none(),
    st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2026, 1, 1), timezones=st.just(timezone.utc)),
    st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2026, 1, 1)),  # naive: read as UTC
)


@given(st.lists(st.tuples(st.sampled_from([0.0, -0.0, 0.25, 0.5, 0.5000001, 1.0]), _TIMESTAMPS, st.sampled_from("abcde")), max_size=40))
def test_sort_scored_is_the_order_of_rank_key(rows):
    # Few distinct scores, timestamps and ids: ties at every level of the key.
    scored = [ScoredCandidate(Candidate(id=i, content="", timestamp=ts), score, {}) for score, ts, i in rows]
    assert [id(s) for s in sort_scored(scored)] == [id(s) for s in sorted(scored, key=rank_key)]


def test_rank_of_the_worked_example_against_weaker_candidates():
    weaker = example_candidate(id="weak", vector_cosine=0.5, importance=0.2)
    older = example_candidate(id="older", timestamp=NOW - timedelta(days=150))
    ranked = rank([weaker, older, example_candidate()], request(profile="automem"))
    assert [s.candidate.id for s in ranked] == [
        "a1b2c3d4-e5f6-7890-abcd-ef1234567890", "older", "weak",
    ]
    assert [s.final_score for s in ranked] == [
        pytest.approx(0.792),
        pytest.approx(0.792 - 0.1 * (96 / 180)),  # 150 days old: recency 0.1(6)
        pytest.approx(0.792 - 0.35 * 0.32 - 0.07),  # cosine 0.5, importance 0.2
    ]


def test_inputs_are_not_mutated():
    metadata = {"source": "locomo", "entities": {"people": ["A"]}}
    candidate = example_candidate(metadata=metadata, in_metadata_arm=True)
    before = dataclasses.asdict(candidate)
    req = request("locomo", relevance_gate=0.5)
    scored = score_candidate(candidate, req)
    assert dataclasses.asdict(candidate) == before
    assert metadata == {"source": "locomo", "entities": {"people": ["A"]}}
    assert isinstance(scored, ScoredCandidate) and scored.candidate is candidate


def test_the_date_component_only_when_the_query_names_a_date():
    dated = example_candidate(date_terms=("d:2025-01-15", "m:2025-01", "y:2025"))
    plain = score_candidate(dated, request())
    assert "date" not in plain.components
    scored = score_candidate(dated, request(query_dates=(("m:2025-01",),), date_weight=0.1))
    assert scored.components["date"] == 1.0
    assert scored.final_score == pytest.approx(plain.final_score + 0.1)
    missed = score_candidate(example_candidate(), request(query_dates=(("m:2025-01",),), date_weight=0.1))
    assert missed.components["date"] == 0.0 and missed.final_score == pytest.approx(plain.final_score)
    # AutoMem's profile has no date component.
    assert "date" not in score_candidate(dated, request(profile="automem", query_dates=(("m:2025-01",),), date_weight=0.1)).components


def test_thread_context_counts_in_the_engram_keyword_share_only():
    answer = example_candidate(content="Went with the document store after all.", thread_context="Which database did we choose, PostgreSQL?")
    engram = score_candidate(answer, request(thread_context_weight=0.5))
    assert engram.components["keyword"] == pytest.approx(0.5 * (2 / 3))
    assert score_candidate(answer, request()).components["keyword"] == 0.0
    assert score_candidate(answer, request(profile="automem", thread_context_weight=0.5)).components["keyword"] == 0.0


def test_the_gate_scales_exactly_the_gated_components():
    # Every component non-zero, so a scaled one shows; half the gate's evidence halves each.
    cand = gate_candidate(relevance_score=0.8, relation=0.5)
    weights = dataclasses.replace(Weights(), relevance=0.3)
    on = score_candidate(cand, request(GATE_QUERY, relevance_gate=0.2, weights=weights)).components
    off = score_candidate(cand, request(GATE_QUERY, weights=weights)).components
    changed = {k for k in off if k != "relevance_gated" and on[k] != off[k]}
    assert changed == set(GATED_COMPONENTS)
    assert all(on[k] == pytest.approx(off[k] * on["evidence"] / 0.2) for k in GATED_COMPONENTS)
