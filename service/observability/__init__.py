"""Request ids (request_id.py), Prometheus metrics (metrics.py, counters.py), the recall log
(recall_log.py), and their wiring into the app (app.py). Nothing is imported here: storage and
error handling import the small modules without pulling in the app."""
