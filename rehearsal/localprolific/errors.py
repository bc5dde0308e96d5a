"""Errors the local endpoint answers with.

`ApiError` is a refusal of the researcher API, sent as
`{"error": {"status": 400, "title": "...", "detail": ...}}` with that HTTP status (the
envelope is our reading of Prolific's answers, not documented); `detail` is a string or,
for invalid fields, `{field: [messages]}`. `ParticipantError` is a refusal on the
participant side (start, complete, return), sent as `{"code", "message"}` or an HTML page.
"""

from rest_framework import status

from config.errors import ApplicationError


class ApiError(Exception):
    def __init__(self, http_status: int, title: str, detail: str | dict | None = None, *, headers: dict | None = None):
        super().__init__(title)
        self.http_status = http_status
        self.title = title
        self.detail = detail
        self.headers = headers or {}

    def body(self) -> dict:
        error = {"status": self.http_status, "title": self.title}
        if self.detail is not None:
            error["detail"] = self.detail
        return {"error": error}


def invalid(detail: str | dict) -> ApiError:
    return ApiError(status.HTTP_400_BAD_REQUEST, "Invalid request", detail)


def not_found(what: str) -> ApiError:
    return ApiError(status.HTTP_404_NOT_FOUND, "Not found", f"{what} does not exist.")


def not_allowed_now(detail: str) -> ApiError:
    """A transition the object's status does not allow."""
    return ApiError(status.HTTP_400_BAD_REQUEST, "Invalid status transition", detail)


UNAUTHORIZED = ApiError(status.HTTP_401_UNAUTHORIZED, "Unauthorized", "No valid API token was provided.")


def throttled(retry_after: int | None) -> ApiError:
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
    return ApiError(status.HTTP_429_TOO_MANY_REQUESTS, "Too many requests", "Request was throttled.", headers=headers)


SERVICE_FAULT = ApiError(status.HTTP_503_SERVICE_UNAVAILABLE, "Service unavailable", "Please retry later.")
LOST_RESPONSE = ApiError(status.HTTP_504_GATEWAY_TIMEOUT, "Gateway timeout", "The upstream did not answer in time.")
INTERNAL = ApiError(status.HTTP_500_INTERNAL_SERVER_ERROR, "Internal server error", None)


class ParticipantError(ApplicationError):
    """A refused participant action (start, complete, return) in the simulator."""

    def __init__(self, message: str, *, code: str, http_status: int = status.HTTP_409_CONFLICT):
        super().__init__(message, code=code)
        self.http_status = http_status
