"""Prolific studies after they open: submissions, places and the end of a study.

Opening a batch's study is the Prolific adapter's (crowd/marketplaces/prolific/study_opening.py);
this service keeps every open study in step with Prolific at each sync, using the session
bookkeeping (crowd.sessions.holds) and the ledger:

* a participant arrives (`study_arrive`): their session opens only once Prolific lists their
  submission, in progress, in the study; nothing is written otherwise;
* a session Prolific does not list (opened before arrivals were checked) is withdrawn: its
  tasks freed, its answers unverified;
* a returned or timed-out submission abandons its session, which frees its task;
* a finished session's submission is approved once every answer in it is reviewed (the
  study's approvals in one bulk call), or rejected when every answer was rejected; an
  approved submission is money spent, a partially approved one (a completion code set up
  for it at Prolific) too, booked at the whole reward, the most it can cost;
* every place used, nobody working and answers of its open batches still missing: more
  places are asked of the researcher (crowd.channels.prolific.raises: beyond the publish
  quotes, nothing is raised without their recorded yes), then committed (refused, and
  logged, over the budget cap) and raised;
* a study is a topic's round (crowd.marketplaces.prolific.study_opening): its Likert round,
  or its comparison stage, which gains places with each batch. Between two batches every
  place may be used and Prolific may call it complete; more places make it active again.
  Once its round has ended (`round_ended`) it is stopped; once Prolific then completes it,
  the places no approved submission used are released.
"""

import logging
import math
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from annotation.models import Batch, Campaign, Topic
from crowd.channels.prolific import raises
from crowd.marketplaces.base import InvalidState
from crowd.marketplaces.prolific.client import ProlificClient, prolific_client
from crowd.marketplaces.prolific.participants import NOT_LISTED, ParticipantNotListed, participant_submission
from crowd.marketplaces.prolific.wire import (
    IN_PROGRESS,
    PAID,
    STOPPED,
    RemoteSubmission,
    StudyStatus,
    SubmissionStatus,
)
from crowd.models import Assignment, Study, TaskHold, WorkSession, session_confirmed
from crowd.sessions import holds
from crowd.work import ledger

logger = logging.getLogger(__name__)

REJECTION_CATEGORY = "LOW_EFFORT"
APPROVE = "approve"  # what _submission_apply returns for a submission to approve in bulk
# A bulk approval Prolific still lists as awaiting review after this long is sent again.
RESEND_AFTER = timedelta(minutes=10)
ABANDONED_STATUSES = (SubmissionStatus.RETURNED, SubmissionStatus.TIMED_OUT)
PLACE_FREED = (*ABANDONED_STATUSES, SubmissionStatus.REJECTED)


@dataclass
class StudiesReport:
    studies: int = 0
    approved: int = 0
    rejected: int = 0
    abandoned: int = 0
    stopped: int = 0
    completed: int = 0
    withdrawn: int = 0  # sessions Prolific does not list: their answers unverified


def study_arrive(*, study: Study, participant_id: str, session_id: str) -> WorkSession:
    """A participant arrives from the study URL: their session, opened (or continued) only
    when Prolific lists submission `session_id` as theirs in this study, and in progress — or
    as the submission their session was confirmed with (a returning participant continues).
    One call to Prolific per arrival; none on the task pages. Raises `ParticipantNotListed`,
    or `MarketplaceUnavailable` when Prolific cannot be asked; nothing is written then."""
    submission = participant_submission(
        environment=study.environment, study_id=study.study_id, participant_id=participant_id, session_id=session_id
    )
    returning = WorkSession.objects.filter(study=study, submission_id=submission.id).exists()
    if submission.status not in IN_PROGRESS and not returning:
        raise ParticipantNotListed(NOT_LISTED)
    worker = holds.session_worker(channel=Campaign.Channel.PROLIFIC, external_id=participant_id)
    return holds.study_session_open(
        study=study, worker=worker, submission_id=submission.id, submission_status=submission.status
    )


def studies_sync(*, now=None) -> StudiesReport:
    """Reconcile every study not completed with Prolific; see the module docstring."""
    now = now or timezone.now()
    report = StudiesReport()
    studies = Study.objects.exclude(study_id="").exclude(ended_at__isnull=False, status=StudyStatus.COMPLETED)
    for study in studies.select_related("topic__campaign").order_by("pk"):
        client = prolific_client(environment=study.environment)
        by_participant = {s.worker.external_id: s for s in study.sessions.select_related("worker")}
        paid: list[str] = []
        listed: set[str] = set()
        to_approve: list[tuple[WorkSession, RemoteSubmission]] = []
        for submission in client.submissions_list(study.study_id):
            listed.add(submission.participant_id)
            session = by_participant.get(submission.participant_id)
            status = submission.status
            if session is not None:
                status = _submission_apply(
                    client=client, study=study, session=session, submission=submission, report=report, now=now
                )
            if status == APPROVE:
                to_approve.append((session, submission))  # type: ignore[arg-type]
            elif status in PAID:
                # Paid by Prolific, whoever approved it (us, by hand, or its auto-approval); a
                # partial approval pays a share of the reward, booked at the whole (the most it costs).
                paid.append(submission.id)
        ledger.submissions_paid(study=study, submission_ids=paid)
        approved = len(paid) + _submissions_approve(
            client=client, study=study, approvals=to_approve, report=report, now=now
        )
        _unlisted_withdraw(study=study, sessions=by_participant, listed=listed, report=report)
        _places_top_up(client=client, study=study)
        if not _open_batches(study).exists():
            raises.raises_drop(study=study)  # the batches they were for ended without them
        if round_ended(study):
            _study_stop(client=client, study=study, report=report, now=now)
        if study.ended_at is not None and study.status == StudyStatus.COMPLETED:
            ledger.study_closed(study=study, approved=approved)
            report.completed += 1
        study.last_synced_at = now
        study.save(update_fields=["status", "last_synced_at"])
        report.studies += 1
    return report


def _unlisted_withdraw(
    *, study: Study, sessions: dict[str, WorkSession], listed: set[str], report: StudiesReport
) -> None:
    """Sessions of participants Prolific does not list in the study and never confirmed
    (opened by an invented PROLIFIC_PID before arrivals were checked): withdrawn, so nothing
    they hold keeps a place and nothing they answered counts."""
    for participant_id, session in sessions.items():
        if participant_id in listed or holds.session_is_confirmed(session):
            continue
        unverified = holds.session_withdraw(session)
        if session.status == WorkSession.Status.ABANDONED and not unverified:
            continue  # withdrawn at an earlier sync
        report.withdrawn += 1
        logger.warning(
            "study %s: session %s of %s is not listed by Prolific: withdrawn, %d answer(s) unverified",
            study.study_id,
            session.pk,
            participant_id,
            unverified,
        )


def _open_batches(study: Study):
    return Batch.objects.filter(study_link__study=study, status=Batch.Status.PUBLISHED)


def round_ended(study: Study) -> bool:
    """No batch of the study's round is open or about to open, and none will join: the Likert
    round once its batch ended; the comparison stage once the topic left it (done), or the
    campaign finished; and a study a newer study of the same round replaced."""
    if study.ended_at is not None:
        return True
    if Batch.objects.filter(
        study_link__study=study, status__in=(Batch.Status.CREATED, Batch.Status.PUBLISHED)
    ).exists():
        return False
    topic = study.topic
    if study.kind == Batch.Kind.LIKERT or topic.campaign.status == Campaign.Status.FINISHED:
        return True
    newer = Study.objects.filter(topic=topic, kind=study.kind, pk__gt=study.pk).exists()
    return newer or topic.state != Topic.State.COMPARISONS


def _study_stop(*, client: ProlificClient, study: Study, report: StudiesReport, now) -> None:
    """Stop recruiting for good: the round ended, so no batch joins the study after this. A
    stopped study completes at Prolific once nothing awaits review, so one already stopped is
    only read again until it has."""
    if study.ended_at is None:
        Study.objects.filter(pk=study.pk).update(ended_at=now)
        study.ended_at = now
    before = study.status
    if before in STOPPED:
        study.status = client.study_get(study.study_id).status
        return
    try:
        study.status = client.study_stop(study.study_id).status
    except InvalidState:
        study.status = client.study_get(study.study_id).status  # completed at Prolific already
    report.stopped += 1


def _places_top_up(*, client: ProlificClient, study: Study) -> None:
    """Every place is used, nobody is working, and tasks still need answers (some answers
    were rejected, or sessions did fewer tasks than planned): more places are beyond the
    quote, so they are asked of the researcher first (crowd.channels.prolific.raises) and
    opened only once approved, committed before Prolific is asked."""
    open_batches = _open_batches(study)
    if not open_batches.exists() or study.sessions.filter(status=WorkSession.Status.ACTIVE).exists():
        return
    # Places Prolific holds: confirmed sessions (not invented ones) whose submission still keeps
    # its place — a returned, timed-out or rejected one is reopened by Prolific for someone else,
    # its money committed already, so it asks for no new place.
    used = study.sessions.filter(session_confirmed()).exclude(submission_status__in=PLACE_FREED).count()
    # Answers still to collect that a new session could be handed (a rejected answer's task
    # collected all it will get: the workflow does not ask for it again, so neither do places).
    missing = holds.study_slots_free(study=study) if used >= study.places else 0
    if missing <= 0:
        raises.raises_drop(study=study, approved=False)  # a place came free, or nothing is missing now
        return
    tasks = holds.study_tasks(study)
    needed = sum(tasks.values_list("assignments_needed", flat=True))
    submitted = TaskHold.objects.filter(task__in=tasks, released_at__isnull=True, submitted_at__isnull=False)
    rejected = Exists(
        Assignment.objects.filter(assignment_id=OuterRef("assignment_id"), status=Assignment.Status.REJECTED)
    )
    per_session = max(1, min(study.topic.campaign.tasks_per_session, tasks.count()))
    total = study.places + math.ceil(missing / per_session)
    reason = _raise_reason(
        study=study,
        batches=list(open_batches.order_by("number")),
        needed=needed,
        missing=missing,
        rejected=submitted.filter(rejected).count(),
    )
    wanted = raises.raise_request(study=study, places=total, missing=missing, reason=reason)
    if wanted.approved_at is None:
        logger.info("study %s: %d answers still missing; more places wait for the researcher's yes", study, missing)
        return
    if wanted.places_to <= study.places:  # approved for places the study has already
        raises.raise_done(places_raise=wanted)
        return
    try:
        ledger.study_places_commit(study=study, places=wanted.places_to)
    except ledger.BudgetExceeded as refused:
        logger.warning("study %s: %d answers still missing, places not raised: %s", study, missing, refused.message)
        return
    with transaction.atomic():  # the study's lock, which adding a batch's places takes too
        places_now = Study.objects.select_for_update().values_list("places", flat=True).get(pk=study.pk)
        if places_now < wanted.places_to:  # else a batch joining the study added them meanwhile
            remote = client.study_places_increase(study.study_id, wanted.places_to)
            Study.objects.filter(pk=study.pk).update(places=wanted.places_to, status=remote.status)
            study.status = remote.status
    study.places = max(places_now, wanted.places_to)
    raises.raise_done(places_raise=wanted)
    logger.info("study %s: %d answers still missing, places raised to %d", study.study_id, missing, study.places)


def _raise_reason(*, study: Study, batches: list[Batch], needed: int, missing: int, rejected: int) -> str:
    """Why places are wanted, in the researcher's terms: what is missing and what used the places."""
    sessions = study.sessions.filter(session_confirmed(), status=WorkSession.Status.FINISHED)
    short = sum(
        1 for session in sessions if session.holds.filter(submitted_at__isnull=False).count() < session.tasks_target
    )
    causes = []
    if short:
        causes.append(
            f"{short} session{'s' if short != 1 else ''} ended with fewer tasks than {'they were' if short != 1 else 'it was'} "
            "sized for: no task was free for the participant when they asked"
        )
    if rejected:
        causes.append(f"{rejected} answer{'s' if rejected != 1 else ''} rejected by quality control, not asked again")
    because = f" ({'; '.join(causes)})" if causes else ""
    return (
        f"{missing} of {needed} answers of {', '.join(str(batch) for batch in batches)} are still to collect after "
        f"all {study.places} places were "
        f"used{because}."
    )


def _submissions_approve(
    *,
    client: ProlificClient,
    study: Study,
    approvals: list[tuple[WorkSession, RemoteSubmission]],
    report: StudiesReport,
    now,
) -> int:
    """Approve the reviewed sessions' submissions in one bulk call (Prolific's bulk approval,
    which its high-load guide asks for over one call each), then record them as approved and
    paid; how many. A failed call records nothing: the next sync sends them again."""
    if not approvals:
        return 0
    client.submissions_approve([submission.id for _, submission in approvals])
    for session, _submission in approvals:
        first = session.reviewed_at is None
        WorkSession.objects.filter(pk=session.pk).update(
            reviewed_at=session.reviewed_at or now, submission_status=SubmissionStatus.APPROVED
        )
        report.approved += first
    ledger.submissions_paid(study=study, submission_ids=[submission.id for _, submission in approvals])
    return len(approvals)


def _submission_apply(
    *,
    client: ProlificClient,
    study: Study,
    session: WorkSession,
    submission: RemoteSubmission,
    report: StudiesReport,
    now,
) -> str:
    """Bring the session in step with its submission; the submission's status afterwards, or
    APPROVE when it is to be approved (in one bulk call with the study's others)."""
    status = submission.status
    if session.submission_id != submission.id or session.submission_status != status:
        WorkSession.objects.filter(pk=session.pk).update(submission_id=submission.id, submission_status=status)
    if status in ABANDONED_STATUSES and session.status == WorkSession.Status.ACTIVE:
        holds.session_abandon(session)
        report.abandoned += 1
        return status
    if (status in PAID or status == SubmissionStatus.REJECTED) and session.reviewed_at is None:
        # Decided at Prolific (by us in a run that died before recording it, by hand, or a
        # partial approval through a completion code).
        WorkSession.objects.filter(pk=session.pk).update(reviewed_at=timezone.now())
        return status
    if status != SubmissionStatus.AWAITING_REVIEW:
        return status
    if session.reviewed_at is not None:
        # Approved by us, and Prolific still lists it awaiting review: its bulk approval is in
        # progress, or was lost; sent again after a while (approving twice changes nothing).
        waited = session.submission_status == SubmissionStatus.APPROVED and now - session.reviewed_at > RESEND_AFTER
        return APPROVE if waited else status
    answers = Assignment.objects.filter(
        worker_id=session.worker_id,
        assignment_id__in=session.holds.filter(submitted_at__isnull=False).values("assignment_id"),
    )
    statuses = list(answers.values_list("status", flat=True))
    if session.status != WorkSession.Status.FINISHED or not statuses or Assignment.Status.SUBMITTED in statuses:
        return status  # wait: the session is unfinished or quality control has not reviewed it yet
    # The remote call first, outside any transaction (a lock held across it would stall
    # everyone else); recording it is idempotent, and a lost record heals at the next sync.
    if all(s == Assignment.Status.REJECTED for s in statuses):
        reasons = sorted(set(answers.exclude(reject_reason="").values_list("reject_reason", flat=True)))
        client.submission_reject(submission.id, message=_rejection_message(reasons), category=REJECTION_CATEGORY)
        report.rejected += 1
        new_status = SubmissionStatus.REJECTED
    else:
        return APPROVE
    WorkSession.objects.filter(pk=session.pk).update(reviewed_at=timezone.now(), submission_status=new_status)
    return new_status


def _rejection_message(reasons: list[str]) -> str:
    text = "Every task in this session was rejected by quality control. " + " ".join(reasons)
    # Prolific asks for an explanation of at least 100 characters.
    if len(text) < 100:
        text += " The answers did not follow the instructions, for example on the check statements."
    return text[:1000]
