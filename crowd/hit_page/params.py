"""What MTurk appends to a HIT page's URL, and where the answer goes back to.

MTurk loads the ExternalQuestion URL with `assignmentId`, `hitId`, `workerId` and
`turkSubmitTo`; in preview `assignmentId` is ASSIGNMENT_ID_NOT_AVAILABLE and `workerId`
may be missing. The answer is posted by the browser, as a form, to
`turkSubmitTo + /mturk/externalSubmit` (reference/mturk.md §3.2).
"""

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote, urlencode, urlsplit

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
