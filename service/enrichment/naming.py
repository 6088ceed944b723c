"""What a capitalised run of words names, by the word lists alone (service/enrichment/gazetteer.py,
cue_words.py): the word-level half of the extractor (service/enrichment/extractor.py), which finds
the spans and reads the words around them. Pure.

`Naming.classify` is the table in extractor.py's docstring, from "known tool" down.
"""

from __future__ import annotations

import re

from service.enrichment.cue_words import ARTICLES, HOLIDAYS, IMPERATIVES, IRREGULAR_PASTS, NATIONALITIES, TITLE_ARTICLES
from service.enrichment.gazetteer import Gazetteer
from service.memory.tags import unaccented

# A span of more words is a phrase, not a name (AutoMem: max_words=6 for spaCy entities).
MAX_WORDS = 6
NAME_ABBREVIATIONS = frozenset({"St", "Mt", "Ft"})  # part of a place's name: "St. Louis", "Mt. Hood"
# A verb that starts a sentence before a name ("Visited Paris", "Called Sarah Jones").
_SENTENCE_VERB = re.compile(r"[A-Z][a-z]+(?:ed|ing)")
_CAMEL = re.compile(r"[a-z][A-Z]")
# A capitalised plural ("Broncos", "Giants"), not a word in -ss or -us ("Glass", "Campus").
_PLURAL = re.compile(r"[A-Z][a-z]*[a-rtv-z]s")


class Naming:
    def __init__(self, gaz: Gazetteer):
        self.gaz = gaz

    def classify(self, words: list[str], initial: bool, prev: str, nouns: bool = False) -> str | None:
        """The category of a capitalised span; `nouns`: it stands where nouns are capitalised (German)."""
        g = self.gaz
        name = " ".join(words)
        lowered = name.lower()
        first, last = unaccented(words[0]), unaccented(words[-1])
        if "-" in first and all(part in g.first_names for part in first.split("-")):
            first = first.split("-")[0]  # "Sarah-Jane", "Anna-Lena": a first name of first names
        n = len(words)
        if lowered in g.tools:
            return None if initial and name in g.tools_capitalized else "tools"
        if lowered in g.organizations:
            return "organizations"
        if lowered in g.major_places:
            return "places"
        if n >= 2 and (last in g.organization_suffixes or first in g.organization_prefixes or self.place_team(words)):
            return "organizations"
        if n >= 2 and (last in g.place_suffixes or first in g.place_prefixes):
            return "places"
        if prev in g.project_cues or (n >= 2 and (first in g.project_cues or last in g.project_cues)):
            return "projects"
        if lowered in g.minor_places and (prev in g.locative_cues or first not in g.first_names):
            return "places"
        if prev in g.locative_cues and unaccented(lowered) in g.unaccented_places:
            return "places"  # English text drops accents; unaccented, a town's name may be a word or a name
        if n == 1 and (lowered in NATIONALITIES or lowered in HOLIDAYS):
            return None if initial else "concepts"  # "French", "Christmas" are census surnames, "German" a first name
        if first in g.first_names and n <= 4 and all(not w.isupper() or len(w) == 1 for w in words) and "the" not in words:
            # After an article a capitalised word is a noun, where nouns are capitalised: "im Sommer".
            return None if nouns and n == 1 and prev in ARTICLES else "people"
        if initial and n == 1:
            return None  # sentence case: an unknown first word is just a word
        if prev in g.tool_cues:
            return "tools"
        if n == 1 and _CAMEL.search(name):
            return "tools"
        if n == 1 and name.rstrip("+").isupper() and len(name.rstrip("+")) >= 2:
            return "concepts"
        if nouns:
            # Its nouns are capitalised: a word no list knows is a noun ("Koch", "Garten" and "Sommer"
            # are census surnames), a span of them a name of some kind ("Deutsche Bahn").
            return None if n == 1 else "concepts"
        if n == 1 and first in g.last_names:
            return "concepts" if prev == "the" else "people"  # "the Board", "the Marriott": not a person
        if (n == 2 and last in g.last_names and not any(w.isupper() for w in words) and first not in TITLE_ARTICLES
                and not first.endswith("ing")):  # "Burning Man", "Breaking Bad": a gerund is no first name
            return "people"
        return "concepts"

    def place_team(self, words: list[str]) -> bool:
        """A place, then capitalised words ending in a plural: a team or a company ("Denver Broncos",
        "New York Giants", "Texas Instruments"; read as people, as the cities are first names too).
        Not a place ("Palm Springs", "Dallas Texas"), nor a first name and a surname ("Austin Powers")."""
        g, last = self.gaz, words[-1]
        if not _PLURAL.fullmatch(last) or last.lower() in g.place_suffixes or self.place(last):
            return False
        heads = [k for k in range(1, len(words)) if self.place(" ".join(words[:k]))]
        return bool(heads) and not (heads == [1] and unaccented(words[0]) in g.first_names and unaccented(last) in g.last_names)

    def place(self, name: str) -> bool:
        """Whether the lists know `name` as a place, a large or a small one (any case)."""
        return (lowered := name.lower()) in self.gaz.major_places or lowered in self.gaz.minor_places

    def known(self, words: list[str], *, minor: bool = True) -> bool:
        """Whether the lists know these words as one name (a place, a body or a tool, any case); a
        smaller town's only with `minor`."""
        g, lowered = self.gaz, " ".join(words).lower()
        return (lowered in g.major_places or lowered in g.organizations or lowered in g.tools
                or (minor and lowered in g.minor_places))

    def name_start(self, words: list[str]) -> bool:
        """Whether these words start with a name: one the lists know, a first name, or a project cue."""
        first = words[0].lower()
        return self.known(words) or unaccented(first) in self.gaz.first_names or first in self.gaz.project_cues

    def verb_before_name(self, words: list[str]) -> bool:
        """A past or a gerund no name list holds, an irregular past ("Met Sarah"), or an imperative
        ("Email Sarah ..."), before a name the lists know, a first name, or "St." / "Mt." ("Climbed Mt.
        Everest"); a past or an imperative before a lone surname too."""
        g, verb = self.gaz, unaccented(words[0])
        if (verb not in IMPERATIVES and verb not in IRREGULAR_PASTS
                and (not _SENTENCE_VERB.fullmatch(words[0]) or verb in g.first_names or verb in g.last_names)):
            return False
        if self.known(words[1:]) or words[1].rstrip(".") in NAME_ABBREVIATIONS:
            return True
        if unaccented(words[1]) in g.first_names and not self.known(words[1:2]):
            return True
        # A lone surname after a past or an imperative ("Called Jones", "Email Jones"); `classify`
        # names the two words a person anyway. Not after a gerund: "Breaking Bad" is a title.
        return len(words) == 2 and not verb.endswith("ing") and unaccented(words[1]) in g.last_names and not words[1].isupper()

    def known_start(self, words: list[str], prev: str) -> bool:
        """Whether the span's first two words or more are a name the lists know ("New York", "South
        Africa"); a smaller town's only after a word of place, as in `classify` ("to Great Yarmouth";
        "In Salah" is a town too). "The" is never kept: "The Netherlands" is "Netherlands" (one slug
        with "the Netherlands"), and the lists' towns called "The Valley" or "The Peak" are words."""
        if words[0].lower() == "the":
            return False
        minor = prev in self.gaz.locative_cues
        # Bounded: a span may be thousands of words.
        return any(self.known(words[:k], minor=minor) for k in range(min(len(words), MAX_WORDS), 1, -1))
