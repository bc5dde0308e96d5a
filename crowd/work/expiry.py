"""Ending a batch early: its remaining HITs stop being offered.

`UpdateExpirationForHIT` to now, per HIT that is still open and has a slot its channel has not
confirmed an answer for (a HIT whose every slot holds a confirmed answer offers nothing: a topic
that finished before the pass approved its last batch called once per HIT of it for nothing);
workers who accepted before
can submit until their assignment's deadline, and sync keeps collecting those answers. The
budget of slots nobody took is released when sync finds the HIT collected (crowd.work.sync);
the commitment of work that never went on offer is released here (crowd.work.ledger).
"""

from dataclasses import dataclass

from django.db import transaction
from django.db.models import Count, F
from django.utils import timezone

from annotation.batching import batch_status_move
from annotation.models import Batch
from crowd.marketplaces.base import InvalidState
from crowd.marketplaces.registry import get_marketplace
from crowd.models import HIT, confirmed
from crowd.work import ledger


@dataclass(frozen=True)
class ExpiryResult:
    batch_id: int
    expired: int  # HITs expired now
    unpublished: int  # tasks that never got a HIT


def batch_expire(*, batch_id: int) -> ExpiryResult:
    batch = Batch.objects.select_related("topic__campaign").get(pk=batch_id)
    campaign = batch.topic.campaign
    now = timezone.now()
    open_hits = (
        HIT.objects.on_offer(now)
        .filter(task__batch=batch)
        .annotate(answered=Count("task__assignments", filter=confirmed("task__assignments__")))
        .filter(answered__lt=F("max_assignments"))
    )
    expired = 0
    for hit in open_hits.order_by("pk"):
        try:
            get_marketplace(campaign, environment=hit.environment).hit_expire(hit.hit_id)
        except InvalidState:
            pass  # expired or disposed already: sync reads its real expiration
        HIT.objects.filter(pk=hit.pk).update(expires_at=now)
        expired += 1
    with transaction.atomic():
        batch = Batch.objects.select_for_update().get(pk=batch_id)
        unpublished = batch.tasks.filter(hit__isnull=True).count()
        ledger.batch_unpublished_released(batch_id=batch_id)
        batch_status_move(batch_id=batch_id, to=Batch.Status.EXPIRED)
    return ExpiryResult(batch_id=batch_id, expired=expired, unpublished=unpublished)
