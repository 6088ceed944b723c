"""The per-recall fast paths of scoring against their plain definitions: metadata terms from one
walk of the metadata, and the IDF keyword share from a plan built once per query."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.idf_share import keyword_plan, planned_share_in_thread
from scoring.keywords import keyword_stems, stemmed_words
from scoring.metadata_terms import METADATA_FIELDS, metadata_term_sets, metadata_terms
from scoring.rerank import ScoringRequest

pytestmark = pytest.mark.unit


def _visit(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _visit(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _visit(item)


def reference_terms(metadata: Mapping[str, Any], include_entities: bool) -> list[str]:
    """AutoMem's `_collect_metadata_terms`, written plainly."""
    terms: dict[str, None] = {}
    for name in METADATA_FIELDS:
        if name not in metadata or (name == "entities" and not include_entities):
            continue
        for raw in _visit(metadata[name]):
            value = raw.strip()
            if value and len(value) <= 256:
                terms[value.lower()] = None
                for token in re.findall(r"[a-z0-9_\-]+", value.lower()):
                    terms[token] = None
    return list(terms)


def reference_share(keywords: list[str], words: frozenset[str], idf: dict[str, float]) -> float:
    known = [max(0.0, v) for v in idf.values()]
    default = max(known) if known else 1.0
    total = found = 0.0
    for keyword in keywords:
        stems = keyword_stems(keyword)
        if not stems:
            continue
        weight = max(0.0, idf[keyword]) if keyword in idf else default
        total += weight
        if all(s in words for s in stems):
            found += weight
    return found / total if total > 0 else 0.0


TEXT = st.sampled_from(["Emma", " borealis ", "Slack", "ci-runner_2", "", "x" * 300, "Aiko Müller", "db, cache", "emma"])
VALUES = st.recursive(TEXT | st.integers() | st.none(), lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["people", "tools", "a"]), inner, max_size=3), max_leaves=8)
METADATA = st.dictionaries(st.sampled_from([*METADATA_FIELDS, "author", "other"]), VALUES, max_size=6)


@settings(max_examples=300, deadline=None)
@given(METADATA)
def test_metadata_terms_match_the_plain_definition(metadata):
    every, without = metadata_terms(metadata), metadata_terms(metadata, include_entities=False)
    assert every == reference_terms(metadata, include_entities=True)
    assert without == reference_terms(metadata, include_entities=False)
    assert metadata_term_sets(metadata) == (set(every), set(without))


def test_entities_come_last_and_are_left_out_without_them():
    metadata = {"entities": {"people": ["Emma Stone"]}, "project": "Borealis", "source": "slack"}
    every, without = metadata_terms(metadata), metadata_terms(metadata, include_entities=False)
    assert without == ["slack", "borealis"]
    assert every == ["slack", "borealis", "emma stone", "emma", "stone"]
    assert metadata_terms(None) == [] and metadata_term_sets(None) == (frozenset(), frozenset())


WORDS = st.sampled_from(["decisions", "database", "the", "postgresql", "running", "ran", "state-of-the-art", "caching", "and"])


@settings(max_examples=300, deadline=None)
@given(st.lists(WORDS, max_size=5), st.lists(WORDS, max_size=12), st.dictionaries(WORDS, st.floats(-1, 10), max_size=4))
def test_keyword_plan_share_matches_the_plain_definition(keywords, content_words, idf):
    content = " ".join(content_words)
    plan = keyword_plan(keywords, idf)
    assert plan.share(stemmed_words(content)) == reference_share(keywords, stemmed_words(content), idf)


def test_thread_context_counts_at_its_weight():
    plan = keyword_plan(["postgresql", "database"], {"postgresql": 3.0, "database": 1.0})
    assert planned_share_in_thread(plan, "Chose PostgreSQL.", "", 0.5) == 0.75
    # database only in the context: 0.75 + 0.5 x (1.0 - 0.75)
    assert planned_share_in_thread(plan, "Chose PostgreSQL.", "The databases were slow.", 0.5) == 0.875
    assert planned_share_in_thread(plan, "Chose PostgreSQL.", "The databases were slow.", 0.0) == 0.75


def test_the_request_builds_its_plan_once_from_the_topic_keywords():
    from datetime import datetime, timezone

    req = ScoringRequest(query="what database", keywords=("what", "database"), now=datetime.now(timezone.utc), idf={"database": 2.0})
    assert req.keyword_plan is req.keyword_plan
    assert [stems for stems, _ in req.keyword_plan.keywords] == [keyword_stems("database")]
