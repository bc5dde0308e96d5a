"""Failed logins throttled on every password form: the API's token endpoint
(`POST /api/auth/token/`), the dashboard's login (`POST /accounts/login/`) and the admin's
(`POST /admin/login/`, through config/admin_site.py). One rule and one count for all three.

Failures are counted in fixed windows of LOGIN_FAILURE_WINDOW_SECONDS in the rate-limit cache
(config/security.py's counters: Redis when CACHE_URL names it, so every web worker shares
them), per client address (LOGIN_FAILURES_PER_ADDRESS, any username) and per username from that
address (LOGIN_FAILURES_PER_USERNAME); 0 turns a limit off. Once a count has reached its limit,
that address's next attempts on that username (or on any, for the address limit) are refused
with 429 and Retry-After before the password is even checked — a right password included, or
the answer would still tell a guess right from wrong — until the window ends. A successful
login counts nothing.

Why no limit on a username alone: anyone can type someone else's username, so such a limit
would let an outsider lock a researcher out of the dashboard and the API (the lesson of the
worker lock-out, F5). Guessing one account from many addresses is bounded by each address's
budget and by the password validators. Like the submission limits, the counts fail open when
the cache is down: a Redis restart must not lock every researcher out.
"""

import hashlib
import time
from collections.abc import Mapping

from django.conf import settings
from django.contrib.auth.views import LoginView
from django.http import HttpRequest, HttpResponse
from rest_framework import status
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from config.client_address import client_address
from config.security import counts_add, counts_read


def login_wait(request: HttpRequest | Request, username: str) -> int:
    """Seconds until this window ends if the address, or the address with this username, has
    used up its failed logins; 0 when a login may be tried."""
    limits, wait = _limits(request, username)
    if not limits:
        return 0
    counts = counts_read([key for key, _ in limits])
    return wait if any(count >= limit for count, (_, limit) in zip(counts, limits, strict=True)) else 0


def login_failure_record(request: HttpRequest | Request, username: str) -> None:
    """Count one failed login of `username` from the request's address."""
    limits, _ = _limits(request, username)
    if limits:
        counts_add([key for key, _ in limits], expiry=settings.LOGIN_FAILURE_WINDOW_SECONDS * 2)


def _limits(request: HttpRequest | Request, username: str) -> tuple[list[tuple[str, int]], int]:
    """The counters that apply with their limits, and the seconds left in this window."""
    seconds = max(1, settings.LOGIN_FAILURE_WINDOW_SECONDS)
    now = time.time()
    window = int(now // seconds)
    address = client_address(request)
    # Usernames are hashed so the key is short and printable whatever was typed; case and
    # surrounding space folded, so "Ada " and "ada" share a count.
    name = hashlib.sha256(username.strip().casefold().encode("utf-8", "replace")).hexdigest()[:32]
    checks = [
        (f"login:address:{address}:{window}", settings.LOGIN_FAILURES_PER_ADDRESS),
        (f"login:username:{address}:{name}:{window}", settings.LOGIN_FAILURES_PER_USERNAME),
    ]
    wait = max(1, int((window + 1) * seconds - now))
    return [(key, limit) for key, limit in checks if limit > 0], wait


def _message(wait: int) -> str:
    return f"Too many failed logins from this address: wait {wait} seconds before trying again."


class ThrottledObtainAuthToken(ObtainAuthToken):
    """DRF's token endpoint, with failed logins throttled."""

    def post(self, request: Request, *args, **kwargs) -> Response:
        given = request.data.get("username") if isinstance(request.data, Mapping) else None  # a JSON array has none
        username = given if isinstance(given, str) else ""
        wait = login_wait(request, username)
        if wait:
            return Response(
                {"code": "login_throttled", "message": _message(wait)},
                status=status.HTTP_429_TOO_MANY_REQUESTS,
                headers={"Retry-After": str(wait)},
            )
        try:
            return super().post(request, *args, **kwargs)
        except ValidationError:
            login_failure_record(request, username)
            raise


class ThrottledLoginView(LoginView):
    """Django's login page, with failed logins throttled."""

    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        wait = login_wait(request, request.POST.get("username", ""))
        if wait:
            context = self.get_context_data(form=self.form_class(request), throttled=_message(wait))
            response = self.render_to_response(context, status=status.HTTP_429_TOO_MANY_REQUESTS)
            response["Retry-After"] = str(wait)
            return response
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form):
        login_failure_record(self.request, self.request.POST.get("username", ""))
        return super().form_invalid(form)


obtain_auth_token = ThrottledObtainAuthToken.as_view()
