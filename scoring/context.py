"""Context hints: the context profile and its unweighted bonus.

A profile is built from `context_tags`, `context_types`, `priority_ids`, the `context` label, a
language hint (`language`, the label, `active_path`'s extension or the query) and style words,
as AutoMem's `_build_context_profile` (automem/api/recall.py). The bonus amounts are spec 001's
("0.45 for a context tag hit, 0.25 for a type match, 0.2 for a keyword match in the memory's
metadata, and 0.9 when the memory ID is in priority_ids").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from scoring.metadata_terms import as_term_set

# spec 001 context bonus amounts (automem/api/recall.py `_build_context_profile` weights).
CONTEXT_TAG_BONUS = 0.45
CONTEXT_TYPE_BONUS = 0.25
CONTEXT_KEYWORD_BONUS = 0.2
PRIORITY_ID_BONUS = 0.9

# automem/api/recall.py DEFAULT_STYLE_PRIORITY_TAGS: tags boosted whenever a style focus applies.
STYLE_PRIORITY_TAGS: tuple[str, ...] = (
    "coding-style",
    "style",
    "style-guide",
    "preferences",
    "preference:coding",
)
# automem/api/recall.py: a style focus also prioritises these memory types.
STYLE_TYPES: tuple[str, ...] = ("Style", "Preference")
# automem/api/recall.py CONTEXT_STYLE_KEYWORDS: words in the query or label that mean "style".
STYLE_WORDS: frozenset[str] = frozenset(
    {
        "style",
        "styles",
        "guideline",
        "guidelines",
        "pep8",
        "formatting",
        "lint",
        "preference",
        "preferences",
    }
)

# automem/api/recall.py LANGUAGE_ALIASES, extended with kotlin, ruby, php and c (the languages
# the brief's extension map names). Used for the explicit `language` and the `context` label,
# where the caller has already said "this is a language".
LANGUAGE_ALIASES: dict[str, frozenset[str]] = {
    "python": frozenset({"python", "py"}),
    "typescript": frozenset({"typescript", "ts", "tsx"}),
    "javascript": frozenset({"javascript", "js", "jsx"}),
    "go": frozenset({"go", "golang"}),
    "rust": frozenset({"rust", "rs"}),
    "java": frozenset({"java"}),
    "csharp": frozenset({"csharp", "c#", "cs"}),
    "cpp": frozenset({"c++", "cpp", "cc", "cxx"}),
    "c": frozenset({"c"}),
    "swift": frozenset({"swift"}),
    "kotlin": frozenset({"kotlin", "kt"}),
    "ruby": frozenset({"ruby", "rb"}),
    "php": frozenset({"php"}),
}
# automem/api/recall.py EXTENSION_LANGUAGE_MAP, extended as above.
EXTENSION_LANGUAGES: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".rb": "ruby",
    ".php": "php",
    ".cs": "csharp",
    ".cpp": "cpp",
    ".cc": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".c": "c",
    ".h": "c",
    ".swift": "swift",
    ".kt": "kotlin",
    ".kts": "kotlin",
}

# Query words are free text, so AutoMem's alias table gives false positives there ("where did
# you go" -> Go, "rust on the bike" -> Rust). Only names that mean nothing but the language
# count on their own ...
QUERY_LANGUAGE_NAMES: dict[str, str] = {
    "python": "python",
    "typescript": "typescript",
    "javascript": "javascript",
    "golang": "go",
    "csharp": "csharp",
    "c#": "csharp",
    "c++": "cpp",
    "cpp": "cpp",
    "kotlin": "kotlin",
    "php": "php",
}
# ... ambiguous names count only when the next word is about code ("go module", "rust crate",
# "java class", "ruby gem", "swift code").
QUERY_AMBIGUOUS_LANGUAGE_NAMES: dict[str, str] = {
    "go": "go",
    "rust": "rust",
    "java": "java",
    "swift": "swift",
    "ruby": "ruby",
    "js": "javascript",
    "ts": "typescript",
    "py": "python",
}
CODE_CONTEXT_WORDS: frozenset[str] = frozenset(
    {
        "api", "app", "apps", "binary", "binaries", "build", "class", "classes", "code",
        "codebase", "compiler", "crate", "crates", "dev", "developer", "developers", "error",
        "errors", "file", "files", "function", "functions", "gem", "gems", "generics",
        "idiom", "idioms", "interface", "interfaces", "lang", "language", "lib", "libraries",
        "library", "lint", "linter", "method", "methods", "module", "modules", "package",
        "packages", "program", "programming", "programs", "project", "projects", "runtime",
        "script", "scripts", "sdk", "server", "service", "services", "snippet", "snippets",
        "source", "struct", "structs", "style", "syntax", "test", "tests", "testing",
        "toolchain", "type", "types", "version",
    }
)
# A file name with a known extension in the query ("main.go", "app.tsx", "node.js") is an
# unambiguous signal too; one-letter extensions (.c, .h) are left out ("Washington D.C").
_QUERY_FILE_NAME = re.compile(r"^[a-z0-9_\-]+(\.[a-z0-9+]{2,5})$")
# automem/api/recall.py `_tokenize_lower`: keeps + # . so "c++", "c#" and "main.go" survive.
_HINT_TOKEN = re.compile(r"[a-z0-9_\-+#.]+")
# Tag hierarchy separators, as service/memory/tags.py and spec 000 "Tag Filtering".
_TAG_SEPARATORS = re.compile(r"[:/]")


def _dedupe(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(v for v in values if v))


def _hint_tokens(text: str | None) -> list[str]:
    if not text:
        return []
    tokens = (token.strip(".,") for token in _HINT_TOKEN.findall(text.lower()))
    return [token for token in tokens if token]


def _hierarchy_key(tag: str) -> str:
    return ":".join(seg for seg in _TAG_SEPARATORS.split(tag.strip().lower()) if seg)


def _tag_hits(tags: Iterable[str], context_tags: Iterable[str]) -> bool:
    """A context tag hits a tag it equals or is a hierarchy prefix of (`slack` -> `slack:x`)."""
    keys = {_hierarchy_key(str(tag)) for tag in tags if str(tag).strip()}
    if not keys:
        return False
    for context_tag in context_tags:
        prefix = _hierarchy_key(context_tag)
        if not prefix:
            continue
        if prefix in keys or any(key.startswith(prefix + ":") for key in keys):
            return True
    return False


def _alias_language(value: str | None) -> str | None:
    candidate = (value or "").strip().lower()
    if not candidate:
        return None
    for language, aliases in LANGUAGE_ALIASES.items():
        if candidate == language or candidate in aliases:
            return language
    return None


def _path_language(active_path: str | None) -> str | None:
    if not active_path:
        return None
    return EXTENSION_LANGUAGES.get(PurePath(active_path.strip()).suffix.lower())


def query_language(query: str | None) -> str | None:
    """The language a free-text query names unambiguously, or None."""
    tokens = _hint_tokens(query)
    for index, token in enumerate(tokens):
        if token in QUERY_LANGUAGE_NAMES:
            return QUERY_LANGUAGE_NAMES[token]
        if token in QUERY_AMBIGUOUS_LANGUAGE_NAMES:
            following = tokens[index + 1] if index + 1 < len(tokens) else ""
            if following in CODE_CONTEXT_WORDS:
                return QUERY_AMBIGUOUS_LANGUAGE_NAMES[token]
        match = _QUERY_FILE_NAME.match(token)
        if match and match.group(1) in EXTENSION_LANGUAGES:
            return EXTENSION_LANGUAGES[match.group(1)]
    return None


def detect_language(
    *,
    language: str | None = None,
    context: str | None = None,
    active_path: str | None = None,
    query: str | None = None,
) -> str | None:
    """The language hint, in AutoMem's order: `language`, the `context` label, the
    `active_path` extension, then the query (conservatively, see `query_language`).
    An explicit language that is no known alias is ignored, as in AutoMem."""
    return (
        _alias_language(language)
        or _alias_language(context)
        or _path_language(active_path)
        or query_language(query)
    )


@dataclass(frozen=True)
class ContextProfile:
    """What a request's context hints ask to boost.

    `context_tags` holds the caller's context tags plus the derived ones (the language's
    `python`, `python-style`, `python:style`, the style tags, or the plain label); `keywords`
    are matched against metadata terms (AutoMem: the language name).
    """

    context_tags: tuple[str, ...] = ()
    context_types: tuple[str, ...] = ()
    priority_ids: tuple[str, ...] = ()
    language: str | None = None
    style: bool = False
    keywords: tuple[str, ...] = ()
    label: str = ""
    manual_tags: bool = False

    @property
    def require_injection(self) -> bool:
        """AutoMem fetches anchor memories when a style focus or explicit context tags apply
        and no candidate matches the profile (automem/api/recall.py `require_injection`)."""
        return self.style or self.manual_tags

    def to_response(self, *, injected: bool = False) -> dict[str, Any]:
        """The response's `context_priority` object (automem/api/recall.py)."""
        return {
            "language": self.language,
            "context": self.label,
            "priority_tags": sorted(self.context_tags)[:10],  # AutoMem echoes at most 10
            "priority_types": sorted(self.context_types),
            "injected": injected,
        }


def build_context_profile(
    *,
    context_tags: Iterable[str] = (),
    context_types: Iterable[str] = (),
    priority_ids: Iterable[str] = (),
    context: str | None = None,
    language: str | None = None,
    active_path: str | None = None,
    query: str | None = None,
) -> ContextProfile | None:
    """Build the profile for a request, or None when no hint applies."""
    manual_tags = _dedupe(str(tag).strip().lower() for tag in context_tags)
    tags = list(manual_tags)
    types = list(_dedupe(str(kind).strip().title() for kind in context_types))
    ids = _dedupe(str(value).strip() for value in priority_ids)
    label = (context or "").strip().lower()
    detected = detect_language(
        language=language, context=label, active_path=active_path, query=query
    )
    keywords: list[str] = []
    style = False
    if detected:
        tags.extend((detected, f"{detected}-style", f"{detected}:style"))
        keywords.append(detected)
        style = True
    if set(_hint_tokens(label)) & STYLE_WORDS or set(_hint_tokens(query)) & STYLE_WORDS:
        style = True
    if style:
        tags.extend(STYLE_PRIORITY_TAGS)
        types.extend(STYLE_TYPES)
    elif label:
        tags.append(label)
    tags_t, types_t = _dedupe(tags), _dedupe(types)
    if not (tags_t or types_t or ids or keywords):
        return None
    return ContextProfile(
        context_tags=tags_t,
        context_types=types_t,
        priority_ids=ids,
        language=detected,
        style=style,
        keywords=_dedupe(keywords),
        label=label,
        manual_tags=bool(manual_tags),
    )


def _type_hit(profile: ContextProfile, memory_type: str | None) -> bool:
    return bool(
        profile.context_types
        and isinstance(memory_type, str)
        and memory_type.strip().title() in profile.context_types
    )


def context_bonus(
    profile: ContextProfile | None,
    *,
    memory_id: str,
    tags: Iterable[str] = (),
    type: str | None = None,  # noqa: A002 - the memory's `type` field
    metadata_terms: Iterable[str] = (),
    content: str = "",
) -> float:
    """The unweighted context bonus (spec 001): +0.45 tag hit, +0.25 type match, +0.2 when a
    profile keyword is a metadata term, +0.9 when the id is a priority id; 0 without a profile.

    `content` is accepted for a uniform call but, as in AutoMem, not scored.
    """
    del content  # AutoMem's `_compute_context_bonus` does not look at the content
    if profile is None:
        return 0.0
    bonus = 0.0
    if profile.context_tags and _tag_hits(tags, profile.context_tags):
        bonus += CONTEXT_TAG_BONUS
    if _type_hit(profile, type):
        bonus += CONTEXT_TYPE_BONUS
    if profile.keywords:
        terms = as_term_set(metadata_terms)
        if any(keyword in terms for keyword in profile.keywords):
            bonus += CONTEXT_KEYWORD_BONUS
    if profile.priority_ids and memory_id in profile.priority_ids:
        bonus += PRIORITY_ID_BONUS
    return bonus


def matches_profile(
    profile: ContextProfile | None,
    *,
    memory_id: str,
    tags: Iterable[str] = (),
    type: str | None = None,  # noqa: A002 - the memory's `type` field
) -> bool:
    """Whether a memory satisfies the profile (a priority id, a context tag or a context type),
    as AutoMem's `_result_matches_context_priority`; used to decide whether anchor memories must
    be fetched."""
    if profile is None:
        return False
    if profile.priority_ids and memory_id in profile.priority_ids:
        return True
    if profile.context_tags and _tag_hits(tags, profile.context_tags):
        return True
    return _type_hit(profile, type)
