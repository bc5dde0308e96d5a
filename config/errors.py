"""The one error family. Domain code raises `ApplicationError` (or a subclass); the API
handler and the error template render it with its machine-readable `code`."""

from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler


class ApplicationError(Exception):
    """A domain error a user can act on: `code` for machines, `message` for people."""

    code = "error"
    http_status: int = status.HTTP_400_BAD_REQUEST

    def __init__(self, message: str, *, code: str | None = None, details: list | dict | None = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details = details if details is not None else []

    def as_dict(self) -> dict:
        body: dict[str, object] = {"code": self.code, "message": self.message}
        if self.details:
            body["details"] = self.details
        return body


class NotFound(ApplicationError):
    code = "not_found"
    http_status = status.HTTP_404_NOT_FOUND


class Conflict(ApplicationError):
    code = "conflict"
    http_status = status.HTTP_409_CONFLICT


class Gone(ApplicationError):
    """It existed, and was withdrawn on purpose (a revoked participant link)."""

    code = "gone"
    http_status = status.HTTP_410_GONE


def api_exception_handler(exc, context):
    """DRF exception handler: ApplicationError → its status and body; the rest as DRF does."""
    if isinstance(exc, ApplicationError):
        return Response(exc.as_dict(), status=exc.http_status)
    return exception_handler(exc, context)


class TooBusy(ApplicationError):
    """A cap on what one client or one entry point may take at once: try again later."""

    code = "too_busy"
    http_status: int = status.HTTP_429_TOO_MANY_REQUESTS
    retry_after = 60
