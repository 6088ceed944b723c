"""The entity extractor's word lists: `Gazetteer`, and the lists shipped with the service
(`load_gazetteer`): gazetteer.json, the US Census first and last names of the `names` package, and
places.json (GeoNames, written by bench/places.py). Read once per process."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from service.memory.tags import unaccented

# Unaccented place names shorter than this are words ("Göd" is "god", "Çat" "cat").
MIN_UNACCENTED = 4
# Cities at least this large are places without a cue ("Paris"); smaller ones need "in" / "to" / ...
MAJOR_CITY_POPULATION = 1_000_000

_GAZETTEER_FILE = Path(__file__).with_name("gazetteer.json")
_PLACES_FILE = Path(__file__).with_name("places.json")


@dataclass(frozen=True)
class Gazetteer:
    """Lowercased word lists, except `tools_capitalized`, which hold exact spellings."""

    first_names: frozenset[str]
    last_names: frozenset[str]
    major_places: frozenset[str]
    minor_places: frozenset[str]
    # Place names without their accents, where that differs: "Zurich", "Sao Paulo".
    unaccented_places: frozenset[str]
    tools: frozenset[str]
    tools_capitalized: frozenset[str]
    organizations: frozenset[str]
    organization_suffixes: frozenset[str]
    organization_prefixes: frozenset[str]
    place_suffixes: frozenset[str]
    place_prefixes: frozenset[str]
    project_cues: frozenset[str]
    locative_cues: frozenset[str]
    tool_cues: frozenset[str]
    common_words: frozenset[str]
    # Function words of a language that capitalises every noun (German): see `extractor.nouns_capitalised`.
    noun_language_words: frozenset[str]

    @classmethod
    def from_lists(cls, **lists) -> "Gazetteer":
        """Build from plain lists (tests pass small ones); every list is optional."""
        exact = {"tools_capitalized"}
        values = {}
        for name in cls.__dataclass_fields__:
            items = lists.get(name, ())
            values[name] = frozenset(items if name in exact else (str(i).lower() for i in items))
        # "The Netherlands", "the Bronx": the article is not part of the name as text writes it.
        values["major_places"] |= {p.removeprefix("the ") for p in values["major_places"]}
        places = values["major_places"] | values["minor_places"]
        values["unaccented_places"] = frozenset(k for p in places if len(k := unaccented(p)) >= MIN_UNACCENTED and k not in places)
        return cls(**values)


@lru_cache(maxsize=1)
def canonical_spellings() -> dict[str, str]:
    """{lowercase: usual spelling} of the known tools and organizations ("mongodb": "MongoDB")."""
    data = json.loads(_GAZETTEER_FILE.read_text())
    return {n.lower(): n for n in data["tools"] + data["organizations"]}


def _census_names(filename: str) -> list[str]:
    import names  # the `names` package ships the US Census 1990 name lists as text files

    path = Path(os.path.dirname(names.__file__)) / filename
    return [line.split()[0] for line in path.read_text().splitlines() if line.strip()]


def _places() -> tuple[set[str], set[str]]:
    """Major and minor place names: places.json, written from GeoNames by bench/places.py."""
    data = json.loads(_PLACES_FILE.read_text(encoding="utf-8"))
    return set(data["major"]), set(data["minor"])


@lru_cache(maxsize=1)
def load_gazetteer() -> Gazetteer:
    """The default lists: gazetteer.json plus the name and place packages (~0.5 s, ~60 MB once)."""
    data = json.loads(_GAZETTEER_FILE.read_text())
    major, minor = _places()
    common = {w.lower() for w in data["common_words"]}
    return Gazetteer.from_lists(
        first_names=[n for n in _census_names("dist.female.first") + _census_names("dist.male.first") if n.lower() not in common]
        + [unaccented(n) for n in data["first_names_extra"]],  # looked up unaccented: "João" as "joao"
        last_names=[n for n in _census_names("dist.all.last") if n.lower() not in common],
        major_places=list(major) + data["places_extra"],
        minor_places=[p for p in minor if p.lower() not in common],
        tools=data["tools"],
        tools_capitalized=data["tools_capitalized"],
        organizations=data["organizations"],
        organization_suffixes=data["organization_suffixes"],
        organization_prefixes=data["organization_prefixes"],
        place_suffixes=data["place_suffixes"],
        place_prefixes=data["place_prefixes"],
        project_cues=data["project_cues"],
        locative_cues=data["locative_cues"],
        tool_cues=data["tool_cues"],
        common_words=data["common_words"],
        noun_language_words=data["noun_language_words"],
    )
