"""Time: one reading of an instant, one calendar, one detector of dates in text.

instants     ISO 8601 instants: the parser, the pydantic `Instant` type of every request model, `iso`
periods      zones, days and calendar periods: the one rule for "today", "yesterday", "last week"
months       the month and weekday names
expressions  `time_query` and the request's time window (AutoMem's vocabulary)
mentions     the one detector of dates inside a text (queries and memory contents)
phrases      a query's dates as each surface takes them (Signet / parse_dates, Hindsight)
terms        `date_terms`: the days a memory was written on or speaks of, and a query's
"""
