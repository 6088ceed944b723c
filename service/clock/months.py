"""The month and weekday names every date reader shares (English, full or abbreviated, any case)."""

from __future__ import annotations

MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december")
# name -> 1..12: the full names, their first three letters, and "sept".
MONTHS: dict[str, int] = {name: i + 1 for i, name in enumerate(MONTH_NAMES)} | {name[:3]: i + 1 for i, name in enumerate(MONTH_NAMES)} | {"sept": 9}
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
# A regex group matching any month name (longest first, so "september" is not read as "sep").
MONTH_PATTERN = "(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + ")"
# Month names that are also common words ("I may go", "they march on", "Jan said"): they name a month
# when capitalised, or in lower case only inside a full date with a day and a year ("may 13 2026").
COMMON_WORDS = frozenset({"may", "march", "jan", "mar", "sep", "dec"})


def month_number(name: str, *, full_date: bool = False) -> int | None:
    """1..12 for a month name ("May", "sept.", "DECEMBER"); None for a common word that is not one here."""
    key = name.lower().rstrip(".")
    if key in COMMON_WORDS and not name[0].isupper() and not full_date:
        return None
    return MONTHS.get(key)


def weekday_number(name: str) -> int:
    """0 (Monday) .. 6 (Sunday)."""
    return WEEKDAYS.index(name.lower())

