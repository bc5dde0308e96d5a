"""Response headers of HIT pages: embeddable by the channels' worker sites, nothing else.

MTurk shows the page in an iframe on worker.mturk.com / workersandbox.mturk.com, so these
views drop X-Frame-Options (DENY everywhere else) and say who may frame them with CSP
`frame-ancestors` (`config.hit_hooks.hit_frame_ancestors`: settings.HIT_FRAME_ANCESTORS when
set, else 'self' and the worker sites each channel's policy lists, registered by the crowd app
when it is ready). The rest of the policy keeps the page to
its own static files: no CDN, no fonts, no inline script or style.
"""

from functools import wraps

from django.views.decorators.clickjacking import xframe_options_exempt

from config.csp import page_policy
from config.hit_hooks import hit_frame_ancestors

# Views add an origin here when the page's form posts elsewhere (MTurk's externalSubmit).
FORM_TARGETS_ATTRIBUTE = "hit_form_targets"


def hit_policy(form_targets: tuple[str, ...] = ()) -> str:
    return page_policy(frame_ancestors=" ".join(hit_frame_ancestors()), form_targets=form_targets)


def hit_frame_headers(view):
    """Send the HIT Content-Security-Policy and no X-Frame-Options."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        response = view(request, *args, **kwargs)
        response["Content-Security-Policy"] = hit_policy(getattr(response, FORM_TARGETS_ATTRIBUTE, ()))
        return response

    return xframe_options_exempt(wrapper)
