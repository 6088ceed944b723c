"""Hindsight's fact types for retained text — `world` or `experience` — by rules (no language model).

Hindsight's definitions (spec 002): `world` is "general knowledge about people, places, events,
and things that happen"; `experience` is "memories about experience, conversations, actions taken,
and tasks performed" — the memory bank's own. Hindsight asks a language model; here the rules are,
in order (the first that applies decides):

1. A speaker-labelled line (`Name: text`, as chat transcripts are stored; not a note heading such
   as `Decision:` or `TODO:`): `experience` when the speaker is the agent (assistant, agent, AI,
   bot, system), else `world` — what someone else says, about themselves or anything, is
   knowledge about them.
2. First person (I, me, my, we, us, our, ... as words; `I` capitalised, `US` left as a country):
   `experience`.
3. An action log: the text opens with a past-tense action verb and no subject ("Fixed the flaky
   test", "Deployed v2 to staging"), or names the agent acting ("the assistant suggested ..."):
   `experience`.
4. Otherwise `world`.

tests/data/fact_types.jsonl is a hand-labelled sample; tests/unit/test_hindsight_facts.py measures
the rules on it (figures in the README's Hindsight section).
"""

from __future__ import annotations

import re

WORLD, EXPERIENCE = "world", "experience"

# rule 1: `Name: text` with a short label (a word or two, no sentence punctuation).
_SPEAKER = re.compile(r"^\s*([A-Za-z][\w .'\-]{0,40}?)\s*:\s+\S")
AGENT_SPEAKERS = frozenset({"assistant", "agent", "ai", "bot", "system", "claude", "chatgpt", "gpt", "copilot"})
# Labels that head a note rather than name a speaker ("Decision: we chose PostgreSQL").
NOTE_LABELS = frozenset("""
action agenda answer bug context decision error fact fix fyi goal habit idea important insight issue lesson log
meeting nb next note notes observation outcome pattern preference problem project ps question re reminder result
rule session solution status style subject summary task tip todo topic update warning
""".split())
# rule 2: first-person words; "I" and its contractions only capitalised, "us" only lower-case ("US" is a country).
_FIRST_PERSON = re.compile(
    r"(?<![\w'])(?:I|I'm|I've|I'd|I'll|I’m|I’ve|I’d|I’ll)(?![\w'’])"
    r"|(?<![\w'])(?:[Mm]e|[Mm]y|[Mm]ine|[Mm]yself|[Ww]e|[Ww]e're|[Ww]e've|[Ww]e'd|[Ww]e'll|us|[Oo]ur|[Oo]urs|[Oo]urselves)(?![\w'])"
)
# rule 3: past-tense action verbs a task log opens with.
ACTION_VERBS = frozenset("""
added answered applied asked booked built called changed checked cleaned closed committed completed configured
created debugged decided deleted deployed discussed drafted edited emailed enabled explained exported filed finished
fixed followed helped implemented imported installed investigated logged made merged met migrated moved opened ordered
paid patched planned posted profiled published pushed ran read rebased recommended refactored released removed renamed
replied reported researched reset resolved restarted reviewed rewrote rolled sent set shipped showed started submitted
suggested summarized summarised talked tested told tried triaged tuned updated upgraded uploaded visited wrote
""".split())
_AGENT_ACTS = re.compile(r"\b(?:the\s+)?(?:assistant|agent|bot)\s+(?:" + "|".join(sorted(ACTION_VERBS)) + r")\b", re.IGNORECASE)
_FIRST_WORD = re.compile(r"^\W*([A-Za-z]+)")


def speaker_of(text: str) -> tuple[str | None, str]:
    """(speaker label or None, the text after it)."""
    m = _SPEAKER.match(text)
    if not m or len(m.group(1).split()) > 3 or m.group(1).split()[0].lower() in NOTE_LABELS:
        return None, text
    return m.group(1).strip(), text[m.end() - 1 :]


def classify_fact(text: str) -> str:
    """`world` or `experience` for one retained text (the rules above)."""
    speaker, body = speaker_of(text)
    if speaker is not None:
        return EXPERIENCE if speaker.lower() in AGENT_SPEAKERS else WORLD
    if _FIRST_PERSON.search(body):
        return EXPERIENCE
    first = _FIRST_WORD.match(body)
    if first and first.group(1).lower() in ACTION_VERBS and first.group(1)[0].isupper():
        return EXPERIENCE
    if _AGENT_ACTS.search(body):
        return EXPERIENCE
    return WORLD
