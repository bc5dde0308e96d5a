"""Who may take a place: a participant arriving from a study URL is real only if Prolific
lists their submission.

The study URL carries PROLIFIC_PID, STUDY_ID and SESSION_ID, and anyone can type them. Prolific's
SESSION_ID is the submission's id, so one call (GET submissions/{SESSION_ID}/) tells whether
that submission exists in our workspace, is that participant's, in that study, and what
status it has. Nothing here writes; the session layer (crowd/channels/prolific/study_sync.py) opens the
session only after this answered.
"""

from rest_framework import status

from config.errors import ApplicationError
from crowd.marketplaces.base import NotFoundAtMarketplace
from crowd.marketplaces.prolific.client import prolific_client
from crowd.marketplaces.prolific.wire import RemoteSubmission

NOT_LISTED = "Prolific does not list you in this study: open it from Prolific."
UNREACHABLE = "Prolific cannot be reached right now: please try again in a minute."
RETRY_AFTER_SECONDS = 60
# A participant waits on the page for the answer: one retry, not the sync's four attempts.
ATTEMPTS = 2


class ParticipantNotListed(ApplicationError):
    """Prolific has no submission of this participant, with this session id, in this study."""

    code = "participant_not_listed"
    http_status = status.HTTP_403_FORBIDDEN


def participant_submission(
    *, environment: str, study_id: str, participant_id: str, session_id: str
) -> RemoteSubmission:
    """Prolific's submission `session_id`, checked to be `participant_id`'s in `study_id`, in
    whatever status it is; `ParticipantNotListed` otherwise. `MarketplaceUnavailable` when
    Prolific cannot be asked (after the client's retries)."""
    with prolific_client(environment=environment, attempts=ATTEMPTS) as client:
        try:
            submission = client.submission_get(session_id)
        except NotFoundAtMarketplace:
            raise ParticipantNotListed(NOT_LISTED) from None
    if submission.participant_id != participant_id or submission.study_id != study_id:
        raise ParticipantNotListed(NOT_LISTED)
    return submission
