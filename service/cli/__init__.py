"""The `engram` command (service/cli/main.py) and its subcommands."""
