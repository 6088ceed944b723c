"""Command-line tools: `python -m service.cli.importer` (bulk import of JSONL memories), `engram ...`."""
