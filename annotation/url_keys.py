"""Which topic keys can go into a URL: one rule for the importer, the admin and the pages.

A topic key is a path segment of every topic URL — the dashboard's, the quality report's, the
ranking downloads' and the API's (`campaigns/<slug>/topics/<key>/...`). A "/" splits the
segment, so no URL can be built for the topic (its campaign page answered 500) and none
reaches it; "?", "#", "%" and spaces change meaning or get escaped on the way (browsers,
shells, spreadsheets, download names); a key of "." or ".." is a step that browsers and proxies
resolve away; non-ASCII letters have several encodings that look alike. So a key holds ASCII
letters, digits, "-", "_" and ".", a dot only between two other characters, at most the
field's 100 characters. Campaign slugs are Django slugs (annotation/campaigns.py), stricter.
"""

import re

from django.core.validators import RegexValidator

_KEY = r"[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*"
URL_KEY_PATTERN = rf"\A{_KEY}\Z"
URL_KEY_ALLOWED = 'letters A-Z and a-z, digits 0-9, "-", "_" and "." (a dot only between two other characters)'

_URL_KEY = re.compile(URL_KEY_PATTERN)
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_.-]")

url_key_validator = RegexValidator(
    URL_KEY_PATTERN,
    message=f"A topic key goes into web addresses: use only {URL_KEY_ALLOWED}.",
    code="invalid_topic_key",
)


class TopicKeyConverter:
    """`<topic_key:...>` in a URL pattern (registered in AnnotationConfig.ready): a segment the
    rule refuses matches no route, so it is a 404 before any query — PostgreSQL cannot even be
    asked about a key holding a NUL (a 500 with `<str:...>`)."""

    regex = _KEY

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


def url_key_is_safe(key: str) -> bool:
    return bool(_URL_KEY.match(key))


def url_key_problem(key: str) -> str | None:
    """Why `key` cannot go into a URL, naming what is allowed; None when it can."""
    if url_key_is_safe(key):
        return None
    found = sorted(set(_NOT_ALLOWED.findall(key)))
    if found:
        shown = ", ".join("a space" if character == " " else repr(character) for character in found[:8])
        reason = f"it contains {shown}"
    elif not key:
        reason = "it is empty"
    else:
        reason = 'it has a "." at the start or the end, or two in a row'
    return f"the topic key {key!r} cannot be part of a web address ({reason}); use only {URL_KEY_ALLOWED}"
