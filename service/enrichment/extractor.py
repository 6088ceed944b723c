"""Offline entity extraction: rules over capitalisation and context, plus gazetteers. Pure.

`extract_entities(text, gazetteer)` -> {category: [names]} for the six categories below. AutoMem
runs spaCy's small English model with regex fallbacks (automem/utils/entity_extraction.py); no
model ships on PyPI under its own name, so this extractor uses word lists that packages do ship
(first names: the US Census lists of `names`; places: GeoNames' in places.json) and those in
gazetteer.json. Measured against hand labels by bench/entities_eval.py.

How a span is read, in order (first rule that applies wins):
  quoted title ("Becoming Nicole")       -> organizations if it ends like one, tools if known, else concepts
  known tool / organization / place       -> that category (case-insensitive, whole words)
  "... Inc", "... University", "Lake ..." -> organizations / places by their first or last word
  a place and a plural ("Denver Broncos") -> organizations ("Austin Powers", a first name and a surname, not)
  "project X", "X repo"                   -> projects
  right after a known tool or body        -> concepts, named with it ("Docker Hub", not "Hub")
  a first name ("Amy Ellis Nutt")         -> people
  after "a dog named", "a cat called"     -> people (the animal's name, whatever the lists say)
  after "using" / "via"; CamelCase        -> tools
  an acronym (LGBTQ)                      -> concepts
  a surname alone / "First Last"          -> people
  any other capitalised span mid-sentence -> concepts
A capitalised word that starts a sentence is kept only when a list knows it (sentence case says
nothing about it); so is any capitalised word alone in a German text (`sentences.nouns_capitalised`), where
every noun is capitalised. This module finds the spans and reads the words around them; what the
words themselves name, by the lists, is service/enrichment/naming.py (`Naming.classify`).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from service.enrichment.cue_words import (
    CONNECTORS, FOREIGN_NAME_FOLLOWERS, GERMAN_NAME_FOLLOWERS, GERMAN_PET_NOUNS, GERMAN_POSSESSIVES, HONORIFICS,
    NAME_CONNECTORS, NAME_FOLLOWERS, NAMING_WORDS, PERSON_VERBS, PET_NOUNS, TEAMS, TECH_LOWER, TO_PERSON_VERBS,
)
from service.enrichment.gazetteer import Gazetteer, canonical_spellings
from service.enrichment.naming import MAX_WORDS, NAME_ABBREVIATIONS, Naming
from service.enrichment.sentences import Token, capitalised, nouns_capitalised_by_token, sentence_initial, tokenize
from service.memory.tags import unaccented

# AutoMem's five (entity_quality.py _CATEGORY_ALIASES) plus places, which AutoMem files under concepts.
CATEGORIES: tuple[str, ...] = ("people", "places", "organizations", "tools", "projects", "concepts")
# Only this much of a memory is read: names beyond it would rarely be new, and the rules are linear.
MAX_TEXT = 20_000
# The rules' edition, recorded on each enriched memory (`enrichment.rules`; none before 2). Bump it
# when the extractor reads text differently (these rules, naming.py, cue_words.py, the word lists):
# GET /enrichment/status and the start-up log count memories of an older edition, which `engram
# reenrich` enriches again. tests/unit/test_extraction_rules.py notices a change left unbumped.
EXTRACTION_RULES = 4
_QUOTED = re.compile(r"(?:\"|“)([A-Z0-9][^\"”\n]{0,80}?)(?:\"|”)|(?<![A-Za-z0-9])'([A-Z][^'\n]{0,80}?)'(?![A-Za-z0-9])")
_POSSESSIVE = re.compile(r"['’]s$")
# A verb in the third person or the past ("Rachel works", "Jon moved"): the word before is a subject.
_THIRD_PERSON = re.compile(r"[a-z]{2,}(?:s|ed)")
_GERMAN_THIRD_PERSON = re.compile(r"[a-zäöüß]{2,}t")  # "zieht", "hat", "arbeitet"
_GERMAN_IERT = re.compile(r"[a-zäöü]{2,}iert")  # "studiert", "telefoniert", "programmiert"


def slugify(name: str) -> str:
    """AutoMem's slug (entity_quality.slugify_entity): lowercase ASCII runs joined by '-'; accents folded."""
    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", folded.lower()).strip("-")


def entity_tags(entities: dict[str, list[str]]) -> list[str]:
    """`entity:<category>:<slug>` for every extracted name, in category order, deduplicated."""
    tags: dict[str, None] = {}
    for category in CATEGORIES:
        for name in entities.get(category, ()):
            slug = slugify(name)
            if slug:
                tags[f"entity:{category}:{slug}"] = None
    return list(tags)


def _bare(word: str) -> str:
    return _POSSESSIVE.sub("", word)


class _Extraction:
    def __init__(self, text: str, gaz: Gazetteer):
        self.text = text
        self.gaz = gaz
        self.names = Naming(gaz)  # what a run of words names, by the lists
        self.tokens = tokenize(text)
        self.capitalised_nouns = nouns_capitalised_by_token(text, self.tokens, gaz)
        self.found: dict[str, dict[str, str]] = {c: {} for c in CATEGORIES}  # category -> slug -> name
        self.taken: dict[int, int] = {}  # end -> start of the spans the quoted and known passes took (none overlap)

    def add(self, category: str, name: str) -> None:
        name = " ".join(name.split()).strip(" -&")
        slug = slugify(name)
        if len(slug) < 2 or not any(ch.isalpha() for ch in name):
            return
        self.found[category].setdefault(slug, name)

    def free(self, start: int, end: int) -> bool:
        return all(end <= s or start >= e for e, s in self.taken.items())

    # --- passes ---------------------------------------------------------------------------
    def quoted(self) -> None:
        for m in _QUOTED.finditer(self.text):
            title = (m.group(1) or m.group(2) or "").strip().rstrip(".,!?")
            words = title.split()
            if not words or len(words) > MAX_WORDS or title.lower() in self.gaz.common_words:
                continue
            lowered = title.lower()
            if lowered in self.gaz.tools:
                self.add("tools", title)
            elif words[-1].lower() in self.gaz.organization_suffixes or lowered in self.gaz.organizations:
                self.add("organizations", title)
            else:
                self.add("concepts", title)
            self.taken[m.end()] = m.start()

    def known_lowercase(self) -> None:
        """Tools and organizations written in any case ("we moved to postgres")."""
        capitalized_only = {t.lower(): t for t in self.gaz.tools_capitalized}
        canonical = canonical_spellings()
        for m in _known_matcher(self.gaz).finditer(self.text):
            word = m.group()
            lowered = word.lower()
            if not self.free(*m.span()):
                continue
            if lowered in capitalized_only and (word != capitalized_only[lowered] or sentence_initial(self.text, m.start())):
                continue
            if not capitalised(word) and not (lowered in TECH_LOWER or _distinctive(canonical.get(lowered, word))):
                continue
            if lowered in self.gaz.organizations and lowered not in self.gaz.tools:
                if not capitalised(word):
                    continue  # "apple", "target", "who" in lowercase are words, not bodies
                if self.suffixed(m.end()):
                    continue  # "Stanford University": the whole span is the body's name (`spans`)
                self.add("organizations", word)
            else:
                self.add("tools", word)
            self.taken[m.end()] = m.start()

    def suffixed(self, end: int) -> bool:
        """Whether the capitalised words that follow `end` hold one that ends bodies' names ("Stanford
        University", "Harvard Business School")."""
        m = re.match(r"(?: [A-Z]\w*){1,3}", self.text[end : end + 80])
        return m is not None and any(w.lower() in self.gaz.organization_suffixes for w in m.group().split())

    def spans(self) -> None:
        tokens = self.tokens
        i = 0
        while i < len(tokens):
            tok = tokens[i]
            if not capitalised(tok.text) or not self.free(tok.start, tok.end):
                i += 1
                continue
            j = i + 1
            # An identifier ("DATABASE_URL") is a name of its own: the words around it are not part of it.
            while j < len(tokens) and "_" not in tok.text and "_" not in tokens[j].text:
                gap = self.text[tokens[j - 1].end : tokens[j].start]
                joined = gap == " " or (gap == ". " and tokens[j - 1].text in NAME_ABBREVIATIONS)  # "St. Louis"
                if not joined or not self.free(tokens[j].start, tokens[j].end):
                    break
                nxt = tokens[j].text
                if capitalised(nxt) or (nxt.lower() in CONNECTORS and self.connects(tokens, j + 1)):
                    if _POSSESSIVE.search(tokens[j - 1].text):
                        break  # "Oliver's Mom": the possessive ends the name
                    j += 1
                else:
                    break
            self.span(tokens, i, j)
            i = j

    def connects(self, tokens: list[Token], k: int) -> bool:
        """Whether the connector before token `k` joins what follows it to the name: a capitalised word,
        or an article and then one, after a name particle ("Maria de la Cruz", "Ursula von der Leyen") or
        after an "of" that no first name precedes ("Bank of the West"; "Sarah of the Design team" is
        Sarah), each a space apart."""
        for article in (False, True):
            if k >= len(tokens) or self.text[tokens[k - 1].end : tokens[k].start] != " ":
                return False
            if capitalised(tokens[k].text):
                return True
            connector = tokens[k - 1].text.lower()
            if article or tokens[k].text.lower() not in CONNECTORS or connector not in NAME_CONNECTORS:
                return False
            if connector == "of" and (k < 2 or unaccented(tokens[k - 2].text.lower()) in self.gaz.first_names):
                return False
            k += 1
        return False

    def span(self, tokens: list[Token], i: int, j: int) -> None:
        trimmed = self.trimmed(tokens, i, j)
        if trimmed is None:
            return
        words, i, nouns = trimmed
        if len(words) > 1 and words[0].lower() in HONORIFICS:
            self.add("people", " ".join(words[1:]))  # "Frau Schmidt", "Herrn Müller": whoever follows is a person
            return
        if (pair := self.place_and_region(tokens, words, i)) is not None:
            for place in pair:
                self.add("places", place)
            return
        category = self.category(tokens, words, i, j, nouns)
        if category == "projects" and len(words) > 1:
            words = [w for k, w in enumerate(words) if k not in (0, len(words) - 1) or w.lower() not in self.gaz.project_cues]
        if category == "concepts" and i > 0 and (known := self.known_before(tokens, i)):
            words = [known, *words]  # "Docker Hub", not "Hub": a product is named with its maker
        if category:
            self.add(category, " ".join(words))

    def place_and_region(self, tokens: list[Token], words: list[str], i: int) -> tuple[str, str] | None:
        """After a word of place, a place and the country or state it is in, written without a comma:
        "in Paris France", "to Austin Texas" (read as one name, they were people: both cities are first
        names). Not a name the lists know whole ("to New York", "to New York City")."""
        cue = tokens[i - 1].text.lower() if i > 0 else ""
        if len(words) < 2 or cue not in self.gaz.locative_cues or self.names.known(words):
            return None
        if cue == "to" and i > 1 and tokens[i - 2].text.lower() in TO_PERSON_VERBS:
            return None  # "talked to Georgia Washington"
        *head, region = words
        if region.lower() not in self.gaz.major_places or not self.names.known(head):
            return None
        return " ".join(head), region

    def trimmed(self, tokens: list[Token], i: int, j: int) -> tuple[list[str], int, bool] | None:
        """The span's words without what is not part of the name, the index of its first one, and whether
        it stands where nouns are capitalised; None when nothing is left."""
        words = [f"{t.text}." if t.text in NAME_ABBREVIATIONS and self.text[t.end : t.end + 1] == "." and k < j - 1 else t.text
                 for k, t in enumerate(tokens[i:j], start=i)]
        # Leading greetings and function words are not part of a name ("Hey Caroline", "The"), unless a
        # known name starts with them ("New York", "South Africa"; `known_start`).
        while (words and ((w := words[0].lower()) in self.gaz.common_words or w in CONNECTORS or w in GERMAN_POSSESSIVES)
               and not self.names.known_start(words, tokens[i - 1].text.lower() if i > 0 else "")):
            words.pop(0)
            i += 1
        while words and (words[-1].lower() in CONNECTORS or words[-1].lower() in self.gaz.common_words):
            words.pop()
        if (len(words) > 1 and sentence_initial(self.text, tokens[i].start)
                and not any(self.names.known(words[:k]) for k in range(1, min(len(words), MAX_WORDS) + 1))):
            if len(words) > 2 and (words[1] == "the" or (words[1] in ("for", "on") and self.names.name_start(words[2:]))):
                words = words[2:]  # "Visited the Golden Gate Bridge", "Deadline for Project Phoenix" ("Read the Docs" is one name)
                i += 2
            elif self.names.verb_before_name(words):
                words = words[1:]  # "Visited Paris", "Called Sarah Jones"
                i += 1
        if not words or len(words) > MAX_WORDS:
            return None
        words[-1] = _bare(words[-1])
        nouns = self.capitalised_nouns[i]
        german_pet = len(words) > 1 and words[0].lower() in GERMAN_PET_NOUNS  # "der Hund Bello"
        possessed = i > 0 and tokens[i - 1].text.lower() in GERMAN_POSSESSIVES  # "mein Bruder Thomas" in any text
        if german_pet or ((nouns or possessed) and len(words) > 1 and unaccented(words[-1]) in self.gaz.first_names
                          and unaccented(words[0]) not in self.gaz.first_names and not self.names.known(words)):  # but "Los Angeles" is a city
            i += len(words) - 1  # "Bruder Thomas", "Kollegin Anna": a noun before the name
            words = words[-1:]
        return words, i, nouns

    def category(self, tokens: list[Token], words: list[str], i: int, j: int, nouns: bool) -> str | None:
        """`classify`, with what the words around the span say (a pet's name, a person's verb, a model's name)."""
        initial = sentence_initial(self.text, tokens[i].start)
        prev = tokens[i - 1].text.lower() if i > 0 else ""
        nxt = tokens[j].text.lower() if j < len(tokens) and self.text[tokens[j - 1].end : tokens[j].start] == " " else ""
        category = "projects" if nxt in self.gaz.project_cues and not initial else self.names.classify(words, initial, prev, nouns)
        if category in ("places", "concepts", None) and not initial and self.pet_named(tokens, i):
            return "people"  # "a dog named Bello": Bello is the dog, not the town of that name
        if (category == "concepts" and len(words) == 1 and nxt in PERSON_VERBS and re.fullmatch(r"[A-Z][a-zà-ÿ]+", words[0])
                and words[0].lower() not in TEAMS):
            return "people"  # "Then Thandiwe asked ...": a name no list knows, by what it does
        if category == "people" and initial and len(words) == 1 and not self.named_subject(tokens, i):
            return None
        if ((category == "people" or (category == "places" and " ".join(words).lower() not in self.gaz.major_places))
                and i > 0 and self.after_known(tokens, i)):
            return "concepts"  # "MacBook Pro", "Docker Hub": a product's name, not a person or a town ("Google Paris" is Paris)
        return category

    def known_before(self, tokens: list[Token], i: int) -> str | None:
        """The tool or body the known pass took right before the word at `i` ("Docker" before "Hub"), if any."""
        if not self.after_known(tokens, i):
            return None
        start = self.taken.get(end := tokens[i - 1].end)
        return None if start is None else self.text[start:end]

    def after_known(self, tokens: list[Token], i: int) -> bool:
        """Whether the word at `i` directly follows a capitalised tool or body the known pass took."""
        before = tokens[i - 1]
        return capitalised(before.text) and self.text[before.end : tokens[i].start] == " " and not self.free(before.start, before.end)

    def pet_named(self, tokens: list[Token], i: int) -> bool:
        """The span at `i` names an animal: "a dog named ...", "our cat called ...", "einen Hund namens ...",
        "our cat Whiskers"."""
        before = tokens[i - 1].text if i >= 1 else ""
        if (before in PET_NOUNS or before.lower() in GERMAN_PET_NOUNS) and self.text[tokens[i - 1].end : tokens[i].start] == " ":
            return True  # English ones in lowercase only: "the Dog Park"
        if i < 2 or tokens[i - 1].text.lower() not in NAMING_WORDS:
            return False
        return tokens[i - 2].text.lower() in PET_NOUNS and self.text[tokens[i - 2].end : tokens[i].start].count(" ") == 2

    def named_subject(self, tokens: list[Token], i: int) -> bool:
        """A lone name at a sentence start counts when punctuation, a possessive or a verb follows it."""
        tok = tokens[i]
        rest = self.text[tok.end : tok.end + 2]
        if _POSSESSIVE.search(tok.text) or not rest.strip() or not rest[:1].isspace():
            return True
        nxt = tokens[i + 1].text if i + 1 < len(tokens) else ""
        if self.capitalised_nouns[i] and (nxt.lower() in GERMAN_NAME_FOLLOWERS or _GERMAN_THIRD_PERSON.fullmatch(nxt)):
            return True  # "Lena zieht ...", "Tom und Anna"
        if _GERMAN_IERT.fullmatch(nxt):
            return True  # "Anna studiert ...": no English word ends so, even where the sentence is too short to tell
        lowered = nxt.lower()
        return capitalised(nxt) or lowered in NAME_FOLLOWERS or lowered in FOREIGN_NAME_FOLLOWERS or bool(_THIRD_PERSON.fullmatch(nxt))

    def result(self) -> dict[str, list[str]]:
        people = set(self.found["people"])
        for category in ("tools", "concepts"):  # AutoMem: tools.difference_update(people)
            for slug in people & set(self.found[category]):
                del self.found[category][slug]
        return {c: sorted(self.found[c].values(), key=str.lower) for c in CATEGORIES if self.found[c]}



@lru_cache(maxsize=8)
def _known_matcher(gaz: Gazetteer) -> re.Pattern:
    names = sorted(gaz.tools | gaz.organizations, key=len, reverse=True)
    alternation = "|".join(re.escape(n) for n in names) or r"(?!x)x"
    return re.compile(rf"(?<![\w.+#-])(?:{alternation})(?![\w+#]|[.-]\w)", re.IGNORECASE)


def _distinctive(spelling: str) -> bool:
    """Not a plain capitalised word: "MongoDB", "AWS", "Node.js", "C++"."""
    return not re.fullmatch(r"[A-Z][a-z]+", spelling)


def _clipped(text: str) -> str:
    """The first MAX_TEXT characters, without a word the cut went through ("Sa" of "Sarah")."""
    if len(text) <= MAX_TEXT or text[MAX_TEXT].isspace():
        return text[:MAX_TEXT]
    return re.sub(r"\S+$", "", text[:MAX_TEXT])


def extract_entities(text: str, gazetteer: Gazetteer) -> dict[str, list[str]]:
    """{category: sorted names} for the categories with at least one name (AutoMem writes only those)."""
    if not isinstance(text, str) or not text.strip():
        return {}
    run = _Extraction(_clipped(text), gazetteer)
    run.quoted()
    run.known_lowercase()
    run.spans()
    return run.result()
