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
  "project X", "X repo"                   -> projects
  a first name ("Amy Ellis Nutt")         -> people
  after "using" / "via"; CamelCase        -> tools
  an acronym (LGBTQ)                      -> concepts
  a surname alone / "First Last"          -> people
  any other capitalised span mid-sentence -> concepts
A capitalised word that starts a sentence is kept only when a list knows it (sentence case says
nothing about it); so is any capitalised word alone in a German text (`nouns_capitalised`), where
every noun is capitalised.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from service.enrichment.gazetteer import Gazetteer, canonical_spellings
from service.memory.tags import unaccented

# AutoMem's five (entity_quality.py _CATEGORY_ALIASES) plus places, which AutoMem files under concepts.
CATEGORIES: tuple[str, ...] = ("people", "places", "organizations", "tools", "projects", "concepts")
# A span of more words is a phrase, not a name (AutoMem: max_words=6 for spaCy entities).
MAX_WORDS = 6
# Only this much of a memory is read: names beyond it would rarely be new, and the rules are linear.
MAX_TEXT = 20_000
# A text is read as one that capitalises its nouns when this many different words of it, and this
# share of its words, are that language's function words ("und", "nicht", "wir", ...).
NOUN_LANGUAGE_MIN_WORDS = 3
NOUN_LANGUAGE_MIN_SHARE = 0.12
# ... or, in a short text, this many different ones no other language shares, at this share: "Lena
# arbeitet bei Siemens, ihr Bruder bei BMW." has only "bei" and "ihr".
NOUN_LANGUAGE_SHORT_WORDS = 2
NOUN_LANGUAGE_SHORT_SHARE = 0.25
# ... or, in a short sentence, one of them or two different words German shares with English
# (`_BORROWED_CUES`), where these and the shared ones are this share of its words: "Ich bin ein
# Berliner.", "Lena hat einen Hund.", "Paul hat den Bus verpasst."
NOUN_LANGUAGE_FEW_WORDS_SHARE = 0.4
# Function words of the list that English chat ("im" for I'm, "über") or Dutch ("wie", "hier") use too.
_SHARED_CUES = frozenset({"im", "über", "das", "ein", "wie", "hier", "noch", "mein", "dann"})
# German function words that are English (or Dutch, or names) too, so not in the list: support only.
_BORROWED_CUES = frozenset({"bin", "hat", "er", "es", "sie", "der", "die", "den", "dem", "des", "mit", "zu"})
_CONNECTORS = frozenset({"of", "the", "de", "la", "le", "van", "von", "der", "du", "da", "del", "&", "for", "on"})
_TOKEN = re.compile(r"[^\W_](?:[^\W_]|[.'’&+#-](?=[^\W_]|[+#]))*[+#]*|&")
_QUOTED = re.compile(r"(?:\"|“)([A-Z0-9][^\"”\n]{0,80}?)(?:\"|”)|(?<![A-Za-z0-9])'([A-Z][^'\n]{0,80}?)'(?![A-Za-z0-9])")
_BOUNDARY = re.compile(r"[.!?;:\n\u2013\u2014(\[]\s*[\"“'(\[]*\s*$|(?:^|\s)-\s*$")
_POSSESSIVE = re.compile(r"['’]s$")
_CAMEL = re.compile(r"[a-z][A-Z]")
# A verb in the third person or the past ("Rachel works", "Jon moved"): the word before is a subject.
_THIRD_PERSON = re.compile(r"[a-z]{2,}(?:s|ed)")
_GERMAN_THIRD_PERSON = re.compile(r"[a-zäöüß]{2,}t")  # "zieht", "hat", "arbeitet"
_GERMAN_NAME_FOLLOWERS = frozenset({"war", "wird", "kann", "will", "muss", "soll", "mag"})


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


@dataclass(frozen=True)
class _Token:
    text: str
    start: int
    end: int


def _tokens(text: str) -> list[_Token]:
    return [_Token(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(text)]


def _capitalised(word: str) -> bool:
    return word[:1].isupper()


def _sentence_initial(text: str, start: int) -> bool:
    before = text[max(0, start - 8) : start]
    return start == 0 or not text[:start].strip() or bool(_BOUNDARY.search(before))


def _bare(word: str) -> str:
    return _POSSESSIVE.sub("", word)


def nouns_capitalised(tokens: list[_Token], gaz: Gazetteer) -> bool:
    """Whether the text is in a language that capitalises its nouns (German): there a capitalised
    word says little more than its sentence position does in English."""
    cues = [w for t in tokens if (w := t.text.lower()) in gaz.noun_language_words]
    if len(set(cues)) >= NOUN_LANGUAGE_MIN_WORDS and len(cues) >= NOUN_LANGUAGE_MIN_SHARE * len(tokens):
        return True
    own = set(cues) - _SHARED_CUES
    if len(own) >= NOUN_LANGUAGE_SHORT_WORDS and len(cues) >= NOUN_LANGUAGE_SHORT_SHARE * len(tokens):
        return True
    if _name_hat(tokens, gaz):
        return True
    borrowed = [w for t in tokens if (w := t.text.lower()) in _BORROWED_CUES]
    if not own and len(set(borrowed)) < 2:
        return False
    return len(cues) + len(borrowed) >= max(2, NOUN_LANGUAGE_FEW_WORDS_SHARE * len(tokens))


def _name_hat(tokens: list[_Token], gaz: Gazetteer) -> bool:
    """A sentence that opens with a first name, "hat" and a noun or a German function word is German
    ("Jonas hat Hunger."): English has no such clause ("Santa hat for ..." is a hat). The caller's
    tokens start a sentence."""
    if len(tokens) < 3 or tokens[1].text != "hat" or not _capitalised(tokens[0].text) or unaccented(tokens[0].text) not in gaz.first_names:
        return False
    after = tokens[2].text
    return _capitalised(after) or (w := after.lower()) in gaz.noun_language_words or w in _BORROWED_CUES or w in _ARTICLES


def nouns_capitalised_by_token(text: str, tokens: list[_Token], gaz: Gazetteer) -> list[bool]:
    """`nouns_capitalised` for each token: the whole text's answer, or where the text is not German as
    a whole, its sentence's (a memory may quote or switch language: "... a Lisboa. Lena arbeitet bei
    Siemens, ihr Bruder bei BMW.")."""
    if nouns_capitalised(tokens, gaz):
        return [True] * len(tokens)
    if not any(t.text.lower() in gaz.noun_language_words for t in tokens):
        return [False] * len(tokens)
    flags: list[bool] = []
    start = 0
    for k in range(1, len(tokens) + 1):
        if k == len(tokens) or _sentence_initial(text, tokens[k].start):
            flags += [nouns_capitalised(tokens[start:k], gaz)] * (k - start)
            start = k
    return flags


class _Extraction:
    def __init__(self, text: str, gaz: Gazetteer):
        self.text = text
        self.gaz = gaz
        self.tokens = _tokens(text)
        self.capitalised_nouns = nouns_capitalised_by_token(text, self.tokens, gaz)
        self.found: dict[str, dict[str, str]] = {c: {} for c in CATEGORIES}  # category -> slug -> name
        self.taken: list[tuple[int, int]] = []

    def add(self, category: str, name: str) -> None:
        name = " ".join(name.split()).strip(" -&")
        slug = slugify(name)
        if len(slug) < 2 or not any(ch.isalpha() for ch in name):
            return
        self.found[category].setdefault(slug, name)

    def free(self, start: int, end: int) -> bool:
        return all(end <= s or start >= e for s, e in self.taken)

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
            self.taken.append(m.span())

    def known_lowercase(self) -> None:
        """Tools and organizations written in any case ("we moved to postgres")."""
        capitalized_only = {t.lower(): t for t in self.gaz.tools_capitalized}
        canonical = canonical_spellings()
        for m in _known_matcher(self.gaz).finditer(self.text):
            word = m.group()
            lowered = word.lower()
            if not self.free(*m.span()):
                continue
            if lowered in capitalized_only and (word != capitalized_only[lowered] or _sentence_initial(self.text, m.start())):
                continue
            if not _capitalised(word) and not (lowered in _TECH_LOWER or _distinctive(canonical.get(lowered, word))):
                continue
            if lowered in self.gaz.organizations and lowered not in self.gaz.tools:
                if not _capitalised(word):
                    continue  # "apple", "target", "who" in lowercase are words, not bodies
                self.add("organizations", word)
            else:
                self.add("tools", word)
            self.taken.append(m.span())

    def spans(self) -> None:
        tokens = self.tokens
        i = 0
        while i < len(tokens):
            tok = tokens[i]
            if not _capitalised(tok.text) or not self.free(tok.start, tok.end):
                i += 1
                continue
            j = i + 1
            while j < len(tokens):
                gap = self.text[tokens[j - 1].end : tokens[j].start]
                if gap != " " or not self.free(tokens[j].start, tokens[j].end):
                    break
                nxt = tokens[j].text
                if _capitalised(nxt) or (nxt.lower() in _CONNECTORS and j + 1 < len(tokens) and _capitalised(tokens[j + 1].text)
                                         and self.text[tokens[j].end : tokens[j + 1].start] == " "):
                    if _POSSESSIVE.search(tokens[j - 1].text):
                        break  # "Oliver's Mom": the possessive ends the name
                    j += 1
                else:
                    break
            self.span(tokens, i, j)
            i = j

    def span(self, tokens: list[_Token], i: int, j: int) -> None:
        words = [t.text for t in tokens[i:j]]
        # Leading greetings and function words are not part of a name ("Hey Caroline", "The").
        while words and (words[0].lower() in self.gaz.common_words or words[0].lower() in _CONNECTORS):
            words.pop(0)
            i += 1
        while words and (words[-1].lower() in _CONNECTORS or words[-1].lower() in self.gaz.common_words):
            words.pop()
        if not words or len(words) > MAX_WORDS:
            return
        words[-1] = _bare(words[-1])
        nouns = self.capitalised_nouns[i]
        if nouns and len(words) > 1 and unaccented(words[-1]) in self.gaz.first_names and unaccented(words[0]) not in self.gaz.first_names:
            i += len(words) - 1  # "Bruder Thomas", "Kollegin Anna": a noun before the name
            words = words[-1:]
        initial = _sentence_initial(self.text, tokens[i].start)
        prev = tokens[i - 1].text.lower() if i > 0 else ""
        nxt = tokens[j].text.lower() if j < len(tokens) and self.text[tokens[j - 1].end : tokens[j].start] == " " else ""
        category = "projects" if nxt in self.gaz.project_cues and not initial else self.classify(words, initial, prev, nouns)
        if category == "people" and initial and len(words) == 1 and not self.named_subject(tokens, i):
            return
        if category == "projects" and len(words) > 1:
            words = [w for k, w in enumerate(words) if k not in (0, len(words) - 1) or w.lower() not in self.gaz.project_cues]
        if category:
            self.add(category, " ".join(words))

    def named_subject(self, tokens: list[_Token], i: int) -> bool:
        """A lone name at a sentence start counts when punctuation, a possessive or a verb follows it."""
        tok = tokens[i]
        rest = self.text[tok.end : tok.end + 2]
        if _POSSESSIVE.search(tok.text) or not rest.strip() or not rest[:1].isspace():
            return True
        nxt = tokens[i + 1].text if i + 1 < len(tokens) else ""
        if self.capitalised_nouns[i] and (nxt.lower() in _GERMAN_NAME_FOLLOWERS or _GERMAN_THIRD_PERSON.fullmatch(nxt)):
            return True  # "Lena zieht ...", "Tom und Anna"
        lowered = nxt.lower()
        return _capitalised(nxt) or lowered in _NAME_FOLLOWERS or lowered in _FOREIGN_NAME_FOLLOWERS or bool(_THIRD_PERSON.fullmatch(nxt))

    def classify(self, words: list[str], initial: bool, prev: str, nouns: bool = False) -> str | None:
        """The category of a capitalised span; `nouns`: it stands where nouns are capitalised (German)."""
        g = self.gaz
        name = " ".join(words)
        lowered = name.lower()
        first, last = unaccented(words[0]), unaccented(words[-1])
        n = len(words)
        if lowered in g.tools:
            return None if initial and name in g.tools_capitalized else "tools"
        if lowered in g.organizations:
            return "organizations"
        if lowered in g.major_places:
            return "places"
        if n >= 2 and (last in g.organization_suffixes or first in g.organization_prefixes):
            return "organizations"
        if n >= 2 and (last in g.place_suffixes or first in g.place_prefixes):
            return "places"
        if prev in g.project_cues or (n >= 2 and (first in g.project_cues or last in g.project_cues)):
            return "projects"
        if lowered in g.minor_places and (prev in g.locative_cues or first not in g.first_names):
            return "places"
        if prev in g.locative_cues and unaccented(lowered) in g.unaccented_places:
            return "places"  # English text drops accents; unaccented, a town's name may be a word or a name
        if first in g.first_names and n <= 4 and all(not w.isupper() or len(w) == 1 for w in words):
            # After an article a capitalised word is a noun, where nouns are capitalised: "im Sommer".
            return None if nouns and n == 1 and prev in _ARTICLES else "people"
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
            return "people"
        if n == 2 and last in g.last_names and not any(w.isupper() for w in words) and first not in _TITLE_ARTICLES:
            return "people"
        return "concepts"

    def result(self) -> dict[str, list[str]]:
        people = set(self.found["people"])
        for category in ("tools", "concepts"):  # AutoMem: tools.difference_update(people)
            for slug in people & set(self.found[category]):
                del self.found[category][slug]
        return {c: sorted(self.found[c].values(), key=str.lower) for c in CATEGORIES if self.found[c]}


# Written in lowercase, a known name counts only if its usual spelling is not a plain capitalised
# word ("MongoDB", "AWS", "Node.js") or it is one of these technical words; "outlook", "word",
# "target" or "slack" in lowercase are English.
_TECH_LOWER = frozenset({
    "docker", "kubernetes", "postgres", "terraform", "ansible", "jenkins", "webpack", "django", "flask", "fastapi",
    "pytorch", "tensorflow", "numpy", "jupyter", "vim", "emacs", "xcode", "jira", "figma", "photoshop", "grafana",
    "prometheus", "nginx", "heroku", "vercel", "cloudflare", "ollama", "langchain", "kotlin", "haskell", "elixir",
    "erlang", "clojure", "redis", "kafka", "cassandra", "elasticsearch", "opensearch", "qdrant", "falkordb", "sqlite",
    "mysql", "mongodb", "postgresql", "typescript", "javascript", "svelte", "laravel", "ubuntu", "debian", "linux",
})
# German articles, alone or in a preposition ("im" = "in dem"): what follows is a noun, not a name.
_ARTICLES = frozenset({
    "der", "die", "das", "den", "dem", "des", "ein", "eine", "einen", "einem", "einer", "eines",
    "im", "ins", "am", "zum", "zur", "beim", "vom",
})
# German articles no given name spells ("Des" is one): "Die Hard" and "Das Boot" are titles, not people.
_TITLE_ARTICLES = frozenset({"der", "die", "das", "den", "dem"})
# After a capitalised name that starts a sentence, these words make it a subject or vocative
# ("Jon is ...", "Luna and Oliver"); any other lowercase word makes it an ordinary word ("Hang in").
_NAME_FOLLOWERS = frozenset({
    "and", "is", "was", "has", "had", "said", "says", "will", "would", "can", "could", "did", "does", "asked", "told",
    "went", "got", "loves", "likes", "wants", "thinks", "just", "also", "&", "from", "who", "called", "mentioned",
    "met", "made", "saw", "took", "came", "gave", "found", "thought", "knew", "left", "felt", "brought", "began",
    "ran", "wrote", "bought", "sent", "spent", "built", "drove", "flew", "told", "taught", "sold", "won", "lost",
    # More irregular pasts ("Jon wore ..."), none of them a present tense or a common noun too (not
    # "put", "read", "set", "beat", "lay").
    "wore", "kept", "paid", "heard", "held", "sat", "slept", "spoke", "stood", "swam", "sang", "threw",
    "woke", "chose", "became", "forgot", "grew", "hid", "meant", "rode", "stole", "fell", "fought",
    "caught", "ate", "drank", "drew", "broke", "blew", "fed", "fled", "froze", "hung", "led", "shook",
    "sought", "swore", "understood", "forgave", "overslept",
})
# The same in Spanish, French, Italian, Portuguese and German ("Ana dijo ...", "Marie habite ...",
# "Lena ist ..."), none of them an English word, so that English text reads as before.
_FOREIGN_NAME_FOLLOWERS = frozenset({
    # Spanish
    "y", "dijo", "está", "estaba", "fue", "tiene", "tenía", "vive", "vivía", "trabaja", "trabajaba",
    "quiere", "quería", "hizo", "compró", "llegó", "viajó", "empezó", "también", "siempre",
    # French
    "et", "dit", "est", "était", "habite", "travaille", "veut", "aime", "adore", "pense", "vient", "va", "aussi",
    # Italian
    "è", "disse", "abita", "lavora", "vuole", "ama", "anche", "sempre",
    # Portuguese
    "disse", "diz", "mora", "morava", "trabalha", "quer", "foi", "tem", "tinha", "gosta", "também",
    # German, for a sentence too short to be told German ("Lena ist Lehrerin in München.")
    "ist", "und", "arbeitet", "wohnt", "sagt", "sagte", "hatte", "wollte", "möchte",
})

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
