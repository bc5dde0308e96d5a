"""Which open HITs a sync pass visits (crowd.work.sync, the module docstring's list), and the
sweep of pending answers no pass will visit again."""

import logging
from datetime import datetime, timedelta

from django.db.models import Count, F, Q

from annotation.models import Campaign
from config.errors import ApplicationError
from crowd.marketplaces.base import MarketplaceUnavailable
from crowd.marketplaces.registry import marketplace_for, policies
from crowd.models import HIT, Assignment, confirmed
from crowd.work.sync.approvals import approval_due
from crowd.work.sync.listing import LISTING_GRACE
from crowd.work.sync.report import SyncReport

logger = logging.getLogger(__name__)

Status = Assignment.Status
Verification = Assignment.Verification


def hits_with_news(*, now: datetime, report: SyncReport) -> list[int]:
    """The open HITs a pass visits, in primary-key order; see the module docstring."""
    open_hits = HIT.objects.filter(complete=False, deleted=False)
    campaigns = list(
        Campaign.objects.filter(pk__in=open_hits.values("task__batch__topic__campaign_id")).only(
            "pk", "channel", "assignment_duration_seconds", "auto_approval_delay_seconds"
        )
    )
    if not campaigns:
        return []
    pending = Assignment.objects.pending().filter(task__hit__complete=False, task__hit__deleted=False)
    news = set(pending.values_list("task__hit", flat=True).distinct())
    submitted = Assignment.objects.confirmed().filter(
        status=Status.SUBMITTED, task__hit__complete=False, task__hit__deleted=False
    )
    news |= set(submitted.filter(approval_due(now=now, campaigns=campaigns)).values_list("task__hit", flat=True))
    swept = Q(pk__in=[])
    for campaign in campaigns:
        last_deadline = now - timedelta(seconds=campaign.assignment_duration_seconds)
        swept |= Q(task__batch__topic__campaign_id=campaign.pk, expires_at__lte=last_deadline)
    news |= set(open_hits.filter(swept).values_list("pk", flat=True))
    news |= _reviewable_short(open_hits=open_hits, report=report)
    return sorted(news)


def _reviewable_short(*, open_hits, report: SyncReport) -> set[int]:
    """Open HITs their marketplace lists as reviewable while we hold fewer confirmed answers
    than their slots: the marketplace has answers our page never stored."""
    short: set[int] = set()
    pairs = open_hits.values_list("task__batch__topic__campaign__channel", "environment").distinct()
    for channel, environment in sorted(pairs):
        try:
            reviewable = [
                hit.hit_id for hit in marketplace_for(channel=channel, environment=environment).hits_reviewable()
            ]
        except MarketplaceUnavailable:
            raise
        except ApplicationError as error:
            logger.error("listing reviewable HITs of %s %s failed: %s", channel, environment, error.message)
            report.errors.append(f"{channel} {environment}: {error.message}")
            continue
        if not reviewable:
            continue
        listed = open_hits.filter(environment=environment, hit_id__in=reviewable)
        listed = listed.filter(task__batch__topic__campaign__channel=channel)
        listed.exclude(status=HIT.Status.REVIEWABLE).update(status=HIT.Status.REVIEWABLE)
        held = Count("task__assignments", filter=confirmed("task__assignments__"))
        short |= set(listed.annotate(held=held).filter(held__lt=F("max_assignments")).values_list("pk", flat=True))
    return short


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
