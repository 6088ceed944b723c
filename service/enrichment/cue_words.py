"""The entity extractor's word lists: the words around a capitalised word that tell what it is
(service/enrichment/extractor.py reads them; the names, places and bodies are gazetteer.json's)."""

from __future__ import annotations

# Function words of the list that English chat ("im" for I'm, "über") or Dutch ("wie", "hier", "waren") use too.
SHARED_CUES = frozenset({"im", "über", "das", "ein", "wie", "hier", "noch", "mein", "dann", "waren"})
# German function words that are English (or Dutch, or names) too, so not in the list: support only.
BORROWED_CUES = frozenset({"bin", "hat", "er", "es", "sie", "der", "die", "den", "dem", "des", "mit", "zu"})
CONNECTORS = frozenset({"of", "the", "de", "la", "le", "van", "von", "der", "du", "da", "del", "&", "for", "on"})
# Of those, the ones an article may follow inside a name ("Bank of the West", "Ursula von der Leyen").
NAME_CONNECTORS = frozenset({"of", "de", "van", "von", "du", "da", "del"})
# In German text, a first name before one of these verbs is their subject ("Lena will ...", "Tom
# kann ..."); other verbs in the third person end in -t (the extractor's _GERMAN_THIRD_PERSON).
GERMAN_NAME_FOLLOWERS = frozenset({"war", "wird", "kann", "will", "muss", "soll", "mag"})

# Written in lowercase, a known name counts only if its usual spelling is not a plain capitalised
# word ("MongoDB", "AWS", "Node.js") or it is one of these technical words; "outlook", "word",
# "target" or "slack" in lowercase are English.
TECH_LOWER = frozenset({
    "docker", "kubernetes", "postgres", "terraform", "ansible", "jenkins", "webpack", "django", "flask", "fastapi",
    "pytorch", "tensorflow", "numpy", "jupyter", "vim", "emacs", "xcode", "jira", "figma", "photoshop", "grafana",
    "prometheus", "nginx", "heroku", "vercel", "cloudflare", "ollama", "langchain", "kotlin", "haskell", "elixir",
    "erlang", "clojure", "redis", "kafka", "cassandra", "elasticsearch", "opensearch", "qdrant", "falkordb", "sqlite",
    "mysql", "mongodb", "postgresql", "typescript", "javascript", "svelte", "laravel", "ubuntu", "debian", "linux",
})
# German articles, alone or in a preposition ("im" = "in dem"): what follows is a noun, not a name.
ARTICLES = frozenset({
    "der", "die", "das", "den", "dem", "des", "ein", "eine", "einen", "einem", "einer", "eines",
    "im", "ins", "am", "zum", "zur", "beim", "vom",
})
# An animal's name follows these ("a dog named Bello"): a name like a person's, wherever the lists
# put the word (Bello is also a town; "Biscuit" and "Oreo" are words).
NAMING_WORDS = frozenset({"named", "called", "namens"})
PET_NOUNS = frozenset({
    "dog", "dogs", "puppy", "pup", "cat", "cats", "kitten", "kitty", "horse", "pony", "hamster", "rabbit", "bunny",
    "parrot", "bird", "turtle", "tortoise", "goldfish", "fish", "snake", "lizard", "ferret", "pet", "pig", "goat",
    "hund", "katze", "kater", "pferd",
})
GERMAN_PET_NOUNS = frozenset({"hund", "katze", "kater", "pferd"})  # capitalised, they join the name after them
# German possessives that start a sentence ("Unsere Katze Mimi ..."): not part of the name after them.
GERMAN_POSSESSIVES = frozenset({"mein", "meine", "dein", "deine", "sein", "seine", "ihr", "ihre", "unser", "unsere", "euer", "eure"})
# German articles no given name spells ("Des" is one): "Die Hard" and "Das Boot" are titles, not people.
TITLE_ARTICLES = frozenset({"der", "die", "das", "den", "dem"})
# After a capitalised name that starts a sentence, these words make it a subject or vocative
# ("Jon is ...", "Luna and Oliver"); any other lowercase word makes it an ordinary word ("Hang in").
NAME_FOLLOWERS = frozenset({
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
FOREIGN_NAME_FOLLOWERS = frozenset({
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
# Languages and nationalities: a concept alone, never a person (many are census surnames: "French",
# "German", "Spanish", "English").
NATIONALITIES = frozenset({
    "english", "french", "german", "spanish", "italian", "portuguese", "dutch", "irish", "welsh", "scottish", "british",
    "american", "canadian", "mexican", "brazilian", "argentinian", "australian", "russian", "ukrainian", "polish",
    "czech", "greek", "turkish", "swedish", "norwegian", "danish", "finnish", "swiss", "austrian", "belgian",
    "chinese", "japanese", "korean", "vietnamese", "thai", "indian", "hindi", "arabic", "hebrew", "persian", "latin",
})
# Holidays: a concept alone, never a person ("Christmas", "Easter" are census surnames).
HOLIDAYS = frozenset({
    "christmas", "easter", "thanksgiving", "halloween", "hanukkah", "chanukah", "passover", "diwali", "ramadan",
    "eid", "kwanzaa", "pentecost", "lent", "advent", "epiphany", "weihnachten", "ostern", "silvester",
})
# Verbs a note to self starts with before a name ("Email Sarah ...", "Remind Tom ..."): not part of it.
IMPERATIVES = frozenset({
    "email", "e-mail", "call", "phone", "text", "ping", "message", "ask", "tell", "remind", "invite", "thank", "meet",
    "visit", "contact", "congratulate", "pay", "book", "schedule", "follow",
})
# Irregular pasts that open a terse note before whom or where ("Met Sarah at ...", "Told Anna ...",
# "Left Boston"): the -ed / -ing rule cannot see them, and some are census surnames ("Gave", "Heard").
IRREGULAR_PASTS = frozenset({
    "met", "saw", "told", "gave", "sent", "left", "brought", "taught", "paid", "wrote", "drove", "bought", "found",
    "heard", "caught",
})
# What only people do: an unknown capitalised word before one of these is a person ("Then Thandiwe
# asked ..."). Not "is" or "uses": "Zed is fast" is an editor.
PERSON_VERBS = frozenset({
    "said", "says", "told", "tells", "asked", "asks", "replied", "texted", "mentioned", "thinks", "thought", "feels",
    "felt", "wants", "wanted", "loves", "loved", "married", "hugged", "laughed", "smiled", "cried", "apologized",
})
# ... but teams do it too ("Legal said no", "Marketing wants a new logo").
TEAMS = frozenset({
    "marketing", "sales", "legal", "finance", "engineering", "support", "product", "design", "security", "operations",
    "ops", "management", "leadership", "procurement", "compliance", "accounting", "research", "recruiting",
    "facilities", "infrastructure", "platform", "data", "devops", "editorial", "admissions", "payroll",
})
# Before a name they make it a person, whatever the lists say of it ("Frau Schmidt", "Herrn Müller").
# English ones ("Mr", "Dr") are common words: dropped before the name, which is then read as usual.
HONORIFICS = frozenset({"herr", "herrn", "frau", "señor", "señora", "monsieur", "madame", "signor", "signora"})
# "to" after these names someone, not somewhere ("talked to Georgia Washington").
TO_PERSON_VERBS = frozenset({
    "talk", "talked", "talking", "talks", "speak", "spoke", "speaking", "said", "say", "says", "write", "wrote", "writing",
    "reply", "replied", "listen", "listened", "listening", "send", "sent", "give", "gave", "given", "married", "engaged",
    "introduced", "waved", "texted", "emailed", "mentioned", "explained", "belongs", "belonged", "lent", "sold", "showed",
})
