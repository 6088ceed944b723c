"""The exceptions EngramStore raises. Each names the service's URL, so a log line says where it went wrong."""

from __future__ import annotations


class EngramStoreError(RuntimeError):
    """Any failure talking to Engram."""

    def __init__(self, message: str, *, url: str | None = None, status: int | None = None):
        super().__init__(message)
        self.url = url
        self.status = status


class EngramConnectionError(EngramStoreError):
    """The service could not be reached (refused, DNS, reset) or did not answer in time."""


class EngramTimeoutError(EngramConnectionError):
    """The service took longer than the store's timeout."""


class EngramAuthError(EngramStoreError):
    """401 (no valid token) or 403 (the token lacks a permission, or the admin token is needed)."""


class EngramRequestError(EngramStoreError, ValueError):
    """The service refused the input (400, 409, 413): the message is the service's own."""


class EngramServiceError(EngramStoreError):
    """The service failed (5xx) or answered something that is not its API."""


class EngramLimitError(EngramStoreError):
    """The operation needs more than the service's public routes can page through (see the message)."""
