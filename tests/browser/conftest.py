"""Playwright driving Debian's Chromium against pytest-django's live server.

Chromium missing: a failure with CI=true, a skip elsewhere (like tests.conftest.require_service).
Every page a test opens must load without console errors (a CSP violation is one) and
without a request leaving the machine.
"""

import os
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.conf import settings

from tests.conftest import CI

# Playwright's sync API runs an event loop in this thread; Django then refuses ORM calls
# from it unless told that this (test-only) use is fine.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DESKTOP = {"viewport": {"width": 1280, "height": 900}}
PHONE = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 2, "is_mobile": True, "has_touch": True}
SCREENSHOTS = Path(settings.BASE_DIR) / "artifacts" / "screenshots"
LOCAL_HOSTS = {"localhost", "127.0.0.1"}


@pytest.fixture(scope="session")
def browser():
    if not CHROMIUM.exists():
        message = f"Chromium is not installed at {CHROMIUM}: apt-get install chromium (make test does)"
        if CI:
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    playwright = sync_playwright().start()
    chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
    yield chromium
    chromium.close()
    playwright.stop()


class PageProblems:
    """Console errors, uncaught exceptions and off-machine requests seen by a context."""

    def __init__(self):
        self.console: list[str] = []
        self.external: list[str] = []

    def watch(self, context):
        context.on("page", self._watch_page)
        context.route("**/*", self._route)

    def _watch_page(self, page):
        page.on("console", lambda message: message.type == "error" and self.console.append(message.text))
        page.on("pageerror", lambda error: self.console.append(str(error)))

    def _route(self, route):
        host = urlsplit(route.request.url).hostname
        if host in LOCAL_HOSTS:
            route.continue_()
        else:
            self.external.append(route.request.url)
            route.abort()


@pytest.fixture
def open_context(browser):
    """open_context(**options) → a new browser context; all are checked and closed at the end."""
    opened = []

    def open_(**options):
        context = browser.new_context(**{**DESKTOP, **options})
        context.set_default_timeout(10_000)
        problems = PageProblems()
        problems.watch(context)
        context.problems = problems  # a test that provokes an error on purpose clears it here
        opened.append((context, problems))
        return context

    yield open_
    for context, _problems in opened:
        context.close()
    for _, problems in opened:
        assert problems.external == [], f"requests left the machine: {problems.external}"
        assert problems.console == [], f"console errors: {problems.console}"


@pytest.fixture
def page(open_context):
    return open_context().new_page()


@pytest.fixture
def screenshot():
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def take(page, name: str) -> Path:
        path = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take
