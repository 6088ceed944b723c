"""Consolidation: decay, creative association, clustering and controlled forgetting (spec 003).

`relevance`, `clusters` and `creative` are pure (no I/O, unit-tested with pinned numbers);
`engine` reads and writes through the memory and edge stores; `runner` runs a mode and shapes the
result; `history` keeps runs and the schedule in the engine; `scheduler` runs each task on its own
interval.
"""
