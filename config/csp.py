"""The Content-Security-Policy of every page, in one place (config/security.py sends it on
ordinary pages, crowd/hit_page/headers.py on the HIT page, the error views on theirs)."""


def page_policy(*, frame_ancestors: str, inline_style: bool = False, form_targets: tuple[str, ...] = ()) -> str:
    """The one Content-Security-Policy of every page: its own static files only (no CDN, no
    fonts, no inline script), forms posting to itself and `form_targets`, framed by
    `frame_ancestors`. The HIT page adds MTurk's externalSubmit as a form target."""
    return "; ".join(
        [
            "default-src 'self'",
            "script-src 'self'",
            "style-src 'self'" + (" 'unsafe-inline'" if inline_style else ""),
            "img-src 'self' data:",
            "connect-src 'self'",
            "object-src 'none'",
            "base-uri 'none'",
            "form-action " + " ".join(("'self'", *form_targets)),
            f"frame-ancestors {frame_ancestors}",
        ]
    )
