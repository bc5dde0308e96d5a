"""One chunk of a sync pass (crowd.work.sync, points 1–4 of its docstring): its HITs' listings
fetched per marketplace, then applied, approved, completed — remote calls first, database
changes in their own transactions. Where the channel lists one HIT at a time (MTurk), a
*settled* HIT — every slot holds an answer the marketplace confirmed, none pending — is not
listed again: its confirmed answers stand for the listing (`_settled`)."""

import logging
from collections import defaultdict
from datetime import datetime

from django.db import transaction

from config.errors import ApplicationError
from crowd.marketplaces.base import Marketplace, MarketplaceError, NotFoundAtMarketplace, RemoteAssignment
from crowd.marketplaces.registry import channel_policy, marketplace_for
from crowd.models import CONFIRMED, HIT, Assignment
from crowd.work.calls import Outcome, calls_run
from crowd.work.review import reviews_record
from crowd.work.sync.approvals import approvals_due, assignments_approve
from crowd.work.sync.completion import hits_complete, hits_delete
from crowd.work.sync.listing import listings_apply
from crowd.work.sync.report import SyncReport
from crowd.work.sync.visit import Visit, hits_lock

logger = logging.getLogger(__name__)

Status = Assignment.Status
Verification = Assignment.Verification


def hits_sync(*, hit_ids: list[int], now: datetime, reviews: bool = True) -> SyncReport:
    """Sync these HITs (a chunk); see the module docstring. Without `reviews`, their answers
    are confirmed only: nothing approved or completed (crowd.work.sync.assignments_sync)."""
    report = SyncReport()
    hits = HIT.objects.filter(pk__in=hit_ids, complete=False, deleted=False).order_by("pk")
    groups: dict[tuple[str, str], list[HIT]] = defaultdict(list)
    for hit in hits.select_related("task__batch__topic__campaign"):
        groups[hit.task.batch.topic.campaign.channel, hit.environment].append(hit)
    for (channel, environment), group in groups.items():
        try:
            marketplace = marketplace_for(channel=channel, environment=environment)
        except ApplicationError as error:  # no client for it here, ...
            for hit in group:
                _error(report, hit, error.message)
            continue
        listed: dict[str, list[RemoteAssignment] | MarketplaceError] = {}
        if _lists_per_hit(channel):  # a call per HIT: none for a settled HIT
            listed.update(_settled(group))
        unsettled = [hit.hit_id for hit in group if hit.hit_id not in listed]
        listed.update(_listings(marketplace=marketplace, channel=channel, hit_ids=unsettled) if unsettled else {})
        visits, gone = [], []
        for hit in group:
            remote = listed[hit.hit_id]
            if isinstance(remote, MarketplaceError):
                if isinstance(remote, NotFoundAtMarketplace):
                    gone.append(hit.pk)
                _error(report, hit, remote.message)
            else:
                visits.append(Visit(hit=hit, remote=remote))
        HIT.objects.filter(pk__in=gone).update(status=HIT.Status.DISPOSED, deleted=True, last_synced_at=now)
        if visits:
            _visits_sync(
                visits=visits, marketplace=marketplace, channel=channel, now=now, report=report, reviewing=reviews
            )
    return report


def _settled(hits: list[HIT]) -> dict[str, list[RemoteAssignment]]:
    """The HITs whose every slot holds an answer their marketplace confirmed, none pending,
    with those answers as it listed them: there is nothing it could list that we do not know
    (a HIT has no more assignments than slots), so a listing per HIT would be a call for
    nothing. What the marketplace may have decided since (auto-approval, a rejection on its
    website) its approval call says: InvalidState, and the status is read back
    (crowd.work.review.approve_at_marketplace). One query for the chunk."""
    answers: dict[int, list[RemoteAssignment]] = defaultdict(list)
    unsettled: set[int] = set()
    rows = Assignment.objects.filter(task_id__in=[hit.task_id for hit in hits]).values_list(
        "task_id", "assignment_id", "worker__external_id", "status", "verification", "submitted_at"
    )
    hit_ids = {hit.task_id: hit.hit_id for hit in hits}
    for task_id, assignment_id, worker_id, status, verification, submitted_at in rows:
        if verification == Verification.PENDING:
            unsettled.add(task_id)
        elif verification in CONFIRMED:
            answers[task_id].append(
                RemoteAssignment(assignment_id, worker_id, hit_ids[task_id], status, submitted_at=submitted_at)
            )
    return {
        hit.hit_id: answers[hit.task_id]
        for hit in hits
        if hit.task_id not in unsettled and len(answers[hit.task_id]) >= hit.max_assignments
    }


def _listings(
    *, marketplace: Marketplace, channel: str, hit_ids: list[str]
) -> dict[str, list[RemoteAssignment] | MarketplaceError]:
    """Each HIT's assignments at its marketplace: in one read where the channel lists many at
    once, else one listing per HIT, a few at once within the channel's bound (crowd.work.calls).
    A transient failure (MarketplaceUnavailable) raises, for the pass's task to retry."""
    if not _lists_per_hit(channel):
        return marketplace.assignments_by_hit(hit_ids)
    listed: dict[str, list[RemoteAssignment] | MarketplaceError] = {}
    failures: list[MarketplaceError] = []

    def done(outcome: Outcome[str, dict[str, list[RemoteAssignment] | MarketplaceError]]) -> None:
        if outcome.error is not None:
            failures.append(outcome.error)
        elif outcome.result is not None:
            listed.update(outcome.result)

    calls_run(
        channel=channel,
        items=hit_ids,
        call=lambda hit_id: marketplace.assignments_by_hit([hit_id]),
        done=done,
        stop=lambda error: True,
    )
    if failures:
        raise failures[0]
    return listed


def _lists_per_hit(channel: str) -> bool:
    """Whether the channel's listing is a marketplace call per HIT (MTurk, whose calls run a
    few at once); else one read lists the whole chunk (the session channels: one at a time)."""
    return channel_policy(channel).concurrent_calls() > 1


def _error(report: SyncReport, hit: HIT, message: str) -> None:
    logger.error("sync of HIT %s failed: %s", hit.hit_id, message)
    report.errors.append(f"{hit.hit_id}: {message}")


def _visits_sync(
    *, visits: list[Visit], marketplace: Marketplace, channel: str, now: datetime, report: SyncReport, reviewing: bool
) -> None:
    with transaction.atomic():
        hits_lock(visits)
        listings_apply(visits=visits, now=now, report=report)
        due = approvals_due(visits=visits, now=now) if reviewing else []
        HIT.objects.filter(pk__in=[visit.hit.pk for visit in visits]).update(last_synced_at=now)
    if not reviewing:
        _visited(visits, report)
        return
    reviews, unavailable = assignments_approve(due=due, marketplace=marketplace, channel=channel, report=report)
    with transaction.atomic():
        hits_lock(visits)
        reviews_record(reviews=reviews)  # what the marketplace did is recorded, even before a failure
        complete = [] if unavailable else hits_complete(visits=visits, now=now)
    report.approved += sum(1 for review in reviews if review.status == Status.APPROVED)
    if unavailable is not None:
        raise unavailable
    report.completed += len(complete)
    hits_delete(hits=complete, marketplace=marketplace, channel=channel)
    _visited(visits, report)


def _visited(visits: list[Visit], report: SyncReport) -> None:
    for visit in visits:
        report.hits += 1
        report.topic_ids.add(visit.hit.task.batch.topic_id)
        report.campaign_ids.add(visit.campaign.pk)
