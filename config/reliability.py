"""What a worker sees when the database is unreachable: a clear "not saved — try again".

A submission whose transaction could not reach the database stored nothing (the assignment
and its labels are written in one transaction), so the honest answer is 503 with
Retry-After and a message; the HIT page (static/js/hit.js) shows it and keeps the worker's
answers in the page, and the same submission sent again succeeds once the database is back.
Other pages get the same 503 instead of a 500.
"""

import logging

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.html import escape

from config.csp import page_policy
from config.hit_hooks import hit_frame_ancestors

logger = logging.getLogger(__name__)
RETRY_AFTER_SECONDS = 10
MESSAGE = (
    "Your answer was not saved: our database is not answering right now. Your answers are still in the "
    "page: please submit again in a moment."
)


class DatabaseUnavailableMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, (OperationalError, InterfaceError)):
            return None
        logger.error("database unavailable during %s %s: %s", request.method, request.path, exception)
        if "application/json" in request.headers.get("Accept", ""):
            response: HttpResponse = JsonResponse({"code": "database_unavailable", "message": MESSAGE}, status=503)
        else:
            response = HttpResponse(
                '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Not saved</title></head>'
                f'<body><main><h1>Not saved — please try again</h1><p role="alert">{escape(MESSAGE)}</p>'
                "<p>Use your browser's Back button to return to the task.</p></main></body></html>",
                status=503,
            )
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        if request.path.startswith(("/hit/", "/s/")):
            response["Content-Security-Policy"] = page_policy(frame_ancestors=" ".join(hit_frame_ancestors()))
            response.xframe_options_exempt = True
        return response
