"""The approval policy of a sync (crowd.work.sync, point 3 of its docstring): which submitted,
confirmed answers to approve now, and their approval at the marketplace."""

import logging
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.db.models import Exists, OuterRef, Q

from annotation.models import Campaign
from crowd.marketplaces.base import Marketplace, MarketplaceUnavailable
from crowd.marketplaces.registry import channel_policy
from crowd.models import CONFIRMED, Assignment, WorkerQuality
from crowd.work.calls import Outcome, calls_run
from crowd.work.review import Review, approve_at_marketplace
from crowd.work.sync.report import SyncReport
from crowd.work.sync.visit import Visit

logger = logging.getLogger(__name__)

Status = Assignment.Status


def approval_due(*, now: datetime, campaigns: Iterable[Campaign]) -> Q:
    """Which of `campaigns`' submitted, confirmed assignments to approve now: quality control
    has run for the worker since the assignment was submitted, or the channel's auto-approval
    (submitted_at + the campaign's delay) is within the channel's approval margin. Excluded
    workers are paid too: exclusion keeps their labels out of the ranking; only an admin
    rejects."""
    qc_since = WorkerQuality.objects.filter(
        campaign_id=OuterRef("task__batch__topic__campaign_id"),
        worker_id=OuterRef("worker_id"),
        computed_at__gt=OuterRef("submitted_at"),
    )
    near = Q(pk__in=[])
    for campaign in campaigns:
        margin = channel_policy(campaign.channel).approval_margin()  # MTurk: MTURK_APPROVAL_MARGIN_SECONDS
        auto_approved_from = now - timedelta(seconds=campaign.auto_approval_delay_seconds) + margin
        near |= Q(task__batch__topic__campaign_id=campaign.pk, submitted_at__lte=auto_approved_from)
    return Q(Exists(qc_since)) | near


def approvals_due(*, visits: list[Visit], now: datetime) -> list[Assignment]:
    """Our submitted, confirmed answers of these HITs that their marketplace lists as
    submitted and that `approval_due` says to approve now — or whose auto-approval the
    marketplace itself puts within the approval margin."""
    listed = {
        (item.assignment_id, item.worker_id): item.auto_approval_at
        for visit in visits
        for item in visit.remote
        if item.status == Status.SUBMITTED
    }
    candidates = {
        answer.pk: (visit, answer)
        for visit in visits
        for answer in visit.ours
        if answer.status == Status.SUBMITTED
        and answer.verification in CONFIRMED
        and (answer.assignment_id, answer.worker.external_id) in listed
    }
    if not candidates:
        return []
    campaigns = {visit.campaign.pk: visit.campaign for visit in visits}.values()
    rule = approval_due(now=now, campaigns=campaigns)
    due = set(Assignment.objects.filter(rule, pk__in=list(candidates)).values_list("pk", flat=True))
    for pk, (visit, answer) in candidates.items():
        auto_at = listed[answer.assignment_id, answer.worker.external_id]
        margin = channel_policy(visit.campaign.channel).approval_margin()
        if auto_at is not None and now >= auto_at - margin:
            due.add(pk)
    return [answer for pk, (_, answer) in sorted(candidates.items()) if pk in due]


def assignments_approve(
    *, due: list[Assignment], marketplace: Marketplace, channel: str, report: SyncReport
) -> tuple[list[Review], MarketplaceUnavailable | None]:
    """Approve each at the marketplace: all at once where it can (the session channels, one
    read), else one call each (MTurk: ApproveAssignment; it has no bulk approval), a few at
    once within the channel's bound (crowd.work.calls); the decisions it
    now holds, and the transient failure that stopped the run, if one did (the calls in flight
    then finish and count). Approving again what is approved is harmless: the marketplace says
    InvalidState, and its status is read back (crowd.work.review.approve_at_marketplace)."""
    reviews: list[Review] = []
    unavailable: MarketplaceUnavailable | None = None
    at_once = marketplace.assignments_approve_all([assignment.assignment_id for assignment in due]) if due else None
    if at_once is not None:  # the session channels: their decisions are ours, read in one go
        for assignment in due:
            status = at_once.get(assignment.assignment_id)
            if status is None:
                logger.error("approving assignment %s failed: unknown to its channel", assignment.assignment_id)
                report.errors.append(f"assignment {assignment.assignment_id}: unknown to its channel")
            elif status != Status.SUBMITTED:
                reviews.append(Review(assignment.pk, status))
                assignment.status = status
        return reviews, None

    def done(outcome: Outcome[Assignment, str]) -> None:
        nonlocal unavailable
        assignment, error = outcome.item, outcome.error
        if isinstance(error, MarketplaceUnavailable):
            unavailable = unavailable or error
        elif error is not None:
            logger.error("approving assignment %s failed: %s", assignment.assignment_id, error.message)
            report.errors.append(f"assignment {assignment.assignment_id}: {error.message}")
        elif outcome.result != Status.SUBMITTED:  # still Submitted: the marketplace is not ready; the next pass
            assert outcome.result is not None
            reviews.append(Review(assignment.pk, outcome.result))
            assignment.status = outcome.result

    calls_run(
        channel=channel,
        items=due,
        call=lambda assignment: approve_at_marketplace(marketplace=marketplace, assignment=assignment),
        done=done,
        stop=lambda error: isinstance(error, MarketplaceUnavailable),
    )
    return reviews, unavailable
