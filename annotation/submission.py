"""Storing a worker's answer: the assignment and its labels in one transaction, once.

Idempotent on (assignmentId, worker): MTurk can hand a returned assignment id to another
worker, so the id alone is not a key (reference/mturk.md §7, pitfall 5). The same answer
sent again (a double click, a reload, a retried request) returns the stored assignment and
writes nothing; a different answer for a stored assignment is a Conflict, logged, never
stored.

Eligibility (blocked, excluded, already answered) is checked when the page is rendered:
only then is a submit token issued, so work in progress is never turned away here.
"""

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.answers import Answer, answer_parse
from annotation.hit_access import worker_ids_check
from annotation.hit_content import HitContent
from annotation.models import Batch
from config.errors import Conflict
from crowd.models import Assignment, Comparison, LikertLabel, Worker

logger = logging.getLogger(__name__)

MAX_TIME_ON_TASK_MS = 2**31 - 1  # PositiveIntegerField on every database


@dataclass(frozen=True)
class Submission:
    assignment: Assignment
    answer: Answer
    created: bool  # False when this answer was already stored


def answer_submit(
    *,
    content: HitContent,
    assignment_id: str,
    worker_external_id: str,
    fields: Mapping[str, Sequence[str]],
    accepted_at: datetime | None = None,
    time_on_task_ms: int | None = None,
) -> Submission:
    """Validate `fields` against the task and store the answer; see the module docstring.

    `content` is the task's `hit_content_get(task.uuid)`. Raises InvalidAnswer or
    ApplicationError (nothing written) or Conflict.
    """
    worker_ids_check(assignment_id=assignment_id, worker_id=worker_external_id)
    answer = answer_parse(kind=content.kind, item_ids=content.item_ids, fields=fields)
    try:
        # Insert first and let the unique constraint on (assignment_id, worker) catch a
        # repeat: the usual first submission then costs no extra read.
        with transaction.atomic():
            worker, _ = Worker.objects.get_or_create(channel=content.channel, external_id=worker_external_id)
            assignment = _assignment_create(
                content=content,
                worker=worker,
                assignment_id=assignment_id,
                answer=answer,
                accepted_at=accepted_at,
                time_on_task_ms=time_on_task_ms,
            )
    except IntegrityError:
        stored = Assignment.objects.filter(
            assignment_id=assignment_id, worker__channel=content.channel, worker__external_id=worker_external_id
        ).first()
        if stored is None:
            raise
        return _repeat_check(stored=stored, content=content, answer=answer)
    return Submission(assignment=assignment, answer=answer, created=True)


def _assignment_create(
    *,
    content: HitContent,
    worker: Worker,
    assignment_id: str,
    answer: Answer,
    accepted_at: datetime | None,
    time_on_task_ms: int | None,
) -> Assignment:
    assignment = Assignment.objects.create(
        task_id=content.task_id,
        hit_id=content.hit_pk,
        worker=worker,
        assignment_id=assignment_id,
        verification=Assignment.Verification.PENDING,
        answer={**answer.as_json(), "fields": dict(answer.fields())},
        untouched=answer.untouched,
        accepted_at=accepted_at,
        submitted_at=timezone.now(),
        time_on_task_ms=None if time_on_task_ms is None else max(0, min(time_on_task_ms, MAX_TIME_ON_TASK_MS)),
    )
    if content.kind == Batch.Kind.LIKERT:
        LikertLabel.objects.bulk_create(
            LikertLabel(assignment=assignment, worker=worker, proposition_id=pid, score=score)
            for pid, score in answer.ratings
        )
    else:
        Comparison.objects.bulk_create(
            Comparison(assignment=assignment, worker=worker, winner_id=winner, loser_id=loser)
            for winner, loser in answer.pairs()
        )
    return assignment


def _repeat_check(*, stored: Assignment, content: HitContent, answer: Answer) -> Submission:
    """A second submission of a stored assignment: the same answer is a success, else a conflict."""
    stored_answer = {key: value for key, value in stored.answer.items() if key != "fields"}
    if stored.task_id == content.task_id and stored_answer == answer.as_json():
        return Submission(assignment=stored, answer=answer, created=False)
    logger.warning(
        "answer conflict: assignment %s of worker %s was stored for task %s; "
        "a different answer for task %s was refused",
        stored.assignment_id,
        stored.worker_id,
        stored.task_id,
        content.task_id,
    )
    raise Conflict(
        "This assignment was already submitted with a different answer. The first answer is kept.",
        code="answer_conflict",
    )


def time_on_task(*, reported_ms: str | None, issued_at: datetime, now: datetime | None = None) -> int:
    """Milliseconds from page load to submit: the page's own measure when it sent a sane one,
    else the time since the form's token was issued."""
    since_issue = int(((now or timezone.now()) - issued_at).total_seconds() * 1000)
    reported = (reported_ms or "").strip()
    if reported.isascii() and reported.isdigit() and int(reported) <= max(since_issue, 0) + 60_000:
        return int(reported)
    return max(since_issue, 0)
