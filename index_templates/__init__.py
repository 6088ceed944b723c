"""Index templates (memories, edges, consolidation, banks, ...) and OpenSearch Dashboards saved
objects, as data: applied by service/storage/bootstrap.py and `engram dashboards install`, shipped
in the wheel as this package's data (read with importlib.resources)."""
