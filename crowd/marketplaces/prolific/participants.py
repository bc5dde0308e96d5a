"""Who may take a place: a participant arriving from a study URL is real only if Prolific
lists their submission.

The study URL carries PROLIFIC_PID, STUDY_ID and SESSION_ID, and anyone can type them. Prolific's
SESSION_ID is the submission's id, so one call (GET submissions/{SESSION_ID}/) tells whether
that submission exists in our workspace, is that participant's, in that study, and what
status it has. Nothing here writes; the session layer (crowd/channels/prolific/study_sync.py) opens the
session only after this answered.
"""

import hashlib
import time

from django.conf import settings
from django.core.cache import cache
from rest_framework import status

from config.errors import ApplicationError, TooBusy
from config.security import counts_add
from crowd.marketplaces.base import NotFoundAtMarketplace
from crowd.marketplaces.prolific.client import prolific_client
from crowd.marketplaces.prolific.wire import RemoteSubmission

NOT_LISTED = "Prolific does not list you in this study: open it from Prolific."
BUSY = "Many participants are arriving at once: please try again in a minute."
UNREACHABLE = "Prolific cannot be reached right now: please try again in a minute."
RETRY_AFTER_SECONDS = 60
# A participant waits on the page for the answer: one retry, not the sync's four attempts.
ATTEMPTS = 2


class ParticipantNotListed(ApplicationError):
    """Prolific has no submission of this participant, with this session id, in this study."""

    code = "participant_not_listed"
    http_status = status.HTTP_403_FORBIDDEN


class ArrivalsBusy(TooBusy):
    """Arrivals have used the calls to Prolific kept for them this minute."""

    code = "arrivals_busy"
    http_status = status.HTTP_503_SERVICE_UNAVAILABLE
    retry_after = RETRY_AFTER_SECONDS


def arrival_address_check(*, address: str) -> None:
    """One more arrival from `address` this minute; `TooBusy` (429) past
    PROLIFIC_ARRIVALS_PER_ADDRESS. Counted in the rate-limit cache (failing open)."""
    limit = settings.PROLIFIC_ARRIVALS_PER_ADDRESS
    if limit and counts_add([f"prolific-arrival:{address}:{_minute()}"], expiry=120)[0] > limit:
        raise TooBusy(BUSY, code="arrivals_per_address")


def participant_submission(
    *, environment: str, study_id: str, participant_id: str, session_id: str
) -> RemoteSubmission:
    """Prolific's submission `session_id`, checked to be `participant_id`'s in `study_id`, in
    whatever status it is; `ParticipantNotListed` otherwise. `MarketplaceUnavailable` when
    Prolific cannot be asked (after the client's retries).

    Prolific's verdict on one (PID, SESSION_ID, study) is kept PROLIFIC_VERDICT_SECONDS, so
    the same arrival repeated asks once; and arrivals make at most
    PROLIFIC_ARRIVAL_CALLS_PER_MINUTE calls a minute (`ArrivalsBusy`, 503, beyond), so a flood
    of invented arrivals cannot spend the rate budget sync and publishing share with them."""
    key = (
        "prolific-verdict:"
        + hashlib.sha256(f"{environment}\0{study_id}\0{participant_id}\0{session_id}".encode()).hexdigest()
    )
    verdict: RemoteSubmission | str | None = cache.get(key)
    if verdict is None:
        verdict = _verdict_ask(
            environment=environment, study_id=study_id, participant_id=participant_id, session_id=session_id
        )
        cache.set(key, verdict, settings.PROLIFIC_VERDICT_SECONDS)
    if isinstance(verdict, str):  # "not_listed"
        raise ParticipantNotListed(NOT_LISTED)
    return verdict


def _verdict_ask(*, environment: str, study_id: str, participant_id: str, session_id: str) -> RemoteSubmission | str:
    limit = settings.PROLIFIC_ARRIVAL_CALLS_PER_MINUTE
    if limit and counts_add([f"prolific-arrival-calls:{environment}:{_minute()}"], expiry=120)[0] > limit:
        raise ArrivalsBusy(BUSY)
    with prolific_client(environment=environment, attempts=ATTEMPTS) as client:
        try:
            submission = client.submission_get(session_id)
        except NotFoundAtMarketplace:
            return "not_listed"
    if submission.participant_id != participant_id or submission.study_id != study_id:
        return "not_listed"
    return submission


def _minute() -> int:
    return int(time.time() // 60)
