"""Domain errors: services raise these; the API maps them to 400/409 and pages show them as form errors."""

from __future__ import annotations


class DomainError(Exception):
    """A rule of the domain was broken. `status` is the HTTP status the API answers with."""

    status: int = 409
    code: str = "conflict"

    def __init__(self, message: str, *, errors: list[str] | dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.errors = errors


class InvalidInput(DomainError):
    """The request was well-formed but its values break a rule (a 400)."""

    status = 400
    code = "invalid"


class NotFound(DomainError):
    status = 404
    code = "not_found"


class Conflict(DomainError):
    status = 409
    code = "conflict"


class PermissionDenied(DomainError):
    status = 403
    code = "forbidden"
