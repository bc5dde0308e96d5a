"""Response headers of HIT pages: embeddable by MTurk's worker sites, nothing else.

MTurk shows the page in an iframe on worker.mturk.com / workersandbox.mturk.com, so these
views drop X-Frame-Options (DENY everywhere else) and say who may frame them with CSP
`frame-ancestors` (settings.HIT_FRAME_ANCESTORS). The rest of the policy keeps the page to
its own static files: no CDN, no fonts, no inline script or style.
"""

from functools import wraps

from django.conf import settings
from django.views.decorators.clickjacking import xframe_options_exempt

# Views add an origin here when the page's form posts elsewhere (MTurk's externalSubmit).
FORM_TARGETS_ATTRIBUTE = "hit_form_targets"
# Chromium applies form-action to the redirects after a form post too, and MTurk's
# externalSubmit answers with a redirect within its worker sites.
MTURK_FORM_TARGETS = ("https://*.mturk.com",)


def hit_policy(form_targets: tuple[str, ...] = ()) -> str:
    return "; ".join(
        [
            "default-src 'self'",
            "script-src 'self'",
            "style-src 'self'",
            "img-src 'self' data:",
            "connect-src 'self'",
            "object-src 'none'",
            "base-uri 'none'",
            "form-action " + " ".join(("'self'", *form_targets)),
            "frame-ancestors " + " ".join(settings.HIT_FRAME_ANCESTORS),
        ]
    )


def hit_frame_headers(view):
    """Send the HIT Content-Security-Policy and no X-Frame-Options."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        response = view(request, *args, **kwargs)
        response["Content-Security-Policy"] = hit_policy(getattr(response, FORM_TARGETS_ATTRIBUTE, ()))
        return response

    return xframe_options_exempt(wrapper)
