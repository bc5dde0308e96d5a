"""Pages that differ between requests in a few places only: rendered once, then cached as
the text around those places ("slots").

MTurk loads a HIT page for every preview and every accepted assignment, and the page is
the same for every worker but for the form's hidden fields; the page that hands an answer
on to MTurk differs only in its form's target and fields. Rendering the template each time
cost more than the rest of the request (benchmarks/hit_page_bench.py).
"""

import html
import time
from collections.abc import Callable, Iterable

from django.template.loader import render_to_string
from django.utils.safestring import SafeString, mark_safe

from crowd.hit_page.content import CACHE_SECONDS, ProcessCache

SLOT = mark_safe("<!--slot-->")  # the template writes {{ slot }} where per-request HTML goes

_shells = ProcessCache()


def shell_get(*, key: str, template: str, context: Callable[[], dict], expires_at: float | None = None) -> list[str]:
    """`template` rendered with `slot` marks, split at them: cached under `key` until
    `expires_at` (a time.time()), else for CACHE_SECONDS. A page made from a HitContent
    expires with it, so an edit reaches the page as soon as it reaches the content."""

    def render() -> tuple[float, list[str]]:
        shell = render_to_string(template, {**context(), "slot": SLOT}).split(SLOT)
        return (time.time() + CACHE_SECONDS if expires_at is None else expires_at), shell

    return _shells.get(key, render)


def shell_fill(shell: list[str], slots: Iterable[SafeString]) -> str:
    """The page with each slot replaced, in order, by already-escaped HTML."""
    parts = [shell[0]]
    for filling, text in zip(slots, shell[1:], strict=True):
        parts += [filling, text]
    return "".join(parts)


def hidden_inputs(fields: Iterable[tuple[str, str]]) -> SafeString:
    # html.escape (quote=True) escapes what an attribute value needs, without the lazy-
    # string machinery of django.utils.html.escape: this runs on every page view.
    return mark_safe(
        "\n  ".join(
            f'<input type="hidden" name="{html.escape(name)}" value="{html.escape(value)}">' for name, value in fields
        )
    )
