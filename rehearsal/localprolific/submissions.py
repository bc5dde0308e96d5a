"""Submissions: simulated participants (start, complete, return, time out) and the
researcher's review (approve, reject).

A participant starts a study while it is ACTIVE and a place is free: the submission is
ACTIVE at once (Prolific first holds the place as RESERVED for a few minutes). One
submission per participant and study; starting again while it is ACTIVE returns it. The
completion redirect with a code of the study moves it to AWAITING REVIEW (or APPROVED when
the code's action is AUTOMATICALLY_APPROVE). Returning (ACTIVE or AWAITING REVIEW) and
timing out (ACTIVE) free the place; there is no clock, a time-out is sent by the control
endpoint. The researcher approves or rejects only what awaits review; repeating the same
transition changes nothing and answers 200, as Prolific documents. Every function runs in
the caller's transaction and locks the study first, so concurrent starts never take more
places than there are.
"""

import re
from datetime import datetime

from rest_framework import status

from .errors import ParticipantError, invalid, not_allowed_now, not_found
from .models import Researcher, Study, Submission, new_object_id
from .study_lifecycle import places, study_refresh

S = Submission.Status
REJECTION_MESSAGE_MIN_LENGTH = 100
REJECTION_CATEGORIES = (
    "TOO_QUICKLY",
    "TOO_SLOWLY",
    "FAILED_INSTRUCTIONS",
    "INCOMP_LONGITUDINAL",
    "FAILED_CHECK",
    "LOW_EFFORT",
    "MALINGERING",
    "NO_CODE",
    "BAD_CODE",
    "NO_DATA",
    "UNSUPP_DEVICE",
    "OTHER",
)
PLACEHOLDERS = ("{{%PROLIFIC_PID%}}", "{{%STUDY_ID%}}", "{{%SESSION_ID%}}")
# Prolific's own ids are 24 hex digits; the simulator also takes readable ones.
PARTICIPANT_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def study_url_for(submission: Submission) -> str:
    """The study URL with the participant's, the study's and the session's ids filled in."""
    url = submission.study.external_study_url
    values = (submission.participant_id, submission.study.study_id, submission.submission_id)
    for placeholder, value in zip(PLACEHOLDERS, values, strict=True):
        url = url.replace(placeholder, value)
    return url


def participant_start(*, study_id: str, participant_id: str | None, now: datetime) -> Submission:
    if participant_id is not None and not PARTICIPANT_ID.match(participant_id):
        raise ParticipantError(
            f"A participant id is 1 to 64 letters, digits, - or _, not {participant_id!r}.",
            code="participant_invalid",
            http_status=status.HTTP_400_BAD_REQUEST,
        )
    try:
        study = Study.objects.select_for_update().get(study_id=study_id)
    except Study.DoesNotExist:
        raise ParticipantError(
            f"Study {study_id} does not exist.", code="study_not_found", http_status=status.HTTP_404_NOT_FOUND
        ) from None
    participant_id = participant_id or new_object_id()
    existing = Submission.objects.filter(study=study, participant_id=participant_id).first()
    if existing is not None:
        if existing.status == S.ACTIVE:
            return existing
        raise ParticipantError(
            f"Participant {participant_id} has taken part in study {study_id} already ({existing.status}).",
            code="already_taken_part",
        )
    if study.status != Study.Status.ACTIVE:
        raise ParticipantError(
            f"Study {study_id} is {study.status}, not open to participants.", code="study_not_active"
        )
    if places(study)["taken"] >= study.total_available_places:
        raise ParticipantError(f"Every place of study {study_id} is taken.", code="places_exhausted")
    submission = Submission.objects.create(study=study, participant_id=participant_id, status=S.ACTIVE, started_at=now)
    study_refresh(study=study)
    return submission


def participant_complete(*, participant_id: str, code: str, now: datetime) -> Submission:
    """The completion redirect: the participant's ACTIVE submission of the study that has `code`."""
    mine = Submission.objects.select_related("study").filter(participant_id=participant_id)
    for submission in mine.filter(status=S.ACTIVE).order_by("pk"):
        actions = _code_actions(submission.study, code)
        if actions is None:
            continue
        study = Study.objects.select_for_update().get(pk=submission.study_id)
        submission.refresh_from_db()
        if submission.status != S.ACTIVE:  # a concurrent completion got there first
            return submission
        submission.status = S.APPROVED if "AUTOMATICALLY_APPROVE" in actions else S.AWAITING_REVIEW
        submission.completed_at, submission.study_code = now, code
        if submission.status == S.APPROVED:
            submission.reviewed_at = now
        submission.save(update_fields=["status", "completed_at", "study_code", "reviewed_at"])
        study_refresh(study=study)
        return submission
    done = mine.exclude(status=S.ACTIVE).filter(study_code=code).order_by("-pk").first()
    if done is not None:
        return done
    if mine.filter(status=S.ACTIVE).exists():
        raise ParticipantError(
            f"{code} is not a completion code of your study.",
            code="code_invalid",
            http_status=status.HTTP_400_BAD_REQUEST,
        )
    raise ParticipantError(
        f"Participant {participant_id} has no study in progress.",
        code="no_active_submission",
        http_status=status.HTTP_404_NOT_FOUND,
    )


def participant_release(*, submission_id: str, outcome: str) -> Submission:
    """The participant returns the submission, or it times out; its place is free again."""
    # Keyed by str: `outcome` is the status value the control view was sent (a TextChoices
    # member is a str, and equal to its value as a key).
    leaving_from: dict[str, tuple[str, ...]] = {
        S.RETURNED: (S.RESERVED, S.ACTIVE, S.AWAITING_REVIEW),
        S.TIMED_OUT: (S.RESERVED, S.ACTIVE),
    }
    leaving = leaving_from[outcome]
    try:
        submission = Submission.objects.select_related("study").get(submission_id=submission_id)
    except Submission.DoesNotExist:
        raise ParticipantError(
            f"Submission {submission_id} does not exist.",
            code="submission_not_found",
            http_status=status.HTTP_404_NOT_FOUND,
        ) from None
    study = Study.objects.select_for_update().get(pk=submission.study_id)
    submission.refresh_from_db()
    if submission.status == outcome:
        return submission
    if submission.status not in leaving:
        raise ParticipantError(
            f"Submission {submission_id} is {submission.status}; it cannot become {outcome}.",
            code="submission_not_open",
        )
    submission.status = outcome
    submission.save(update_fields=["status"])
    study_refresh(study=study)
    return submission


def submission_for(*, researcher: Researcher, submission_id: str) -> Submission:
    try:
        return Submission.objects.select_related("study").get(submission_id=submission_id, study__researcher=researcher)
    except Submission.DoesNotExist:
        raise not_found(f"Submission {submission_id}") from None


def submission_transition(*, researcher: Researcher, submission_id: str, data: dict, now: datetime) -> Submission:
    """POST submissions/{id}/transition/: APPROVE, or REJECT with a message and a category."""
    action = data.get("action")
    targets = {"APPROVE": S.APPROVED, "REJECT": S.REJECTED}
    if action not in targets:
        raise invalid({"action": ["APPROVE or REJECT (the local endpoint supports no other action)."]})
    if action == "REJECT":
        _rejection_check(data)
    submission = submission_for(researcher=researcher, submission_id=submission_id)
    study = Study.objects.select_for_update().get(pk=submission.study_id)
    submission.refresh_from_db()
    if submission.status == targets[action]:
        return submission
    if submission.status != S.AWAITING_REVIEW:
        raise not_allowed_now(
            f"Submission {submission_id} is {submission.status}; only submissions awaiting "
            "review can be approved or rejected."
        )
    submission.status, submission.reviewed_at = targets[action], now
    if action == "REJECT":
        submission.rejection_message = data["message"]
        submission.rejection_category = data["rejection_category"]
    submission.save(update_fields=["status", "reviewed_at", "rejection_message", "rejection_category"])
    study_refresh(study=study)
    return submission


BULK_APPROVE_MAX = 1000  # Prolific's recommended maximum of ids per call


def submissions_bulk_approve(*, researcher: Researcher, data: dict, now: datetime) -> int:
    """POST submissions/bulk-approve/ with `submission_ids` (or `study_id` and
    `participant_ids`, Prolific's other variant): every one of them approved, or none (a
    refusal names each that cannot be). Already approved ones are left as they are, like a
    repeated transition. The number approved now."""
    rows = Submission.objects.select_related("study").filter(study__researcher=researcher)
    if "submission_ids" in data:
        ids = data["submission_ids"]
        key = "submission_ids"
    elif "study_id" in data and "participant_ids" in data:
        ids = data["participant_ids"]
        key = "participant_ids"
        rows = rows.filter(study__study_id=data["study_id"])
    else:
        raise invalid("Give submission_ids, or study_id and participant_ids.")
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
        raise invalid({key: ["A non-empty list of ids."]})
    if len(ids) > BULK_APPROVE_MAX:
        raise invalid({key: [f"At most {BULK_APPROVE_MAX} ids per request."]})
    field = "submission_id" if key == "submission_ids" else "participant_id"
    found = {getattr(row, field): row for row in rows.filter(**{f"{field}__in": ids})}
    problems = [f"{i}: no such submission" for i in ids if i not in found]
    problems += [
        f"{i}: {found[i].status}, not awaiting review"
        for i in ids
        if i in found and found[i].status not in (S.AWAITING_REVIEW, S.APPROVED)
    ]
    if problems:
        raise not_allowed_now("Nothing was approved. " + "; ".join(problems) + ".")
    waiting = [row for row in found.values() if row.status == S.AWAITING_REVIEW]
    for study_pk in sorted({row.study_id for row in waiting}):
        study = Study.objects.select_for_update().get(pk=study_pk)
        mine = [row.pk for row in waiting if row.study_id == study_pk]
        Submission.objects.filter(pk__in=mine).update(status=S.APPROVED, reviewed_at=now)
        study_refresh(study=study)
    return len(waiting)


def submission_partially_approve(*, submission_id: str, now: datetime) -> Submission:
    """A submission awaiting review paid a share of its reward (at Prolific: a completion code
    set up for partial approval). For rehearsals: the control endpoint sets it."""
    try:
        submission = Submission.objects.select_related("study").get(submission_id=submission_id)
    except Submission.DoesNotExist:
        raise ParticipantError(
            f"Submission {submission_id} does not exist.",
            code="submission_not_found",
            http_status=status.HTTP_404_NOT_FOUND,
        ) from None
    study = Study.objects.select_for_update().get(pk=submission.study_id)
    submission.refresh_from_db()
    if submission.status == S.PARTIALLY_APPROVED:
        return submission
    if submission.status != S.AWAITING_REVIEW:
        raise ParticipantError(
            f"Submission {submission_id} is {submission.status}; only one awaiting review can be partially approved.",
            code="submission_not_open",
        )
    submission.status, submission.reviewed_at = S.PARTIALLY_APPROVED, now
    submission.save(update_fields=["status", "reviewed_at"])
    study_refresh(study=study)
    return submission


def _rejection_check(data: dict) -> None:
    errors = {}
    message = data.get("message")
    if not isinstance(message, str) or len(message.strip()) < REJECTION_MESSAGE_MIN_LENGTH:
        errors["message"] = [f"Required to reject; at least {REJECTION_MESSAGE_MIN_LENGTH} characters."]
    if data.get("rejection_category") not in REJECTION_CATEGORIES:
        errors["rejection_category"] = [f"Required to reject; one of {', '.join(REJECTION_CATEGORIES)}."]
    if errors:
        raise invalid(errors)


def _code_actions(study: Study, code: str) -> list[str] | None:
    for entry in study.completion_codes:
        if entry.get("code") == code:
            return [a.get("action") for a in entry.get("actions", [])]
    return None
