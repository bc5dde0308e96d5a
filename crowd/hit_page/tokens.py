"""The signed token that protects a HIT form instead of a session cookie.

MTurk shows the page in a third-party iframe, where browsers may drop cookies, so the form
carries its own proof: a signature over the task, the assignment and the worker, minted
when the page is rendered for an eligible worker. Only such a page can submit, and only for
the assignment it was shown for.
"""

import hashlib
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from uuid import UUID

from django.core import signing

from config.errors import ApplicationError

SALT = "annotation.hit.submit"
# An accepted assignment lasts campaign.assignment_duration_seconds at MTurk; a token lives
# a little longer so a worker who submits in the last minute is not turned away by us.
GRACE_SECONDS = 3600


class InvalidToken(ApplicationError):
    code = "invalid_token"


@dataclass(frozen=True)
class TokenClaims:
    issued_at: datetime  # when the page was rendered for the accepted assignment


def submit_token_make(*, task_uuid: UUID, assignment_id: str, worker_id: str) -> str:
    payload = {"t": str(task_uuid), "a": assignment_id, "w": worker_id, "i": int(time.time() * 1000)}
    return signing.dumps(payload, salt=SALT, compress=False)


def submit_token_digest(*, token: str, task_uuid: UUID | str) -> str | None:
    """A short name for a token this page signed for `task_uuid` (at any age), else None: what
    the rate limits count a worker's posts by, so nobody can spend another's allowance."""
    try:
        payload = signing.loads(token, salt=SALT)
    except signing.BadSignature:
        return None
    if not isinstance(payload, dict) or payload.get("t") != str(task_uuid):
        return None
    return hashlib.sha256(token.encode()).hexdigest()[:32]


def submit_token_check(*, token: str, task_uuid: UUID, assignment_id: str, worker_id: str, max_age: int) -> TokenClaims:
    """The token's claims if it was minted for exactly this task, assignment and worker."""
    try:
        payload = signing.loads(token, salt=SALT, max_age=max_age + GRACE_SECONDS)
    except signing.SignatureExpired:
        raise InvalidToken(
            "This page has expired. Return the HIT and accept it again if it is still available.",
            code="token_expired",
        ) from None
    except signing.BadSignature:
        raise InvalidToken("This form was not issued by this HIT page. Reload the HIT and try again.") from None
    if payload.get("t") != str(task_uuid) or payload.get("a") != assignment_id or payload.get("w") != worker_id:
        raise InvalidToken("This form belongs to another task, assignment or worker. Reload the HIT and try again.")
    return TokenClaims(issued_at=datetime.fromtimestamp(payload["i"] / 1000, tz=UTC))
