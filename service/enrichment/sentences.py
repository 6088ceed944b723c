"""A text's words and sentences as the entity extractor reads them: its tokens, where a sentence
starts, and which sentences are German (a language that capitalises its nouns, so that a capitalised
word says little there). Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass

from service.enrichment.cue_words import ARTICLES, BORROWED_CUES, SHARED_CUES
from service.enrichment.gazetteer import Gazetteer
from service.memory.tags import unaccented

# A text is read as one that capitalises its nouns when this many different words of it, and this
# share of its words, are that language's function words ("und", "nicht", "wir", ...).
NOUN_LANGUAGE_MIN_WORDS = 3
NOUN_LANGUAGE_MIN_SHARE = 0.12
# ... or, in a short text, this many different ones no other language shares, at this share: "Lena
# arbeitet bei Siemens, ihr Bruder bei BMW." has only "bei" and "ihr".
NOUN_LANGUAGE_SHORT_WORDS = 2
NOUN_LANGUAGE_SHORT_SHARE = 0.25
# ... or, in a short sentence, one of them or two different words German shares with English
# (`BORROWED_CUES`), where these and the shared ones are this share of its words: "Ich bin ein
# Berliner.", "Lena hat einen Hund.", "Paul hat den Bus verpasst."
NOUN_LANGUAGE_FEW_WORDS_SHARE = 0.4
_TOKEN = re.compile(r"[^\W_](?:[^\W_]|[.'’&+#_-](?=[^\W_]|[+#]))*[+#]*|&")
_BOUNDARY = re.compile(r"[.!?;:\n\u2013\u2014(\[]\s*[\"“'(\[]*\s*$|(?:^|\s)-\s*$")
_HONORIFIC = re.compile(r"(?<![\w.])(?:Dr|Mr|Mrs|Ms|Mx|Prof|Rev|St|Mt)\.\s*$")


@dataclass(frozen=True)
class Token:
    text: str
    start: int
    end: int


def tokenize(text: str) -> list[Token]:
    return [Token(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(text)]


def capitalised(word: str) -> bool:
    return word[:1].isupper()


def sentence_initial(text: str, start: int) -> bool:
    before = text[max(0, start - 8) : start]
    if _HONORIFIC.search(before):
        return False  # "Dr. Patel": the period ends an abbreviation, not a sentence
    return start == 0 or not text[:start].strip() or bool(_BOUNDARY.search(before))


def nouns_capitalised(tokens: list[Token], gaz: Gazetteer) -> bool:
    """Whether the text is in a language that capitalises its nouns (German): there a capitalised
    word says little more than its sentence position does in English."""
    cues = [w for t in tokens if (w := t.text.lower()) in gaz.noun_language_words]
    if len(set(cues)) >= NOUN_LANGUAGE_MIN_WORDS and len(cues) >= NOUN_LANGUAGE_MIN_SHARE * len(tokens):
        return True
    own = set(cues) - SHARED_CUES
    if len(own) >= NOUN_LANGUAGE_SHORT_WORDS and len(cues) >= NOUN_LANGUAGE_SHORT_SHARE * len(tokens):
        return True
    if _name_hat(tokens, gaz):
        return True
    borrowed = [w for t in tokens if (w := t.text.lower()) in BORROWED_CUES]
    if not own and len(set(borrowed)) < 2:
        return False
    return len(cues) + len(borrowed) >= max(2, NOUN_LANGUAGE_FEW_WORDS_SHARE * len(tokens))


def _name_hat(tokens: list[Token], gaz: Gazetteer) -> bool:
    """A sentence that opens with a first name, "hat" and a noun or a German function word is German
    ("Jonas hat Hunger."): English has no such clause ("Santa hat for ..." is a hat). The caller's
    tokens start a sentence."""
    if len(tokens) < 3 or tokens[1].text != "hat" or not capitalised(tokens[0].text) or unaccented(tokens[0].text) not in gaz.first_names:
        return False
    after = tokens[2].text
    return capitalised(after) or (w := after.lower()) in gaz.noun_language_words or w in BORROWED_CUES or w in ARTICLES


def nouns_capitalised_by_token(text: str, tokens: list[Token], gaz: Gazetteer) -> list[bool]:
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
        if k == len(tokens) or sentence_initial(text, tokens[k].start):
            flags += [nouns_capitalised(tokens[start:k], gaz)] * (k - start)
            start = k
    return flags
