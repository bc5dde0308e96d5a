"""A chunk's listed assignments matched with our answers and applied (crowd.work.sync, point 2
of its docstring): verified, recovered from the channel's copy, decided at the marketplace,
or — pending and no longer listable — unverified."""

import logging
from datetime import datetime, timedelta

from django.db.models import Q

from config.errors import Conflict
from crowd.hit_page.answers import InvalidAnswer
from crowd.hit_page.content import hit_content_get
from crowd.hit_page.store import answer_submit
from crowd.marketplaces.base import InvalidRemoteAnswer, RemoteAssignment
from crowd.marketplaces.registry import channel_policy
from crowd.models import CONFIRMED, HIT, Assignment
from crowd.work.review import Review, reviews_record
from crowd.work.sync.report import SyncReport
from crowd.work.sync.visit import Visit

logger = logging.getLogger(__name__)

Status = Assignment.Status
Verification = Assignment.Verification
# A listing may lag a fresh submission by a few minutes (reference §7.3).
LISTING_GRACE = timedelta(minutes=10)
ANSWER_FIELDS = ("answer", "shown_order", "reject_reason")


def listings_apply(*, visits: list[Visit], now: datetime, report: SyncReport) -> None:
    """Match every listed assignment with our answer (recovering it from the channel's copy
    when we have none), record what the marketplace decided, and mark unverified our pending
    answers it can no longer list. Under the HITs' locks; our answers are locked here."""
    channel = visits[0].campaign.channel
    by_task = {visit.hit.task_id: visit for visit in visits}
    listed_ids = {item.assignment_id for visit in visits for item in visit.remote}
    answers = (
        Assignment.objects.select_for_update(of=("self",))
        .select_related("worker")
        .defer(*ANSWER_FIELDS)  # what the worker answered: a sync reads none of it
        .filter(Q(task_id__in=list(by_task)) | Q(assignment_id__in=listed_ids, worker__channel=channel))
        .order_by("pk")
    )
    stored: dict[tuple[str, str], Assignment] = {}
    for answer in answers:
        if answer.worker.channel == channel:
            stored[answer.assignment_id, answer.worker.external_id] = answer
        if answer.task_id in by_task:
            by_task[answer.task_id].ours.append(answer)
    verified: list[Assignment] = []
    decided: list[Review] = []
    for visit in visits:
        for item in visit.remote:
            ours = stored.get((item.assignment_id, item.worker_id))
            if ours is None:
                ours = _recover(hit=visit.hit, remote=item, report=report)
                if ours is None:
                    continue
                visit.ours.append(ours)
            elif ours.task_id != visit.hit.task_id:
                logger.error(
                    "assignment %s of worker %s is stored for another task than HIT %s",
                    item.assignment_id,
                    item.worker_id,
                    visit.hit.hit_id,
                )
                report.errors.append(f"{visit.hit.hit_id}: assignment {item.assignment_id} is stored for another task")
                continue
            elif ours.verification not in CONFIRMED:
                ours.verification = Verification.VERIFIED
                verified.append(ours)
            if item.status != Status.SUBMITTED and item.status != ours.status:
                decided.append(Review(ours.pk, item.status, item.feedback))
                ours.status = item.status
    Assignment.objects.filter(pk__in=[answer.pk for answer in verified]).update(verification=Verification.VERIFIED)
    for visit in visits:  # an answer stored before its HIT was recorded
        strays = [answer.pk for answer in visit.ours if answer.hit_id != visit.hit.pk]
        if strays:
            Assignment.objects.filter(pk__in=strays).update(hit=visit.hit)
    report.verified += len(verified)
    reviews_record(reviews=decided)
    report.unverified += _unseen_mark(visits=visits, now=now)


def _recover(*, hit: HIT, remote: RemoteAssignment, report: SyncReport) -> Assignment | None:
    """Store the channel's copy of an answer our page never received (MTurk keeps one);
    None when it is not valid. Rare: one answer at a time."""
    try:
        content = hit_content_get(hit.task.uuid)
        assert content is not None, "the HIT's task exists: the caller holds the HIT's row lock"
        submission = answer_submit(
            content=content,
            assignment_id=remote.assignment_id,
            worker_external_id=remote.worker_id,
            fields=channel_policy(hit.channel).answer_fields(remote.answer_xml),
            accepted_at=remote.accepted_at,
        )
    except (InvalidRemoteAnswer, InvalidAnswer, Conflict) as error:
        logger.warning(
            "HIT %s: the marketplace's copy of assignment %s of worker %s cannot be stored: %s",
            hit.hit_id,
            remote.assignment_id,
            remote.worker_id,
            error.message,
        )
        report.invalid += 1
        return None
    assignment = submission.assignment
    # Stored by our page a moment ago (created=False) is a verified answer, not a recovered one.
    assignment.verification = Verification.RECOVERED if submission.created else Verification.VERIFIED
    assignment.hit = hit
    assignment.submitted_at = remote.submitted_at or assignment.submitted_at
    assignment.save(update_fields=["verification", "hit", "submitted_at"])
    if submission.created:
        report.recovered += 1
    else:
        report.verified += 1
    return assignment


def _unseen_mark(*, visits: list[Visit], now: datetime) -> int:
    """Our pending answers the marketplace does not list, once it can no longer list them
    (the HIT is collected, or their own deadline and the listing grace passed): unverified."""
    overdue = []
    for visit in visits:
        seen = {(item.assignment_id, item.worker_id) for item in visit.remote}
        collected = visit.collected(now=now, pending_ignored=True)
        duration = timedelta(seconds=visit.campaign.assignment_duration_seconds)
        for answer in visit.ours:
            if answer.verification != Verification.PENDING:
                continue
            late = collected or (answer.accepted_at or answer.submitted_at) + duration + LISTING_GRACE < now
            if late and (answer.assignment_id, answer.worker.external_id) not in seen:
                answer.verification = Verification.UNVERIFIED
                overdue.append(answer)
    if not overdue:
        return 0
    changed = Assignment.objects.filter(pk__in=[a.pk for a in overdue], verification=Verification.PENDING).update(
        verification=Verification.UNVERIFIED
    )
    logger.warning("%d stored answer(s) unknown to the marketplace marked unverified", changed)
    return changed
