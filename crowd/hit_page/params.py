"""What MTurk appends to a HIT page's URL, and where the answer goes back to.

MTurk loads the ExternalQuestion URL with `assignmentId`, `hitId`, `workerId` and
`turkSubmitTo`; in preview `assignmentId` is ASSIGNMENT_ID_NOT_AVAILABLE and `workerId`
may be missing. The answer is posted by the browser, as a form, to
`turkSubmitTo + /mturk/externalSubmit` (reference/mturk.md §3.2).
"""

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from django.conf import settings
from django.core.exceptions import TooManyFieldsSent
from django.http import HttpRequest

PREVIEW_ASSIGNMENT_ID = "ASSIGNMENT_ID_NOT_AVAILABLE"
EXTERNAL_SUBMIT_PATH = "/mturk/externalSubmit"
MAX_ID_LENGTH = 64  # the width of Assignment.assignment_id and Worker.external_id


@dataclass(frozen=True)
class HitParams:
    assignment_id: str = ""
    hit_id: str = ""
    worker_id: str = ""
    turk_submit_to: str = ""

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> "HitParams":
        return cls(
            assignment_id=query.get("assignmentId", "").strip(),
            hit_id=query.get("hitId", "").strip(),
            worker_id=query.get("workerId", "").strip(),
            turk_submit_to=query.get("turkSubmitTo", "").strip(),
        )

    @property
    def preview(self) -> bool:
        return self.assignment_id in ("", PREVIEW_ASSIGNMENT_ID)

    def query_string(self) -> str:
        """The parameters as MTurk sent them, to link back to the page."""
        pairs = {
            "assignmentId": self.assignment_id,
            "hitId": self.hit_id,
            "workerId": self.worker_id,
            "turkSubmitTo": self.turk_submit_to,
        }
        return urlencode({name: value for name, value in pairs.items() if value})

    def external_submit_url(self, fallback_host: str | None) -> str | None:
        """Where the browser posts the answer for MTurk, or None when nobody waits for it.

        turkSubmitTo without a trailing slash (MTurk sends `https://www.mturk.com`, its docs
        show one) plus /mturk/externalSubmit; the local endpoint's turkSubmitTo has a path.
        Anything but a plain http(s) URL is ignored, so the form never posts elsewhere.
        Without one, `fallback_host` (the channel's worker site, its policy's `submit_host`).
        """
        base = _submit_base(self.turk_submit_to)
        if base is None and self.hit_id:
            base = fallback_host
        return f"{base}{EXTERNAL_SUBMIT_PATH}" if base else None


def url_origin(url: str) -> str | None:
    """scheme://host[:port] of a plain http(s) URL without credentials, else None."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}" + (f":{port}" if port else "")


def _submit_base(url: str) -> str | None:
    origin = url_origin(url)
    if origin is None:
        return None
    path = urlsplit(url).path.rstrip("/")
    return origin + quote(path, safe="/-._~%")


def form_read(request: HttpRequest) -> dict[str, list[str]]:
    """The posted form, each field with its values, as `request.POST` would hold them.

    The form a HIT page posts (urlencoded) is read here, as Django reads it, under the same
    limits (DATA_UPLOAD_MAX_MEMORY_SIZE by `request.body`, DATA_UPLOAD_MAX_NUMBER_FIELDS) and
    raising the same errors, into a plain dict: building the QueryDict cost an answer about as
    much as checking its token (benchmarks/load). Any other body, or a form something has
    read already (the rate limit that counts tokens), is `request.POST`'s.
    """
    urlencoded = request.content_type == "application/x-www-form-urlencoded"
    if (
        "_post" in request.__dict__
        or request.method != "POST"
        or not urlencoded
        or request.encoding not in (None, "utf-8")
    ):
        return dict(request.POST.lists())
    try:
        text = request.body.decode()
    except UnicodeDecodeError:  # as Django: some user agents misbehave
        text = request.body.decode("iso-8859-1")
    fields: dict[str, list[str]] = {}
    try:
        for name, value in parse_qsl(
            text, keep_blank_values=True, max_num_fields=settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
        ):
            fields.setdefault(name, []).append(value)
    except ValueError as error:  # parse_qsl's only one without strict_parsing
        raise TooManyFieldsSent(
            "The number of GET/POST parameters exceeded settings.DATA_UPLOAD_MAX_NUMBER_FIELDS."
        ) from error
    return fields


def last_values(form: Mapping[str, list[str]]) -> dict[str, str]:
    """Each field's last value, as `QueryDict.get` gives it."""
    return {name: values[-1] for name, values in form.items() if values}
