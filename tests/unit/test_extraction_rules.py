"""The extractor's edition (`EXTRACTION_RULES`, recorded on every enriched memory) moves with what it
reads: a change of the rules that reads these texts differently, or any change of the word lists,
must come with a new edition, or stored memories would not be counted as enriched by an older one (GET
/enrichment/status `older_rules`, the start-up warning, `engram reenrich`)."""

from __future__ import annotations

import hashlib
import json

from service.enrichment import cue_words
from service.enrichment.extractor import EXTRACTION_RULES, extract_entities
from service.enrichment.gazetteer import load_gazetteer

# Texts that exercise each rule of the extractor's docstring, with the shipped lists.
SAMPLE = [
    "Hey Mel, great to chat! Thanks, Sarah Connor.",
    "I loved \"Becoming Nicole\" by Amy Ellis Nutt.",
    "Our group, 'Connected LGBTQ Activists', meets weekly; I went to an LGBTQ+ conference.",
    "We chose PostgreSQL over MongoDB; deployed with docker on AWS, and rewrote it in Go.",
    "She works at Google; he left DoorDash for NASA. Kickoff for project Atlas and the Hermes repo.",
    "She studies at Stanford University. They enjoyed the Grand Canyon and Lake Tahoe.",
    "Caroline has lived in Stockholm, Sweden since she joined Spotify.",
    "We moved from Berlin Germany to Austin Texas; I talked to Georgia Washington.",
    "Went to see the Denver Broncos play; I met Austin Powers in Palm Springs.",
    "Pull the image from Docker Hub; ordered a MacBook Pro from Apple.",
    "Our cat Whiskers is sick; a dog named Bello lives next door.",
    "Then Thandiwe asked about the Marriott and the Board.",
    "He went to Burning Man; we binge-watched Breaking Bad with Tom.",
    "I met Ursula von der Leyen in Brussels and Carlos de la Vega at Bank of the West.",
    "Set DATABASE_URL before starting; I renamed my_var in Postgres.",
    "Visited Paris with Tom. Called Sarah Jones today. Mohammed Ali boxed.",
    "We celebrated Christmas in Vermont; French food, German beer.",
    "Gestern hat Anna mit ihrem Bruder Thomas im Garten gearbeitet.",
    "Lena zieht im Sommer nach Hamburg, ihr neuer Job bei der Deutschen Bahn beginnt im August.",
    "Frau Schmidt arbeitet in Köln. Wir waren im Sommer in Italien.",
    "She flew to Sao Paulo and then to Reykjavik; a week in Zurich.",
    "Zoë met José in Zürich; Sarah-Jane came by.",
    "Met Priya at the lab. Told Anna about it. Left Boston for good.",
    "Called Jones about the contract.",
]
# Edition -> sha256 of the extractor's answers on SAMPLE, and of the word lists it reads with (the
# gazetteer as loaded: gazetteer.json, places.json, the `names` package's census lists; and
# cue_words.py): a sample of texts cannot see every word a list gains or loses. Record a new
# edition's; keep the old ones. (Edition 1 was never recorded: its digests are as of f0a4b84. The
# answers of editions 1, 2 and 3 were taken again, at f0a4b84, 6f94768 and 6f731b4, when SAMPLE gained its
# last text.)
EDITIONS = {
    1: {"answers": "07ec5226eb9e2bb9326700bde89617ee74ffe63067a457582a034b57b1b9cf50",
        "lists": "29171f7f5598ad60c7bab6aab0b3556e7e22744674b1a545f7742082466d314e"},
    2: {"answers": "4ca5b2b3da9865b2b70791bddaf9e349599cfa03d9833a490350765fe3f7dd9d",  # teams, products named with their maker
        "lists": "29171f7f5598ad60c7bab6aab0b3556e7e22744674b1a545f7742082466d314e"},
    3: {"answers": "0a410d2c778090036ccdea2b2fab93f1d1418241eae0226fbf07cdfeae096c8a",  # irregular pasts before a name
        "lists": "199f87d8b36ee33296ec6eb27b8c27d4ba8f4700a9517183b12393f8b125f3b1"},
    4: {"answers": "0d7ee2da8dae64be4a0d6437c89201bcd6e3657e7a6b3a05545e6d61abef9e4f",  # a past before a lone surname
        "lists": "199f87d8b36ee33296ec6eb27b8c27d4ba8f4700a9517183b12393f8b125f3b1"},
}


def digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def digests() -> dict[str, str]:
    gaz = load_gazetteer()
    lists = {name: sorted(getattr(gaz, name)) for name in gaz.__dataclass_fields__}
    lists.update({f"cue_words.{name}": sorted(v) for name, v in vars(cue_words).items() if isinstance(v, frozenset)})
    return {"answers": digest([extract_entities(text, gaz) for text in SAMPLE]), "lists": digest(lists)}


def test_a_change_in_what_the_extractor_reads_comes_with_a_new_edition():
    now = digests()
    assert EXTRACTION_RULES == max(EDITIONS), "record the current edition's digests in EDITIONS"
    assert now == EDITIONS[EXTRACTION_RULES], (
        f"the extractor reads SAMPLE, or its word lists, differently than edition {EXTRACTION_RULES} did: bump "
        f"EXTRACTION_RULES (service/enrichment/extractor.py) and record {EXTRACTION_RULES + 1}: {now!r} in EDITIONS"
    )
    older = [e["answers"] for edition, e in EDITIONS.items() if edition != EXTRACTION_RULES]
    assert now["answers"] not in older, "an edition reads as an older one did"
