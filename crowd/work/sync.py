"""Assignment sync: what the marketplace holds, reconciled with what our HIT pages stored.

For every HIT not complete (Celery beat, every SYNC_INTERVAL_SECONDS):

1. GetHIT, then ListAssignmentsForHIT (every status, every page).
2. Each listed assignment is matched with our answer by (assignment id, worker):
   found → `verified`; missing (the worker's post to us failed) → MTurk's answer XML is
   parsed and stored through the HIT page's own `crowd.answers.store.answer_submit`,
   then marked `recovered`. Approved or rejected at the marketplace (auto-approval, the
   requester website) → recorded, with its ledger entry.
3. Our answers still `pending` that the marketplace does not list become `unverified`
   (never counted) once the HIT is collected or their own deadline has passed: a forged
   post, or a worker who never submitted to MTurk.
4. Approval policy (`approvals_due`): a submitted, verified assignment is approved once
   quality control has run for its worker after it was submitted
   (WorkerQuality.computed_at > submitted_at), or when the marketplace's auto-approval is
   less than the channel's approval margin away (its policy's: MTurk
   MTURK_APPROVAL_MARGIN_SECONDS; the session channels approve on our own clock), whichever
   comes first.
5. A HIT is *collected* when all its assignments are in (or it expired and the last
   accepted assignment's deadline passed) and no answer of ours is pending; *complete*
   when it is collected and all its work is reviewed. A complete HIT releases the budget
   of slots nobody took, is deleted at the marketplace, and is not synced again.
6. The report says which campaigns and topics had HITs synced; sync enqueues nothing.
   What happens next (quality control, the pipeline, publishing) is the loop's owner's:
   `ranking.workflow`.

Remote calls come first; each HIT's and each assignment's database changes follow in
their own transaction, so a failed call leaves nothing half-written, and a transient
failure (MarketplaceUnavailable) aborts the run for the Celery task to retry.
"""

import logging
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from annotation.hit_page.answers import InvalidAnswer
from annotation.models import Campaign
from config.errors import ApplicationError, Conflict
from crowd.answers.content import hit_content_get
from crowd.answers.store import answer_submit
from crowd.marketplaces.base import (
    InvalidRemoteAnswer,
    Marketplace,
    MarketplaceError,
    MarketplaceUnavailable,
    NotFoundAtMarketplace,
    RemoteAssignment,
)
from crowd.marketplaces.registry import channel_policy, get_marketplace, policies
from crowd.models import CONFIRMED, HIT, Assignment, WorkerQuality, confirmed
from crowd.sessions.holds import sessions_verify
from crowd.sessions.studies import studies_sync
from crowd.work import ledger
from crowd.work.review import assignment_approve, review_record

logger = logging.getLogger(__name__)

Status = Assignment.Status
Verification = Assignment.Verification
# A listing may lag a fresh submission by a few minutes (reference §7.3).
LISTING_GRACE = timedelta(minutes=10)


@dataclass
class SyncReport:
    hits: int = 0
    verified: int = 0
    recovered: int = 0
    unverified: int = 0
    invalid: int = 0  # marketplace copies that are not a valid answer to their task
    approved: int = 0
    completed: int = 0
    errors: list[str] = field(default_factory=list)
    campaign_ids: set[int] = field(default_factory=set)  # campaigns whose HITs were synced
    topic_ids: set[int] = field(default_factory=set)


def assignments_sync(*, hit_ids: Iterable[int] | None = None, now: datetime | None = None) -> SyncReport:
    """Sync every HIT that is not complete (or only those in `hit_ids`); see the module docstring."""
    now = now or timezone.now()
    report = SyncReport()
    hits = HIT.objects.filter(complete=False, deleted=False).select_related("task__batch__topic__campaign")
    hits = hits.order_by("pk")
    if hit_ids is not None:
        hits = hits.filter(pk__in=list(hit_ids))
    marketplaces: dict[tuple[str, str], Marketplace] = {}
    for hit in hits:
        campaign = hit.task.batch.topic.campaign
        key = (campaign.channel, hit.environment)
        try:
            if key not in marketplaces:
                marketplaces[key] = get_marketplace(campaign, environment=hit.environment)
            hit_sync(hit=hit, marketplace=marketplaces[key], now=now, report=report)
        except MarketplaceUnavailable:
            raise  # the task retries the whole run later; what was synced so far is committed
        except ApplicationError as error:  # this HIT only: unknown at the marketplace, no client, ...
            logger.error("sync of HIT %s failed: %s", hit.hit_id, error.message)
            report.errors.append(f"{hit.hit_id}: {error.message}")
            continue
        report.hits += 1
        report.topic_ids.add(hit.task.batch.topic_id)
        report.campaign_ids.add(campaign.pk)
    if hit_ids is None:
        report.unverified += pending_sweep(now=now)
    return report


def pending_sweep(*, now: datetime) -> int:
    """Pending answers on HITs sync no longer visits (complete, deleted) or on tasks without
    one, once their deadline and the listing grace have passed: unverified. Their channel can
    no longer confirm them: a post with an invented assignment id ends here, whatever state
    its HIT is in. (Session channels confirm by hold: crowd.sessions.holds.sessions_verify.)"""
    sessions = [policy.channel for policy in policies() if policy.sessions]
    stale = (
        Assignment.objects.pending()
        .filter(Q(task__hit__isnull=True) | Q(task__hit__complete=True) | Q(task__hit__deleted=True))
        .exclude(task__batch__topic__campaign__channel__in=sessions)
    )
    durations = Campaign.objects.filter(pk__in=stale.values("task__batch__topic__campaign_id")).values_list(
        "pk", "assignment_duration_seconds"
    )
    swept = 0
    for campaign_id, seconds in durations:
        cutoff = now - timedelta(seconds=seconds) - LISTING_GRACE
        overdue = Q(accepted_at__lt=cutoff) | Q(accepted_at__isnull=True, submitted_at__lt=cutoff)
        swept += (
            stale.filter(overdue, task__batch__topic__campaign_id=campaign_id)
            .order_by()
            .update(verification=Verification.UNVERIFIED)
        )
    if swept:
        logger.warning("%d stored answer(s) their channel never confirmed marked unverified", swept)
    return swept


def channels_sync(*, now: datetime | None = None) -> dict:
    """One sync of everything: answers of session channels matched with their holds, every
    open HIT of every channel, then Prolific's submissions (crowd.sessions.studies)."""
    return channels_sync_report(now=now)[1]


def channels_sync_report(*, now: datetime | None = None) -> tuple[SyncReport, dict]:
    """`channels_sync` for the loop's owner: the HIT sync's report and the whole summary."""
    verified = sessions_verify(now=now)
    report = assignments_sync(now=now)
    studies = studies_sync(now=now)
    return report, {**_summary(report), "sessions": asdict(verified), "studies": asdict(studies)}


def _summary(report: SyncReport) -> dict:
    summary = asdict(report)
    summary["campaign_ids"], summary["topic_ids"] = sorted(report.campaign_ids), sorted(report.topic_ids)
    return summary


def hit_sync(*, hit: HIT, marketplace: Marketplace, now: datetime, report: SyncReport) -> None:
    try:
        remote_hit = marketplace.hit_get(hit.hit_id)
    except NotFoundAtMarketplace:
        HIT.objects.filter(pk=hit.pk).update(status=HIT.Status.DISPOSED, deleted=True, last_synced_at=now)
        raise
    hit.expires_at = remote_hit.expiration
    remote = marketplace.assignments_list(hit.hit_id)
    for item in remote:
        _remote_apply(hit=hit, remote=item, report=report)
    _unseen_mark(hit=hit, seen={(item.assignment_id, item.worker_id) for item in remote}, now=now, report=report)
    submitted = {(item.assignment_id, item.worker_id) for item in remote if item.status == Status.SUBMITTED}
    for assignment in approvals_due(hit=hit, remote=remote, now=now):
        if assignment_approve(assignment_id=assignment.pk):
            report.approved += 1
            submitted.discard((assignment.assignment_id, assignment.worker.external_id))
    with transaction.atomic():
        locked = HIT.objects.select_for_update().get(pk=hit.pk)
        locked.status = remote_hit.status or locked.status
        locked.expires_at = remote_hit.expiration
        locked.last_synced_at = now
        locked.complete = hit_collected(hit=locked, now=now) and not submitted
        locked.save(update_fields=["status", "expires_at", "last_synced_at", "complete"])
        if locked.complete:
            campaign_id = hit.task.batch.topic.campaign_id
            unfilled = max(0, locked.max_assignments - len(remote))
            ledger.unfilled_released(campaign_id=campaign_id, hit=locked, unfilled=unfilled)
    if locked.complete:
        report.completed += 1
        _hit_delete(hit=locked, marketplace=marketplace)


def _remote_apply(*, hit: HIT, remote: RemoteAssignment, report: SyncReport) -> None:
    """Match one listed assignment with our answer, recovering it from the XML if we have none."""
    task = hit.task
    channel = task.batch.topic.campaign.channel
    with transaction.atomic():
        HIT.objects.select_for_update().get(pk=hit.pk)
        ours = (
            Assignment.objects.select_for_update(of=("self",))
            .filter(assignment_id=remote.assignment_id, worker__channel=channel, worker__external_id=remote.worker_id)
            .first()
        )
        if ours is None:
            ours = _recover(hit=hit, remote=remote, report=report)
            if ours is None:
                return
        elif ours.task_id != task.pk:
            logger.error(
                "assignment %s of worker %s is stored for another task than HIT %s",
                remote.assignment_id,
                remote.worker_id,
                hit.hit_id,
            )
            report.errors.append(f"{hit.hit_id}: assignment {remote.assignment_id} is stored for another task")
            return
        elif ours.verification not in CONFIRMED:
            ours.verification = Verification.VERIFIED
            ours.hit = hit
            ours.save(update_fields=["verification", "hit"])
            report.verified += 1
        if remote.status != Status.SUBMITTED:
            review_record(assignment_id=ours.pk, status=remote.status, reason=remote.feedback)


def _recover(*, hit: HIT, remote: RemoteAssignment, report: SyncReport) -> Assignment | None:
    """Store the channel's copy of an answer our page never received (MTurk keeps one);
    None when it is not valid."""
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


def _unseen_mark(*, hit: HIT, seen: set[tuple[str, str]], now: datetime, report: SyncReport) -> None:
    """Pending answers the marketplace does not list, once it can no longer list them: unverified."""
    collected = hit_collected(hit=hit, now=now, pending_ignored=True)
    duration = timedelta(seconds=hit.task.batch.topic.campaign.assignment_duration_seconds)
    pending = Assignment.objects.filter(task=hit.task, verification=Verification.PENDING).select_related("worker")
    overdue = [
        assignment.pk
        for assignment in pending
        if (assignment.assignment_id, assignment.worker.external_id) not in seen
        and (collected or (assignment.accepted_at or assignment.submitted_at) + duration + LISTING_GRACE < now)
    ]
    if overdue:
        # Compare-and-set: an answer verified meanwhile by a concurrent sync stays verified.
        changed = Assignment.objects.filter(pk__in=overdue, verification=Verification.PENDING).update(
            verification=Verification.UNVERIFIED
        )
        report.unverified += changed
        logger.warning("HIT %s: %d stored answer(s) unknown to the marketplace marked unverified", hit.hit_id, changed)


def approvals_due(*, hit: HIT, remote: list[RemoteAssignment], now: datetime) -> list[Assignment]:
    """Our submitted, verified assignments of `hit` to approve now.

    Due when quality control has run for the worker since the assignment was submitted
    (WorkerQuality.computed_at > submitted_at), or when the marketplace's auto-approval is
    within the approval margin — whichever comes first. Excluded workers are paid too:
    exclusion keeps their labels out of the ranking; only an admin rejects.
    """
    campaign = hit.task.batch.topic.campaign
    auto_approval = {
        (item.assignment_id, item.worker_id): item.auto_approval_at
        for item in remote
        if item.status == Status.SUBMITTED
    }
    submitted = Assignment.objects.confirmed().filter(task=hit.task, status=Status.SUBMITTED)
    candidates = [
        assignment
        for assignment in submitted.select_related("worker")
        if (assignment.assignment_id, assignment.worker.external_id) in auto_approval
    ]
    qualities = WorkerQuality.objects.filter(
        campaign=campaign, worker__in=[a.worker_id for a in candidates], computed_at__isnull=False
    )
    qc_times = dict(qualities.values_list("worker_id", "computed_at"))
    margin = channel_policy(campaign.channel).approval_margin()  # MTurk: MTURK_APPROVAL_MARGIN_SECONDS
    fallback_delay = timedelta(seconds=campaign.auto_approval_delay_seconds)
    due = []
    for assignment in candidates:
        qc_at = qc_times.get(assignment.worker_id)
        auto_at = auto_approval[(assignment.assignment_id, assignment.worker.external_id)]
        auto_at = auto_at or assignment.submitted_at + fallback_delay
        if (qc_at is not None and qc_at > assignment.submitted_at) or now >= auto_at - margin:
            due.append(assignment)
    return due


def hit_collected(*, hit: HIT, now: datetime, pending_ignored: bool = False) -> bool:
    """All answers are in: every slot holds a counted answer, or the HIT expired and the last
    accepted assignment's deadline passed — and (unless `pending_ignored`) none of our answers
    is still waiting for the marketplace."""
    answers = Assignment.objects.filter(task_id=hit.task_id).aggregate(
        counted=Count("pk", filter=confirmed()),
        pending=Count("pk", filter=Q(verification=Verification.PENDING)),
    )
    if answers["pending"] and not pending_ignored:
        return False
    if answers["counted"] >= hit.max_assignments:
        return True
    duration = timedelta(seconds=hit.task.batch.topic.campaign.assignment_duration_seconds)
    return hit.expires_at is not None and now >= hit.expires_at + duration


def _hit_delete(*, hit: HIT, marketplace: Marketplace) -> None:
    """Delete a complete HIT at the marketplace so it stops cluttering listings; best effort."""
    try:
        marketplace.hit_delete(hit.hit_id)
    except MarketplaceUnavailable:
        raise
    except MarketplaceError as error:
        logger.info("HIT %s is complete but cannot be deleted yet: %s", hit.hit_id, error.message)
        return
    HIT.objects.filter(pk=hit.pk).update(deleted=True, status=HIT.Status.DISPOSED)
