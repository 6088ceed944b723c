"""Process-wide counters for code that has no app at hand (the engine client's error mapping).
Each app's /metrics registry includes them (service/observability/metrics.py)."""

from __future__ import annotations

from prometheus_client import Counter

# The kinds storage.client.engine_errors maps a failure to (a bounded label set).
ENGINE_ERROR_KINDS = ("unreachable", "overloaded", "rejected", "too_large", "missing_index", "error", "client")

ENGINE_ERRORS = Counter(
    "engram_engine_errors", "Engine (OpenSearch) failures by kind, as mapped to the service's errors: unreachable "
    "(connection failed or timed out), overloaded (429), rejected (the engine refused a request Engram built: 400), "
    "too_large (413), missing_index (an index of the store is gone), error (other engine statuses), client (the client library itself failed)",
    ["kind"], registry=None,
)
for _kind in ENGINE_ERROR_KINDS:  # every series exists from the start, so rate() sees the first failure
    ENGINE_ERRORS.labels(_kind)


def engine_error(kind: str) -> None:
    ENGINE_ERRORS.labels(kind if kind in ENGINE_ERROR_KINDS else "error").inc()
