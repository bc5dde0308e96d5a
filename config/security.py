"""Security middleware: a Content-Security-Policy on every page, and rate limits on the
endpoints crowdworkers post to.

CSP. HIT pages send their own policy (crowd/hit_page/headers.py: framed by MTurk's worker
sites). Every other response gets `default-src 'self'` with no inline script or style, and
`frame-ancestors` matching its X-Frame-Options ('none' for DENY, 'self' for SAMEORIGIN).
The API's Swagger UI injects its own <style> elements, so /api/docs/ allows inline style
(not script). The local MTurk and Prolific endpoints imitate other sites for rehearsals and
are left alone; production never mounts them.

Rate limits. Submissions (`POST /hit/<uuid>/submit/`) and the session's copy of an answer
(`POST /s/<key>/mturk/externalSubmit`) are counted per client address, and per submitter —
the signed token of the page that posts (a page load's own), or the session's secret key —
in fixed one-minute windows in the cache. Worker ids are not secret: a flood carrying a
victim's id, with no token or with a token of its own, costs the victim nothing (issue 15,
F5). The counts live in the cache (Redis when CACHE_URL names it, so every gunicorn
worker shares the counts). Over a limit: 429 with Retry-After and a message that says the
answer was not taken and when to send it again. A person needs well under a submission a
second; the limits (settings SUBMIT_RATE_PER_WORKER, SUBMIT_RATE_PER_ADDRESS, per minute,
0 = off) stop scripts and retry storms, not people. The failed-login throttle
(config/login_throttle.py) counts with the same counters (`counts_add`, `counts_read`). Both
read the client address one way: config/client_address.py.
"""

import functools
import logging
import re
import time

import redis
from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.html import escape

from config.client_address import client_address
from config.csp import page_policy
from config.hit_hooks import hit_frame_ancestors, submit_token_digest

logger = logging.getLogger(__name__)
SUBMIT_PATHS = re.compile(r"^/(hit/(?P<task>[0-9a-f-]{36})/submit/|s/(?P<session>[0-9a-f-]{36})/mturk/externalSubmit)$")
UNPOLICED_PREFIXES = ("/localturk/", "/localprolific/")
WINDOW_SECONDS = 60


class ContentSecurityPolicyMiddleware:
    """Listed before XFrameOptionsMiddleware, so it sees the X-Frame-Options that one set."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if "Content-Security-Policy" in response or request.path.startswith(UNPOLICED_PREFIXES):
            return response
        framing = response.get("X-Frame-Options", "").upper()
        ancestors = "'self'" if framing == "SAMEORIGIN" else "'none'"
        response["Content-Security-Policy"] = page_policy(
            frame_ancestors=ancestors, inline_style=request.path.startswith("/api/docs/")
        )
        return response


class SubmissionRateLimitMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method == "POST" and SUBMIT_PATHS.match(request.path):
            wait = self._over_limit(request)
            if wait:
                return _too_many(request, wait)
        return self.get_response(request)

    def _over_limit(self, request: HttpRequest) -> int:
        """Seconds until the window ends if this request is over a limit, else 0."""
        now = time.time()
        window = int(now // WINDOW_SECONDS)
        wait = max(1, int((window + 1) * WINDOW_SECONDS - now))
        checks = [("address", client_address(request), settings.SUBMIT_RATE_PER_ADDRESS)]
        # The submitter costs the form's parsing and the token's signature check: only for a limit that counts it.
        submitter = _submitter(request) if settings.SUBMIT_RATE_PER_WORKER else None
        if submitter:
            checks.append(("submitter", submitter, settings.SUBMIT_RATE_PER_WORKER))
        limits = [(f"rate:{kind}:{key}:{window}", limit) for kind, key, limit in checks if limit]
        counts = counts_add([key for key, _ in limits]) if limits else []
        return wait if any(count > limit for count, (_, limit) in zip(counts, limits, strict=True)) else 0


def _submitter(request: HttpRequest) -> str | None:
    """Who posts, by what they cannot borrow from someone else: the page's signed token (valid
    for this task), or the session key in the path. None for a post with neither."""
    match = SUBMIT_PATHS.match(request.path)
    assert match is not None
    if match.group("session"):
        return f"session:{match.group('session')}"
    return submit_token_digest(token=request.POST.get("token", ""), task_uuid=match.group("task"))


def counts_add(keys: list[str], *, expiry: int = WINDOW_SECONDS * 2) -> list[int]:
    """Each key's count plus one (a key names its window; it is dropped `expiry` seconds after
    its first count); 0 when the cache is down: the limits fail open, since refusing every
    answer while Redis restarts would lose work."""
    cache = caches["ratelimit"]
    try:
        if isinstance(cache, RedisCache):
            return _redis_counts(keys, expiry)
        return [_cache_count(cache, key, expiry) for key in keys]
    except Exception as error:
        logger.warning("rate limit not counted, the cache failed: %s", error)
        return [0] * len(keys)


def counts_read(keys: list[str]) -> list[int]:
    """Each key's count as `counts_add` left it, nothing added; 0 for a key never counted, and
    for all when the cache is down (failing open, as counting does)."""
    cache = caches["ratelimit"]
    try:
        if isinstance(cache, RedisCache):
            values = _redis_client(_redis_location()).mget([f"salience:{key}" for key in keys])
        else:
            found = cache.get_many(keys)
            values = [found.get(key) for key in keys]
    except Exception as error:
        logger.warning("rate limit not read, the cache failed: %s", error)
        return [0] * len(keys)
    return [int(value or 0) for value in values]


def _redis_counts(keys: list[str], expiry: int) -> list[int]:
    """Every key counted in one round trip: SET NX starts a window's counter with its expiry,
    INCR counts. Through Django's cache API each key cost three round trips (add; incr is
    EXISTS then INCR), about 1 ms of CPU per submission for the two limits."""
    pipeline = _redis_client(_redis_location()).pipeline(transaction=False)
    for key in keys:
        pipeline.set(f"salience:{key}", 0, ex=expiry, nx=True)
        pipeline.incr(f"salience:{key}")
    return [int(count) for count in pipeline.execute()[1::2]]


def _redis_location() -> str:
    """The ratelimit cache's server; with several, Django writes to the first."""
    location = settings.CACHES["ratelimit"]["LOCATION"]
    servers = location.split(",") if isinstance(location, str) else list(location)
    return servers[0].strip()


@functools.cache
def _redis_client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)


def _cache_count(cache, key: str, expiry: int) -> int:
    cache.add(key, 0, timeout=expiry)
    try:
        return cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, timeout=expiry)
        return 1


def _too_many(request: HttpRequest, wait: int) -> HttpResponse:
    message = (
        f"Too many submissions in a short time: this answer was not saved. "
        f"Wait {wait} seconds and submit it again; your answers are still in the page."
    )
    if "application/json" in request.headers.get("Accept", ""):
        response: HttpResponse = JsonResponse({"code": "rate_limited", "message": message}, status=429)
    else:
        response = HttpResponse(
            f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Please wait</title></head>'
            f'<body><main><h1>Please wait a moment</h1><p role="alert">{escape(message)}</p>'
            f"<p>Use your browser's Back button to return to the task.</p></main></body></html>",
            status=429,
        )
    response["Retry-After"] = str(wait)
    # Shown inside MTurk's iframe, like the HIT page it answers.
    response["Content-Security-Policy"] = page_policy(frame_ancestors=" ".join(hit_frame_ancestors()))
    response.xframe_options_exempt = True
    return response
