"""scoring.context: profiles from hints, the bonus, anchors and the response echo."""

import pytest

from scoring.context import (
    STYLE_PRIORITY_TAGS,
    ContextProfile,
    build_context_profile,
    context_bonus,
    detect_language,
    matches_profile,
)

pytestmark = pytest.mark.unit

STYLE_TAGS = ("coding-style", "style", "style-guide", "preferences", "preference:coding")


def test_no_hint_means_no_profile():
    assert build_context_profile() is None
    assert build_context_profile(query="where did you go yesterday") is None
    assert build_context_profile(language="elixir") is None


def test_active_path_builds_a_language_style_profile():
    profile = build_context_profile(active_path="src/auth.ts", query="error handling")
    assert profile == ContextProfile(
        context_tags=("typescript", "typescript-style", "typescript:style", *STYLE_TAGS),
        context_types=("Style", "Preference"),
        priority_ids=(),
        language="typescript",
        style=True,
        keywords=("typescript",),
        label="",
        manual_tags=False,
    )
    assert STYLE_PRIORITY_TAGS == STYLE_TAGS
    assert profile.require_injection is True


def test_plain_context_label_becomes_a_context_tag():
    profile = build_context_profile(context=" Programming Task ")
    assert profile == ContextProfile(context_tags=("programming task",), label="programming task")
    assert profile.require_injection is False


def test_style_words_in_label_or_query_turn_on_the_style_focus():
    by_label = build_context_profile(context="style review")
    assert (by_label.context_tags, by_label.context_types, by_label.style) == (
        STYLE_TAGS, ("Style", "Preference"), True,
    )
    by_query = build_context_profile(query="our lint rules.")
    assert (by_query.context_tags, by_query.language, by_query.keywords) == (STYLE_TAGS, None, ())


def test_manual_hints_are_normalised_and_deduplicated():
    profile = build_context_profile(
        context_tags=[" Slack ", "slack", "Project/Alpha", ""],
        context_types=["decision", "PATTERN", "Decision"],
        priority_ids=[" a ", "b", "a", ""],
    )
    assert profile == ContextProfile(
        context_tags=("slack", "project/alpha"),
        context_types=("Decision", "Pattern"),
        priority_ids=("a", "b"),
        manual_tags=True,
    )
    assert profile.require_injection is True


@pytest.mark.parametrize(
    ("hints", "expected"),
    [
        ({"language": "Py"}, "python"),
        ({"language": "golang"}, "go"),
        ({"language": "elixir"}, None),
        ({"context": "golang"}, "go"),
        ({"context": "C#"}, "csharp"),
        ({"active_path": "/tmp/sample.py"}, "python"),
        ({"active_path": "lib/engine.rs"}, "rust"),
        ({"active_path": "include/vec.hpp"}, "cpp"),
        ({"active_path": "main.c"}, "c"),
        ({"active_path": "App.kt"}, "kotlin"),
        ({"active_path": "Makefile"}, None),
        # order: language > context > active_path > query
        ({"language": "python", "active_path": "x.ts"}, "python"),
        ({"context": "ruby", "active_path": "x.ts"}, "ruby"),
        ({"active_path": "a.rs", "query": "python decorators"}, "rust"),
    ],
)
def test_detect_language_sources_and_order(hints, expected):
    assert detect_language(**hints) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("where did you go", None),
        ("let's go shopping", None),
        ("rust on my bike", None),
        ("java island coffee", None),
        ("Taylor Swift concert", None),
        ("Washington D.C. trip", None),
        ("ruby anniversary", None),
        ("how do I write a go module", "go"),
        ("go test flags", "go"),
        ("golang error handling", "go"),
        ("fix the panic in main.go", "go"),
        ("rust crate layout", "rust"),
        ("java class loader", "java"),
        ("node.js streams", "javascript"),
        ("python decorators", "python"),
        ("c++ templates", "cpp"),
        ("what is c#?", "csharp"),
        ("", None),
    ],
)
def test_query_language_detection_is_conservative(query, expected):
    assert detect_language(query=query) == expected


def test_context_tag_hit_is_hierarchy_aware():
    profile = build_context_profile(context_tags=["slack", "project/alpha"])
    hit = dict(memory_id="m", type=None, metadata_terms=())
    assert context_bonus(profile, tags=["slack:channel:general"], **hit) == 0.45
    assert context_bonus(profile, tags=["Slack"], **hit) == 0.45
    assert context_bonus(profile, tags=["project:alpha:db"], **hit) == 0.45
    assert context_bonus(profile, tags=["slackbot"], **hit) == 0.0
    assert context_bonus(profile, tags=["team:slack"], **hit) == 0.0


def test_each_bonus_amount():
    profile = build_context_profile(
        context_types=["decision"], priority_ids=["anchor"], language="python"
    )
    base = dict(memory_id="m", tags=(), type=None, metadata_terms=())
    assert context_bonus(profile, **base) == 0.0
    assert context_bonus(profile, **{**base, "type": "decision "}) == 0.25
    assert context_bonus(profile, **{**base, "metadata_terms": ["python"]}) == 0.2
    assert context_bonus(profile, **{**base, "memory_id": "anchor"}) == 0.9
    assert context_bonus(profile, **{**base, "tags": ["python:style"]}) == 0.45
    assert context_bonus(None, **base) == 0.0


def test_bonuses_add_up():
    profile = build_context_profile(active_path="tool.py", priority_ids=["m"])
    bonus = context_bonus(
        profile,
        memory_id="m",
        tags=["coding-style", "python"],
        type="Style",
        metadata_terms=["python"],
        content="Python naming rules",
    )
    assert bonus == pytest.approx(0.45 + 0.25 + 0.2 + 0.9)


def test_matches_profile_uses_ids_tags_and_types_only():
    profile = build_context_profile(
        context_tags=["slack"], context_types=["Decision"], priority_ids=["anchor"]
    )
    assert matches_profile(profile, memory_id="anchor") is True
    assert matches_profile(profile, memory_id="m", tags=["slack:x"]) is True
    assert matches_profile(profile, memory_id="m", type="decision") is True
    assert matches_profile(profile, memory_id="m", tags=["other"], type="Context") is False
    assert matches_profile(None, memory_id="anchor") is False
    python = build_context_profile(language="python")
    # a metadata keyword alone does not make an anchor (AutoMem)
    assert matches_profile(python, memory_id="m", tags=["misc"]) is False


def test_to_response_echoes_context_priority():
    profile = build_context_profile(active_path="/workspace/tool.py")
    assert profile.to_response(injected=True) == {
        "language": "python",
        "context": "",
        "priority_tags": [
            "coding-style", "preference:coding", "preferences", "python", "python-style",
            "python:style", "style", "style-guide",
        ],
        "priority_types": ["Preference", "Style"],
        "injected": True,
    }
    many = build_context_profile(context_tags=[f"t{i:02d}" for i in range(12)])
    assert many.to_response()["priority_tags"] == [f"t{i:02d}" for i in range(10)]
    assert many.to_response()["injected"] is False
