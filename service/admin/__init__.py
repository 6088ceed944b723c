"""Admin and data lifecycle: backup and restore, export and import, re-embedding, snapshots."""
