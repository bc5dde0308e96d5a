"""Where a HIT stands, read from the database: the one rule of a collected HIT (every slot holds
a confirmed answer, or the HIT expired and the last accepted assignment's deadline passed, and
no answer is pending). The sync (crowd.work.sync) applies it to a chunk it holds in memory; the
pipeline (ranking.pipeline) reads it here, a selector, not a sync service."""

from datetime import datetime, timedelta

from django.db.models import Count, Q

from crowd.models import HIT, Assignment, confirmed

Verification = Assignment.Verification


def collected(*, hit: HIT, counted: int, pending: int, now: datetime) -> bool:
    """The one rule of a collected HIT, given its confirmed and pending answers."""
    if pending:
        return False
    if counted >= hit.max_assignments:
        return True
    duration = timedelta(seconds=hit.task.batch.topic.campaign.assignment_duration_seconds)
    return hit.expires_at is not None and now >= hit.expires_at + duration


def hit_collected(*, hit: HIT, now: datetime, pending_ignored: bool = False) -> bool:
    """All answers are in: every slot holds a confirmed answer, or the HIT expired and the last
    accepted assignment's deadline passed — and (unless `pending_ignored`) none of our answers
    is still waiting for the marketplace."""
    answers = Assignment.objects.filter(task_id=hit.task_id).aggregate(
        counted=Count("pk", filter=confirmed()),
        pending=Count("pk", filter=Q(verification=Verification.PENDING)),
    )
    pending = 0 if pending_ignored else answers["pending"]
    return collected(hit=hit, counted=answers["counted"], pending=pending, now=now)
