"""The rule-based entity extractor: a table of texts and the entities expected, on small word lists
built in the test (the extractor is pure), plus the shipped lists on a few memories."""

from __future__ import annotations

import dataclasses

import pytest

from service.enrichment.extractor import MAX_TEXT, entity_tags, extract_entities, slugify
from service.enrichment.gazetteer import Gazetteer, load_gazetteer

GAZ = Gazetteer.from_lists(
    first_names=["Sarah", "Rachel", "Jon", "Mel", "Amy", "Ed", "Paris", "Hang", "Young", "Florence"],
    last_names=["Connor", "Smith", "Bach"],
    major_places=["Paris", "Sweden", "Rome"],
    minor_places=["Florence", "Boulder"],
    tools=["PostgreSQL", "MongoDB", "Docker", "Go", "Instagram", "Node.js", "AWS", "Outlook"],
    tools_capitalized=["Go"],
    organizations=["Google", "DoorDash", "NASA", "Target"],
    organization_suffixes=["Inc", "University", "Hospital", "Activists"],
    organization_prefixes=["University"],
    place_suffixes=["Canyon", "Park"],
    place_prefixes=["Lake"],
    project_cues=["project", "repo"],
    locative_cues=["in", "to", "from"],
    tool_cues=["using", "via"],
    common_words=["I", "I'm", "The", "Hey", "Thanks", "Wow", "We", "It", "Last", "Friday", "Fri", "Month", "May"],
)

TABLE = [
    ("", {}),
    ("   \n\t", {}),
    ("Hey Mel, great to chat!", {"people": ["Mel"]}),
    ("Thanks, Sarah Connor! See you.", {"people": ["Sarah Connor"]}),
    ("I loved \"Becoming Nicole\" by Amy Ellis Nutt.", {"people": ["Amy Ellis Nutt"], "concepts": ["Becoming Nicole"]}),
    ("Our group, 'Connected LGBTQ Activists', meets weekly.", {"organizations": ["Connected LGBTQ Activists"]}),
    ("I went to an LGBTQ+ conference.", {"concepts": ["LGBTQ+"]}),
    ("Paris?! That is really great Jon! Been only to Rome once.", {"people": ["Jon"], "places": ["Paris", "Rome"]}),
    ("We chose PostgreSQL over MongoDB; deployed with docker on AWS.", {"tools": ["AWS", "docker", "MongoDB", "PostgreSQL"]}),
    ("we rewrote it in Go last year, go figure", {"tools": ["Go"]}),
    ("Go to bed.", {}),
    ("Keep a positive outlook, and check Outlook later.", {"tools": ["Outlook"]}),
    ("She works at Google; he left DoorDash for NASA.", {"organizations": ["DoorDash", "Google", "NASA"]}),
    ("I bought it at target.", {}),
    ("Kickoff for project Atlas and the Hermes repo.", {"projects": ["Atlas", "Hermes"]}),
    ("She studies at University of Boulder.", {"organizations": ["University of Boulder"]}),
    ("They enjoyed the Grand Canyon and Lake Tahoe.", {"places": ["Grand Canyon", "Lake Tahoe"]}),
    ("We moved to Florence in May.", {"places": ["Florence"]}),
    ("Florence said hi.", {"people": ["Florence"]}),
    ("Jon wore his new suit; Will read it later.", {"people": ["Jon"]}),  # "read" is a present too
    ("Hang in there! Young people are resilient.", {}),
    ("Rachel works as a nurse at Mercy Hospital.", {"people": ["Rachel"], "organizations": ["Mercy Hospital"]}),
    ("I like Bach and Mozart.", {"people": ["Bach"], "concepts": ["Mozart"]}),
    ("Posting clips on Instagram and TikTok helps.", {"tools": ["Instagram", "TikTok"]}),
    ("Oliver's hilarious, said Ed Sheeran's fan.", {"people": ["Ed Sheeran"]}),
    ("Last Fri I met Sarah.", {"people": ["Sarah"]}),
    ("Zoë met José in Zürich", {"concepts": ["José", "Zürich"]}),  # an unknown first word says nothing
    ("lone \ud800 surrogate, Sarah \udfff too", {"people": ["Sarah"]}),
    ("A B C D E F G H are letters", {}),
]


@pytest.mark.parametrize("text, expected", TABLE, ids=[t[:30] or "empty" for t, _ in TABLE])
def test_extract_table(text, expected):
    assert extract_entities(text, GAZ) == expected


def test_non_text_and_huge_inputs():
    assert extract_entities(None, GAZ) == {}  # type: ignore[arg-type]
    assert extract_entities(12, GAZ) == {}  # type: ignore[arg-type]
    huge = "Sarah said hi. " * 5000  # 75,000 characters: only the first MAX_TEXT are read
    assert extract_entities(huge, GAZ) == {"people": ["Sarah"]}


def test_slug_and_tags():
    assert slugify("Sarah Connor") == "sarah-connor"
    assert slugify("Zürich") == "zurich"
    assert slugify("LGBTQ+") == "lgbtq"
    assert slugify("Charlotte's Web") == "charlotte-s-web"  # AutoMem's slug: every non-alphanumeric run is '-'
    assert slugify("北京") == ""
    entities = {"tools": ["Node.js"], "people": ["Sarah Connor", "sarah  connor"], "concepts": ["北京"]}
    assert entity_tags(entities) == ["entity:people:sarah-connor", "entity:tools:node-js"]


def test_input_is_not_mutated_and_result_is_sorted():
    text = "Jon met Amy in Rome and Paris."
    assert extract_entities(text, GAZ) == {"people": ["Amy", "Jon"], "places": ["Paris", "Rome"]}
    assert text == "Jon met Amy in Rome and Paris."


def test_shipped_lists_on_agent_memories():
    gaz = load_gazetteer()
    assert len(gaz.first_names) > 4000 and "paris" in gaz.major_places and "sweden" in gaz.major_places
    assert extract_entities("Decided with Priya Patel to move the Falcon project from MySQL to PostgreSQL on Kubernetes.", gaz) == {
        "people": ["Priya Patel"], "tools": ["Kubernetes", "MySQL", "PostgreSQL"], "projects": ["Falcon"],
    }
    assert extract_entities("Caroline has lived in Stockholm, Sweden since she joined Spotify.", gaz) == {
        "people": ["Caroline"], "places": ["Stockholm", "Sweden"], "tools": ["Spotify"],
    }


def test_calendar_words_are_not_entities_in_german_either():
    # German capitalises its month and day names: "März" became entity:concepts:marz and "Freitag"
    # (a surname in the census list) a person, as English ones would without the common words.
    gaz = load_gazetteer()
    assert extract_entities("Zoë bought a café in Köln in März 2024.", gaz) == {"people": ["Zoë"], "places": ["Köln"]}
    assert extract_entities("We met Amy on Freitag and again in Dezember in Berlin.", gaz) == {
        "people": ["Amy"], "places": ["Berlin"],
    }


def test_a_place_written_without_its_accents_is_a_place_after_a_locative_cue():
    # English text drops accents ("Zurich", "Sao Paulo"); GeoNames spells them "Zürich", "São Paulo".
    gaz = Gazetteer.from_lists(minor_places=["Zürich", "Göd", "Medellín"], last_names=["Medellin"], locative_cues=["to", "in"])
    assert extract_entities("We moved to Zurich last year.", gaz) == {"places": ["Zurich"]}
    assert extract_entities("We moved to Zürich last year.", gaz) == {"places": ["Zürich"]}
    # Unaccented, a town's name may be a word or a name: without the cue it is not read as the town.
    assert extract_entities("I met Medellin at work.", gaz) == {"people": ["Medellin"]}
    assert extract_entities("They flew to Medellin.", gaz) == {"places": ["Medellin"]}
    # Too short to be told from a word.
    assert extract_entities("They prayed to God.", gaz) == {"concepts": ["God"]}


def test_cities_in_their_own_languages_and_without_accents_are_places():
    gaz = load_gazetteer()
    # "Wien" is a surname in the census list and GeoNames knows the city as "Vienna".
    assert extract_entities("Im Dezember fahren wir nach Wien.", gaz) == {"places": ["Wien"]}
    assert extract_entities("She flew to Sao Paulo and then to Reykjavik.", gaz) == {"places": ["Reykjavik", "Sao Paulo"]}
    assert entity_tags(extract_entities("A week in Zurich, a week in Zürich.", gaz)) == ["entity:places:zurich"]


def test_in_german_text_a_capitalised_noun_is_not_a_name():
    # German capitalises every noun: "Garten", "Arzt", "Koch" and "Sommer" are census surnames or first
    # names, and became people; "Auto" and "Termin" concepts.
    gaz = load_gazetteer()
    assert extract_entities("Gestern hat Anna mit ihrem Bruder Thomas im Garten gearbeitet, danach haben wir Kuchen gegessen.", gaz) == {
        "people": ["Anna", "Thomas"],
    }
    assert extract_entities("Ich habe meinen Termin beim Arzt auf Freitag verschoben, weil das Auto in der Werkstatt ist.", gaz) == {}
    assert extract_entities("Der Koch im Restaurant hat uns ein neues Rezept gezeigt.", gaz) == {}
    assert extract_entities("Lena zieht im Sommer nach Hamburg, ihr neuer Job bei der Deutschen Bahn beginnt im August.", gaz) == {
        "people": ["Lena"], "places": ["Hamburg"], "concepts": ["Deutschen Bahn"],
    }
    assert extract_entities("Wir nutzen Docker und PostgreSQL für das Projekt Phoenix.", gaz) == {
        "tools": ["Docker", "PostgreSQL"], "projects": ["Phoenix"],
    }


def test_english_text_with_a_few_german_words_is_read_as_english():
    # "von", "der", "den", "dem" and "MIT" are German function words too; a few do not make a text German.
    gaz = load_gazetteer()
    english = dataclasses.replace(gaz, noun_language_words=frozenset())
    for text in ("Ludwig von Mises never taught at MIT; Sarah Connor read him in the den with Garten.",
                 "Dem reps met Van der Berg at the Des Moines den, then Garten and Amy left."):
        assert extract_entities(text, gaz) == extract_entities(text, english)
    assert extract_entities("On Monday Garten said the launch slipped.", gaz) == {"people": ["Garten"]}


def test_a_short_german_sentence_is_read_as_german():
    # Two German function words no other language shares, in a short text, make it German: "Bruder"
    # (a census surname) was a person and "Lena" was dropped ("arbeitet" is no English verb).
    gaz = load_gazetteer()
    assert extract_entities("Lena arbeitet bei Siemens, ihr Bruder bei BMW.", gaz) == {
        "people": ["Lena"], "organizations": ["BMW", "Siemens"],
    }
    # "im" (I'm) and "über" are English chat too: two of them do not make a text German.
    english = dataclasses.replace(gaz, noun_language_words=frozenset())
    text = "im so tired, über long day with Garten"
    assert extract_entities(text, gaz) == extract_entities(text, english) == {"people": ["Garten"]}


def test_a_very_short_german_sentence_is_read_as_german():
    # One German-only function word, or two German ones English spells too ("hat", "den"), with the
    # shared ones making up a large share of a short sentence: "Berliner", "Hund" and "Arzt" (census
    # surnames) were people, and "Lena" and "Paul" were dropped before "hat".
    gaz = load_gazetteer()
    assert extract_entities("Ich bin ein Berliner.", gaz) == {}
    assert extract_entities("Ich bin Arzt.", gaz) == {}
    assert extract_entities("Lena hat einen Hund.", gaz) == {"people": ["Lena"]}
    assert extract_entities("Paul hat den Bus verpasst.", gaz) == {"people": ["Paul"]}
    # Too short to be told German, but "ist" is no English word: Lena is its subject.
    assert extract_entities("Lena ist Lehrerin in München.", gaz)["people"] == ["Lena"]
    # One English word German spells too is not enough, nor is one German word in a longer sentence.
    english = dataclasses.replace(gaz, noun_language_words=frozenset())
    for text in ("Hat tip to Miller for the idea.", "I left my hat in the den with Miller and Garten.",
                 "Caroline said ich bin müde, then Miller left with Garten."):
        assert extract_entities(text, gaz) == extract_entities(text, english)
        assert "Miller" in extract_entities(text, gaz)["people"]



def test_a_sentence_opening_with_a_first_name_and_hat_is_german():
    # Three words, one of them German that English spells too: read as English, "Hunger" (a census
    # surname) was a person and Jonas dropped.
    gaz = load_gazetteer()
    assert extract_entities("Jonas hat Hunger.", gaz) == {"people": ["Jonas"]}
    assert extract_entities("Max hat Geburtstag.", gaz) == {"people": ["Max"]}
    assert extract_entities("Lena hat keine Zeit.", gaz) == {"people": ["Lena"]}  # "keine": German only
    # A hat elsewhere, or after a word that is no first name, is English's.
    english = dataclasses.replace(gaz, noun_language_words=frozenset())
    for text in ("Then Miller gave Sarah a hat.", "Santa hat for Miller.", "Sarah's hat is on Miller's desk."):
        assert extract_entities(text, gaz) == extract_entities(text, english)
        assert "Miller" in extract_entities(text, gaz)["people"]

def test_a_german_sentence_in_a_text_of_another_language_is_read_as_german():
    # The text as a whole is not German, its last sentence is: "Bruder" was a person and Lena dropped.
    gaz = load_gazetteer()
    assert extract_entities("Priya dijo que Mehmet y João se mudan a Lisboa. Lena arbeitet bei Siemens, ihr Bruder bei BMW.", gaz) == {
        "people": ["João", "Lena", "Mehmet", "Priya"], "places": ["Lisboa"], "organizations": ["BMW", "Siemens"],
    }
    # ... and the English sentence next to a German one is still read as English.
    assert extract_entities("On Monday Garten said the launch slipped. Lena arbeitet bei Siemens, ihr Bruder bei BMW.", gaz) == {
        "people": ["Garten", "Lena"], "organizations": ["BMW", "Siemens"],
    }


def test_a_name_that_starts_a_sentence_before_a_romance_verb_is_a_person():
    # A lone first name at a sentence start needs a follower that makes it the subject ("Hang in there"
    # is no person); the English and German verbs did not cover "Ana dijo" or "Marie habite".
    gaz = load_gazetteer()
    assert extract_entities("Ana dijo que vive en Madrid con su hermano Pablo.", gaz) == {
        "people": ["Ana", "Pablo"], "places": ["Madrid"],
    }
    assert extract_entities("Marie habite à Lyon et travaille chez Airbus.", gaz) == {
        "people": ["Marie"], "places": ["Lyon"], "organizations": ["Airbus"],
    }
    assert extract_entities("Hang in there, it gets better.", gaz) == {}


def test_a_project_cue_before_the_name_makes_a_project():
    assert extract_entities("We kicked off Project Phoenix with Sarah.", GAZ) == {"people": ["Sarah"], "projects": ["Phoenix"]}


def test_a_name_cut_by_the_read_limit_is_not_read():
    # Only MAX_TEXT characters are read; a cut through "Sarah" left a concept "Sa".
    filler = "we talked for a while. " * (MAX_TEXT // 23 + 1)
    text = filler[: MAX_TEXT - 3] + " Sarah Connor came by."
    assert text[MAX_TEXT - 2 : MAX_TEXT] == "Sa"
    assert extract_entities(text, GAZ) == {}
    assert extract_entities(filler[: MAX_TEXT - 40] + " then Sarah Connor came by.", GAZ) == {"people": ["Sarah Connor"]}


def test_a_first_name_with_accents_is_a_first_name():
    # The census lists are ASCII: "Zoë", "José" and "Renée" were not first names, so not people.
    gaz = load_gazetteer()
    assert extract_entities("Zoë said we met José and Renée at the café.", gaz) == {"people": ["José", "Renée", "Zoë"]}


def test_first_names_of_other_countries_are_first_names():
    # The census lists are American: "Priya", "Mehmet", "Jürgen", "João" were concepts or dropped.
    gaz = load_gazetteer()
    assert extract_entities("I met Priya and Rahul at the conference.", gaz) == {"people": ["Priya", "Rahul"]}
    assert extract_entities("Yesterday Mehmet said Jürgen would come.", gaz) == {"people": ["Jürgen", "Mehmet"]}
    assert extract_entities("João mora em Lisboa com a Inês.", gaz) == {"people": ["Inês", "João"], "places": ["Lisboa"]}
    # A name that is also a town is the town after a locative cue.
    assert extract_entities("She flew to Pau for the weekend.", gaz) == {"places": ["Pau"]}


def test_companies_beyond_the_american_ones_are_organizations():
    # "Siemens" was a person (a census surname), and is no name at all in German text without the list.
    gaz = load_gazetteer()
    assert extract_entities("Lena arbeitet jetzt bei Siemens und ihr Bruder ist bei BMW.", gaz) == {
        "people": ["Lena"], "organizations": ["BMW", "Siemens"],
    }
    assert extract_entities("She left Airbus for Boeing and paid with PayPal.", gaz) == {"organizations": ["Airbus", "Boeing", "PayPal"]}


def test_a_german_article_and_a_surname_make_a_title_not_a_person():
    # "Hard" and "Boot" are census surnames; two capitalised words ending in one were a person.
    gaz = load_gazetteer()
    assert extract_entities("Melanie: I saw Die Hard with Mark.", gaz) == {"people": ["Mark", "Melanie"], "concepts": ["Die Hard"]}
    assert extract_entities("We watched Das Boot with Sarah.", gaz) == {"people": ["Sarah"], "concepts": ["Das Boot"]}
    # "Des" is a given name too.
    assert extract_entities("Melanie met Des Lynam and Sarah.", gaz)["people"] == ["Des Lynam", "Melanie", "Sarah"]


def test_a_known_name_keeps_a_leading_common_word():
    # "New", "South", "Great" are common words, and a span's leading common words were dropped:
    # "New York" was the place "York", "New Zealand" the concept "Zealand".
    gaz = load_gazetteer()
    assert extract_entities("I went to New York.", gaz) == {"places": ["New York"]}
    assert extract_entities("New York is big.", gaz) == {"places": ["New York"]}
    assert extract_entities("We moved to New Zealand last year.", gaz) == {"places": ["New Zealand"]}
    assert extract_entities("South Africa is warm.", gaz) == {"places": ["South Africa"]}
    assert extract_entities("The New York City trip was fun.", gaz) == {"places": ["New York City"]}
    # A smaller town only after a word of place, as a one-word town: "In Salah" is a town too.
    assert extract_entities("We drove to Great Yarmouth.", gaz) == {"places": ["Great Yarmouth"]}
    assert "places" not in extract_entities("In Salah we trust.", gaz)
    # A leading "The" is still dropped, so the country has one slug however it is written.
    for text in ("The Netherlands won.", "We moved to the Netherlands.", "We moved to The Netherlands."):
        assert entity_tags(extract_entities(text, gaz)) == ["entity:places:netherlands"]
    assert extract_entities("Hey Caroline, how are you?", gaz) == {"people": ["Caroline"]}


def test_an_animal_named_is_named_like_a_person():
    # "Bello" is also a town (it was a place), "Biscuit" and "Mittens" are words (concepts).
    gaz = load_gazetteer()
    assert extract_entities("We have a dog named Bello.", gaz) == {"people": ["Bello"]}
    assert extract_entities("Wir haben einen Hund namens Bello.", gaz) == {"people": ["Bello"]}
    assert extract_entities("Our cat called Mittens hates Sarah.", gaz) == {"people": ["Mittens", "Sarah"]}
    assert extract_entities("She adopted a puppy named Biscuit.", gaz) == {"people": ["Biscuit"]}
    # Not after another noun, nor a name the lists know as something else.
    assert extract_entities("I live in a town called Bello.", gaz) == {"places": ["Bello"]}
    assert extract_entities("We have a dog named Google.", gaz) == {"organizations": ["Google"]}


def test_a_known_body_before_a_word_that_ends_bodies_names_is_read_with_it():
    # "Stanford" is a known body: it was taken alone, and "University" was left a place.
    gaz = load_gazetteer()
    assert extract_entities("She studies at Stanford University.", gaz) == {"organizations": ["Stanford University"]}
    assert extract_entities("He went to Harvard Business School.", gaz) == {"organizations": ["Harvard Business School"]}
    assert extract_entities("Stanford is great.", gaz) == {"organizations": ["Stanford"]}
    assert extract_entities("I work at Google.", gaz) == {"organizations": ["Google"]}


def test_a_sentence_case_word_and_the_before_a_name_are_not_part_of_it():
    gaz = load_gazetteer()
    assert extract_entities("Visited the Golden Gate Bridge with Tom.", gaz) == {"people": ["Tom"], "places": ["Golden Gate Bridge"]}
    assert extract_entities("Loved the Eiffel Tower!", gaz) == {"places": ["Eiffel Tower"]}
    # ... unless the lists know the whole: "Read the Docs" is a service.
    assert extract_entities("Docs are on Read the Docs.", gaz) == {"tools": ["Read the Docs"]}
    assert "concepts" not in extract_entities("Read the Docs hosts it.", gaz)


def test_a_known_place_is_not_read_as_a_noun_before_a_name_in_german():
    # "Angeles" is a first name: "Los" was read as a noun before it, like "Bruder" in "Bruder Thomas".
    gaz = load_gazetteer()
    assert extract_entities("Wir fliegen nach Los Angeles.", gaz) == {"places": ["Los Angeles"]}
    assert extract_entities("Ich und mein Bruder Thomas wohnen in Berlin.", gaz) == {"people": ["Thomas"], "places": ["Berlin"]}


def test_a_name_after_an_abbreviation_s_period_does_not_start_a_sentence():
    # "Dr. Patel": the period made "Patel" a sentence's first word, and a lone surname there was dropped.
    gaz = load_gazetteer()
    assert extract_entities("Scheduled a dentist appointment with Dr. Patel.", gaz) == {"people": ["Patel"]}
    assert extract_entities("Mr. Smith called.", gaz) == {"people": ["Smith"]}
    assert extract_entities("Meet Prof. Miller at noon.", gaz) == {"people": ["Miller"]}
    # "St." and "Mt." belong to the name: "St. Louis" was the person Louis.
    assert extract_entities("We went to St. Louis.", gaz) == {"places": ["St. Louis"]}
    assert extract_entities("Climbed Mt. Everest.", gaz) == {"places": ["Mt. Everest"]}


def test_a_language_or_nationality_is_a_concept():
    # Census surnames ("French", "Spanish") or a first name ("German") made them people.
    gaz = load_gazetteer()
    assert extract_entities("I speak French and German with Sarah.", gaz) == {"people": ["Sarah"], "concepts": ["French", "German"]}
    assert extract_entities("Started learning Spanish on Duolingo.", gaz) == {"tools": ["Duolingo"], "concepts": ["Spanish"]}
    assert extract_entities("John French called.", gaz) == {"people": ["John French"]}


def test_a_verb_that_starts_a_sentence_is_not_part_of_the_name_after_it():
    gaz = load_gazetteer()
    assert extract_entities("Visited Paris with Tom.", gaz) == {"people": ["Tom"], "places": ["Paris"]}
    assert extract_entities("Called Sarah Jones today.", gaz) == {"people": ["Sarah Jones"]}
    # A lone surname after a past or an imperative; a gerund before one starts a title.
    assert extract_entities("Called Jones about the contract.", gaz) == {"people": ["Jones"]}
    assert extract_entities("Heard Jones speak.", gaz) == {"people": ["Jones"]}
    assert extract_entities("Email Jones the file.", gaz) == {"people": ["Jones"]}
    assert extract_entities("Met Jones at lunch.", gaz) == {"people": ["Jones"]}
    assert extract_entities("Breaking Bad is great.", gaz) == {"concepts": ["Breaking Bad"]}
    # A first name or a known name is not a verb, and an unknown name after one stays as it was.
    assert extract_entities("Mohammed Ali boxed.", gaz) == {"people": ["Mohammed Ali"]}
    assert extract_entities("United Airlines lost my bag.", gaz) == {"concepts": ["United Airlines"]}


def test_words_that_are_census_surnames_but_no_one_s_name_here_are_concepts():
    gaz = load_gazetteer()
    # A holiday.
    assert extract_entities("We celebrated Christmas in Vermont.", gaz) == {"places": ["Vermont"], "concepts": ["Christmas"]}
    # After "the": a body or a thing, not a person.
    assert extract_entities("User has a meeting with the Board on Wednesday.", gaz) == {"concepts": ["Board"]}
    assert extract_entities("We stayed at the Marriott in Denver.", gaz) == {"places": ["Denver"], "concepts": ["Marriott"]}
    # Right after a known tool or body: a model's name, named with its maker ("Pro" alone would tie
    # every memory of any "... Pro" together).
    assert extract_entities("Ordered a MacBook Pro from Apple.", gaz) == {
        "organizations": ["Apple"], "tools": ["MacBook"], "concepts": ["MacBook Pro"],
    }
    # ... or of a product: not a town called Hub, not a person called Agent.
    assert extract_entities("Pull the image from Docker Hub first.", gaz) == {"tools": ["Docker"], "concepts": ["Docker Hub"]}
    assert extract_entities("Install the Hugging Face Agent Skill today.", gaz) == {
        "organizations": ["Hugging Face"], "concepts": ["Hugging Face Agent Skill"],
    }
    assert extract_entities("Push it to the Hugging Face Hub.", gaz) == {"organizations": ["Hugging Face"], "concepts": ["Hugging Face Hub"]}
    # A city there is still the city.
    assert extract_entities("I met John at Microsoft Ireland.", gaz) == {"people": ["John"], "places": ["Ireland"], "organizations": ["Microsoft"]}
    # A surname alone elsewhere is still a person.
    assert extract_entities("I met Smith at Google.", gaz) == {"people": ["Smith"], "organizations": ["Google"]}


def test_a_sentence_case_word_and_for_before_a_name_are_not_part_of_it():
    gaz = load_gazetteer()
    assert extract_entities("Deadline for Project Phoenix is Friday.", gaz) == {"projects": ["Phoenix"]}
    assert extract_entities("Thanks for Sarah Miller!", gaz) == {"people": ["Sarah Miller"]}
    # A name that holds "of" or "for" stays whole.
    assert extract_entities("Bank of America is big.", gaz) == {"organizations": ["Bank of America"]}
    assert extract_entities("Center for Disease Control said so.", gaz) == {"concepts": ["Center for Disease Control"]}


def test_an_imperative_that_starts_a_note_is_not_part_of_the_name_after_it():
    gaz = load_gazetteer()
    assert extract_entities("Email Sarah at sarah.jones@example.com.", gaz) == {"people": ["Sarah"]}
    assert extract_entities("Remind Tom to pay rent.", gaz) == {"people": ["Tom"]}
    assert extract_entities("Meet John Smith at noon.", gaz) == {"people": ["John Smith"]}
    assert extract_entities("Visit Paris in May.", gaz) == {"places": ["Paris"]}


@pytest.mark.parametrize("text, expected", [
    # Terse notes open with an irregular past, which no -ed / -ing rule sees: they were "Met Sarah",
    # "Told Anna" (people), "Met Priya" (a concept) and "Left Boston" (a person).
    ("Met Sarah at the conference.", {"people": ["Sarah"]}),
    ("Met Priya at the Boston Dynamics lab.", {"people": ["Priya"], "organizations": ["Boston Dynamics"]}),
    ("Told Anna about the move.", {"people": ["Anna"]}),
    ("Saw Tom and Maria yesterday.", {"people": ["Maria", "Tom"]}),
    ("Left Boston for good.", {"places": ["Boston"]}),
    ("Sent Maria the slides.", {"people": ["Maria"]}),
])
def test_an_irregular_past_that_opens_a_note_is_not_part_of_the_name_after_it(text, expected):
    assert extract_entities(text, load_gazetteer()) == expected


def test_a_name_no_list_knows_is_a_person_before_a_verb_only_people_do():
    gaz = load_gazetteer()
    assert extract_entities("Then Thandiwe asked about the budget.", gaz) == {"people": ["Thandiwe"]}
    # Teams speak too; and other verbs say nothing ("Zed is fast": an editor).
    assert extract_entities("Then Legal said no.", gaz) == {"concepts": ["Legal"]}
    assert extract_entities("I think Marketing wants a new logo.", gaz) == {"concepts": ["Marketing"]}
    assert extract_entities("We tried Zed and it is fast.", gaz) == {"concepts": ["Zed"]}


def test_german_countries_honorifics_pets_and_relatives():
    gaz = load_gazetteer()
    # Countries in German, Spanish, French ("Italien" was a concept); "waren" tells a German sentence.
    assert extract_entities("Wir waren im Sommer in Italien.", gaz) == {"places": ["Italien"]}
    assert extract_entities("María vive en España.", gaz) == {"people": ["María"], "places": ["España"]}
    # Whoever follows "Herr" or "Frau" is a person ("Herrn Müller" was a concept).
    assert extract_entities("Morgen treffe ich Herrn Müller bei Bosch.", gaz) == {"people": ["Müller"], "organizations": ["Bosch"]}
    assert extract_entities("Frau Schmidt arbeitet in Köln.", gaz) == {"people": ["Schmidt"], "places": ["Köln"]}
    # A pet after its noun; a relative after a possessive, in a sentence too short to be told German.
    assert extract_entities("Our cat Whiskers is sick.", gaz) == {"people": ["Whiskers"]}
    assert extract_entities("Der Hund Bello bellt.", gaz) == {"people": ["Bello"]}
    assert extract_entities("Unsere Katze Mimi schläft.", gaz) == {"people": ["Mimi"]}
    assert extract_entities("Mein Bruder Thomas wohnt in Berlin.", gaz) == {"people": ["Thomas"], "places": ["Berlin"]}
    # A first name of first names, and a German verb in -iert after a name.
    assert extract_entities("Sarah-Jane came by.", gaz) == {"people": ["Sarah-Jane"]}
    assert extract_entities("Anna-Lena studiert in Berlin.", gaz) == {"people": ["Anna-Lena"], "places": ["Berlin"]}


def test_a_body_and_a_city_whose_names_look_like_people():
    gaz = load_gazetteer()
    # "Face" is a census surname, and "Hague" one too: the lists know both as names of their own.
    assert extract_entities("She joined Hugging Face in March.", gaz) == {"organizations": ["Hugging Face"]}
    assert extract_entities("We flew to The Hague for the hearing.", gaz) == {"places": ["Hague"]}
    assert extract_entities("I went to the Hague with Maria.", gaz) == {"people": ["Maria"], "places": ["Hague"]}


def test_a_place_and_its_country_or_state_without_a_comma_are_two_places():
    gaz = load_gazetteer()
    # Both cities are first names too: read as one name, they were people.
    assert extract_entities("We moved from Berlin Germany to Austin Texas.", gaz) == {"places": ["Austin", "Berlin", "Germany", "Texas"]}
    assert extract_entities("He grew up in Springfield Illinois.", gaz) == {"places": ["Illinois", "Springfield"]}
    assert extract_entities("We landed in New York USA at noon.", gaz) == {"places": ["New York", "USA"]}
    # A name the lists know whole stays whole; without a word of place, or after "talked to", no pair.
    assert extract_entities("We went to New York City.", gaz) == {"places": ["New York City"]}
    assert extract_entities("I talked to Georgia Washington yesterday.", gaz) == {"people": ["Georgia Washington"]}
    assert extract_entities("I met Paris Hilton in Austin.", gaz) == {"people": ["Paris Hilton"], "places": ["Austin"]}


def test_a_gerund_and_a_surname_are_a_name_of_a_thing_not_a_person():
    gaz = load_gazetteer()
    assert extract_entities("He went to Burning Man again.", gaz) == {"concepts": ["Burning Man"]}
    assert extract_entities("We binge-watched Breaking Bad with Tom.", gaz) == {"people": ["Tom"], "concepts": ["Breaking Bad"]}
    # A first name that ends so is still one.
    assert extract_entities("I met Sterling Archer and Channing Tatum.", gaz) == {"people": ["Channing Tatum", "Sterling Archer"]}


def test_of_the_and_name_particles_with_an_article_keep_a_name_whole():
    gaz = load_gazetteer()
    assert extract_entities("I opened an account at Bank of the West.", gaz) == {"organizations": ["Bank of the West"]}
    assert extract_entities("We watched Lord of the Rings with Tom.", gaz) == {"people": ["Tom"], "concepts": ["Lord of the Rings"]}
    assert extract_entities("I met Ursula von der Leyen in Brussels.", gaz) == {"people": ["Ursula von der Leyen"], "places": ["Brussels"]}
    assert extract_entities("We met Carlos de la Vega and Anna.", gaz) == {"people": ["Anna", "Carlos de la Vega"]}
    # A first name before "of the" is a person of something; "for the" joins nothing.
    assert extract_entities("I met Sarah of the Design team.", gaz) == {"people": ["Sarah"], "concepts": ["Design"]}
    assert extract_entities("Thanks to Mike for the Python tips.", gaz) == {"people": ["Mike"], "tools": ["Python"]}


def test_an_identifier_is_one_name_and_the_words_around_it_are_not_part_of_it():
    gaz = load_gazetteer()
    # Before, "_" split it, and the sentence's first word joined the first part: "Set DATABASE", "URL".
    assert extract_entities("Set DATABASE_URL before starting the service.", gaz) == {"concepts": ["DATABASE_URL"]}
    assert extract_entities("I asked Sarah to set RECALL_LIMIT to 20 for Project Phoenix.", gaz) == {"people": ["Sarah"], "projects": ["Phoenix"], "concepts": ["RECALL_LIMIT"]}
    assert extract_entities("Export OPENAI_API_KEY first.", gaz) == {"concepts": ["OPENAI_API_KEY"]}
    # Lowercase, it is no name at all.
    assert extract_entities("I renamed my_var in Postgres.", gaz) == {"tools": ["Postgres"]}


def test_a_place_and_a_plural_name_a_team_or_a_company():
    gaz = load_gazetteer()
    # Denver, Dallas and Houston are first names too: read as people, the teams were persons.
    assert extract_entities("Went to see the Denver Broncos play.", gaz) == {"organizations": ["Denver Broncos"]}
    assert extract_entities("The Dallas Cowboys beat the Houston Rockets fans' favourite.", gaz) == {
        "organizations": ["Dallas Cowboys", "Houston Rockets"],
    }
    assert extract_entities("Sarah loves the New York Giants.", gaz) == {"people": ["Sarah"], "organizations": ["New York Giants"]}
    assert extract_entities("I love the Toronto Maple Leafs.", gaz) == {"organizations": ["Toronto Maple Leafs"]}
    assert extract_entities("She works at Texas Instruments.", gaz) == {"organizations": ["Texas Instruments"]}
    # A first name and a surname stay a person; a place's own suffix, or a place, stays a place.
    assert extract_entities("I met Austin Powers and Sydney Andrews.", gaz) == {"people": ["Austin Powers", "Sydney Andrews"]}
    assert extract_entities("We visited Palm Springs and Niagara Falls.", gaz) == {"places": ["Niagara Falls", "Palm Springs"]}
    assert extract_entities("Mom moved to Austin Texas.", gaz) == {"places": ["Austin", "Texas"]}
