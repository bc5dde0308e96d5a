"""Answers to requests no view answers: `handler400` for a request Django refuses before
any view runs (a body it cannot parse, more fields than DATA_UPLOAD_MAX_NUMBER_FIELDS, more
bytes than DATA_UPLOAD_MAX_MEMORY_SIZE: Django raises these while something reads
`request.POST`, and the submission rate limit does, first), `handler404` for an address
no route matches.

The answer has the shape of every other error: JSON `{code, message}` when the client asks
for JSON (and on the API), else the error page (Django's own for a 404 outside the API and
the HIT). Under /hit/ and /s/ it is shown inside MTurk's iframe, so it carries the HIT frame
headers, as the HIT pages do. Django has no 413 handler: an oversized body is a 400 that
says so.
"""

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.multipartparser import MultiPartParserError
from django.shortcuts import render
from django.views import defaults

from config.csp import page_policy
from config.errors import ApplicationError, NotFound
from config.hit_hooks import hit_frame_ancestors

FRAMED_PREFIXES = ("/hit/", "/s/")
JSON_PREFIXES = ("/api/",)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    error = request_refusal(exception)
    if _wants_json(request):
        return _framed(request, JsonResponse(error.as_dict(), status=error.http_status))
    return _framed(request, render(request, "hit/error.html", {"error": error}, status=error.http_status))


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """Never the exception's text: the resolver's names the routes it tried."""
    error = NotFound("Nothing is at this address.")
    if _wants_json(request):
        return _framed(request, JsonResponse(error.as_dict(), status=error.http_status))
    if request.path.startswith(FRAMED_PREFIXES):
        return _framed(request, render(request, "hit/error.html", {"error": error}, status=error.http_status))
    return defaults.page_not_found(request, exception)


def _wants_json(request: HttpRequest) -> bool:
    return request.path.startswith(JSON_PREFIXES) or "application/json" in request.headers.get("Accept", "")


def _framed(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    """Under /hit/ and /s/: embeddable by MTurk's worker sites, like the HIT pages."""
    if request.path.startswith(FRAMED_PREFIXES):
        response["Content-Security-Policy"] = page_policy(frame_ancestors=" ".join(hit_frame_ancestors()))
        response.xframe_options_exempt = True
    return response


def request_refusal(exception: Exception | None) -> ApplicationError:
    """What was wrong with the request, as far as Django's exception tells; never its text
    (a DisallowedHost's would name the ALLOWED_HOSTS setting)."""
    if isinstance(exception, TooManyFieldsSent):
        limit, code, what = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS, "too_many_fields", "fields"
    elif isinstance(exception, TooManyFilesSent):
        limit, code, what = settings.DATA_UPLOAD_MAX_NUMBER_FILES, "too_many_files", "files"
    elif isinstance(exception, RequestDataTooBig):
        limit, code, what = settings.DATA_UPLOAD_MAX_MEMORY_SIZE, "request_too_large", "bytes of form data"
    elif isinstance(exception, MultiPartParserError):
        return ApplicationError(
            "The request was not processed: its form data is malformed (an unreadable multipart body).",
            code="malformed_form_data",
        )
    else:
        return ApplicationError("The request was not processed: it is malformed.", code="bad_request")
    return ApplicationError(f"The request was not processed: it has more than {limit:,} {what}.", code=code)
