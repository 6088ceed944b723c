"""Signet's recall API (spec 004) as a thin surface over the recall pipeline: routes, request and
response models, date phrases and temporal facets, session dedupe, response shaping."""
