"""The words a recall request is made of, once: every surface's request model and the one internal
RecallRequest type their fields with these, and the builders in this package key their DSL by them."""

from __future__ import annotations

from typing import Literal, get_args

# spec 000 `sort`; `score` is the ranked order, the others are listing orders (clauses.SORTS).
Sort = Literal["score", "time_desc", "time_asc", "updated_desc", "updated_asc"]
# spec 000 `tag_mode` / `tag_match`.
TagMode = Literal["any", "all"]
TagMatch = Literal["prefix", "exact"]
# spec 000 "State Filtering Parameters".
StateMode = Literal["current", "history"]
RecencyBias = Literal["off", "on", "auto"]
ScoringProfile = Literal["engram", "automem"]
# Hindsight's fact types (spec 002 `types`).
FactType = Literal["world", "experience", "observation"]

SORTS: tuple[str, ...] = get_args(Sort)
FACT_TYPES: tuple[str, ...] = get_args(FactType)
