"""Which version of the consent text an answer was given under: a version is the start of the
text's digest (crowd.sessions.holds.consent_digest), shown in the participants table and
written in the exports."""

from django.db.models import F, QuerySet

from annotation.models import Campaign, Topic
from crowd.models import TaskHold


def consent_version(digest: str) -> str:
    """How a consent text's version is shown (participants table, exports): its digest's start."""
    return digest[:12]


def answer_consent_versions(*, topic: Topic) -> dict[tuple[str, int], str]:
    """The version of the consent text each answer was given under, for the answers given in a
    session (participant links, Prolific) to the topic's tasks, by (assignment id, worker id).
    A session hands out a task only once its participant agreed to the current text
    (crowd.sessions.holds), and it keeps the text of their latest agreement: so a task handed
    out after that agreement was done under it. Not in it: answers given outside a session
    (MTurk), without a consent step, or to a task handed out before the participant agreed
    again to a changed text (the earlier version is not kept)."""
    return _versions(TaskHold.objects.filter(task__batch__topic=topic))


def campaign_answer_consent_versions(*, campaign: Campaign) -> dict[tuple[str, int], str]:
    """`answer_consent_versions` of every topic of the campaign, in one query."""
    return _versions(TaskHold.objects.filter(task__batch__topic__campaign=campaign))


def _versions(holds: QuerySet[TaskHold]) -> dict[tuple[str, int], str]:
    handed = holds.filter(held_at__gte=F("session__consented_at")).exclude(session__consent_digest="")
    return {
        (assignment_id, worker_id): consent_version(digest)
        for assignment_id, worker_id, digest in handed.values_list(
            "assignment_id", "session__worker_id", "session__consent_digest"
        )
    }
