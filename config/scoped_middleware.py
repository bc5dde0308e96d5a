"""Sessions, authentication and messages, skipped on the worker's HIT page.

The HIT page (`/hit/<uuid>/` and its submit) is shown inside a marketplace's third-party
iframe: it works without a session cookie (its form carries a signed token,
crowd/hit_page/tokens.py), has no logged-in user and shows no messages, and none of its
views, templates or middleware reads `request.session`, `request.user` or the message store
(tests/crowd/hit_page/test_pages.py holds that). These three set themselves up on every
request and look at every response all the same, a share of each answer's CPU under load
(benchmarks/load). Here each is Django's own class, run as Django runs it on every other
path; on the HIT page's paths it hands the request straight on. Subclasses, so Django's
checks (the admin's included) still find them in MIDDLEWARE. Middleware that guards the
HIT page (security headers, the HTTPS redirect, CSRF, rate limits, the CSP) is not scoped.
"""

from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware

WORKER_PAGE_PREFIXES = ("/hit/",)


def worker_page(request) -> bool:
    return request.path_info.startswith(WORKER_PAGE_PREFIXES)


class SessionsOffWorkerPages(SessionMiddleware):
    def __call__(self, request):
        return self.get_response(request) if worker_page(request) else super().__call__(request)


class AuthenticationOffWorkerPages(AuthenticationMiddleware):
    def __call__(self, request):
        return self.get_response(request) if worker_page(request) else super().__call__(request)


class MessagesOffWorkerPages(MessageMiddleware):
    def __call__(self, request):
        return self.get_response(request) if worker_page(request) else super().__call__(request)
