"""The project's exceptions. Each carries its HTTP status; service/api/errors.py maps them onto the
one error shape. Nothing of the service is imported here, so every layer may raise them."""

from __future__ import annotations


class EngramError(Exception):
    status_code = 500

    def __init__(self, message: str, *, status_code: int | None = None, extra: dict | None = None, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.message = message
        if status_code is not None:
            self.status_code = status_code
        self.extra = extra or {}
        self.headers = headers


class BadRequest(EngramError):
    status_code = 400


class Unauthorized(EngramError):
    status_code = 401


class Forbidden(EngramError):
    status_code = 403


class NotFound(EngramError):
    status_code = 404


class Conflict(EngramError):
    status_code = 409


class EngineUnavailable(EngramError):
    """OpenSearch cannot be reached or refused the request for a reason that is not the caller's fault."""

    status_code = 503
