"""Memory types, their aliases and the rule-based classifier (spec 003: Memory; AutoMem config.py)."""

from __future__ import annotations

import re

# AutoMem config.py MEMORY_TYPES; MetaPattern is the internal consolidation artifact type.
MEMORY_TYPES = ("Decision", "Pattern", "Preference", "Style", "Habit", "Insight", "Context")

# AutoMem config.py TYPE_ALIASES: lowercase and legacy names -> canonical.
TYPE_ALIASES = {
    **{t.lower(): t for t in MEMORY_TYPES},
    "memory": "Context", "milestone": "Context", "analysis": "Insight", "observation": "Insight",
    "document": "Context", "meeting_notes": "Context", "template": "Pattern", "project": "Context",
    "issue": "Insight", "timeline": "Context", "organization": "Context", "person": "Context",
    "interests": "Preference", "personality": "Preference", "emotional_patterns": "Preference",
    "relationship_dynamics": "Preference", "personal_situation": "Context", "health_habits": "Habit",
    "practical_info": "Context", "communication": "Preference", "legal_analysis": "Insight",
}

# Type given without confidence -> 0.9 (spec 001: "is 0.9 when it supplies only type").
EXPLICIT_TYPE_CONFIDENCE = 0.9


def canonical_type(raw: str) -> tuple[str, str | None]:
    """Return (type, warning). Canonical and alias names normalise; unknown strings are kept with a warning."""
    if raw in MEMORY_TYPES or raw == "MetaPattern":
        return raw, None
    alias = TYPE_ALIASES.get(raw.strip().lower())
    if alias:
        return alias, None
    return raw, f"Unknown memory type '{raw}' kept as given; known types: {', '.join(MEMORY_TYPES)}"


# Rule patterns per type, in AutoMem's order (memory_classifier.py); the first type with a hit wins.
_PATTERNS: dict[str, list[str]] = {
    "Decision": [r"decided to", r"chose (\w+) over", r"going with", r"picked", r"selected", r"will use", r"choosing", r"opted for"],
    "Pattern": [r"usually", r"typically", r"tend to", r"pattern i noticed", r"often", r"frequently", r"regularly", r"consistently"],
    "Preference": [r"prefer", r"like.*better", r"favorite", r"always use", r"rather than", r"instead of", r"favor"],
    "Style": [r"wrote.*in.*style", r"communicated", r"responded to", r"formatted as", r"using.*tone", r"expressed as"],
    "Habit": [r"\balways\b(?!\s+use\b)", r"every time", r"habitually", r"routine", r"daily", r"weekly", r"monthly"],
    "Insight": [r"realized", r"discovered", r"learned that", r"understood", r"figured out", r"insight", r"revelation"],
    "Context": [r"during", r"while working on", r"in the context of", r"when", r"at the time", r"situation was"],
}
_COMPILED = {t: [re.compile(p) for p in ps] for t, ps in _PATTERNS.items()}
# Process-wide counters for GET /enrichment/status `classification` (AutoMem counts the same way).
_COUNTS = {"pattern_classifications": 0, "fallbacks": 0}


def classification_counts() -> dict[str, int]:
    return dict(_COUNTS)


def classify(content: str) -> tuple[str, float]:
    """Rule-based type and confidence: 0.6 for one pattern hit, +0.1 per hit beyond, capped at 0.95.

    AutoMem falls back to an LLM and then to ("Memory", 0.3); with no LLM here the fallback is
    ("Context", 0.3), a canonical type ("Memory" is only an alias of Context).
    """
    text = content.lower()
    for mem_type, patterns in _COMPILED.items():
        hits = sum(1 for p in patterns if p.search(text))
        if hits:
            _COUNTS["pattern_classifications"] += 1
            return mem_type, 0.6 if hits == 1 else min(0.95, 0.6 + hits * 0.1)
    _COUNTS["fallbacks"] += 1
    return "Context", 0.3
