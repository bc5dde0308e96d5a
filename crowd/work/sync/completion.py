"""The end of a HIT's sync life (crowd.work.sync, point 4 of its docstring): complete once
collected with all its work reviewed, its untaken slots' budget released, then deleted at its
marketplace."""

import logging
from datetime import datetime

from crowd.marketplaces.base import Marketplace, MarketplaceError, MarketplaceUnavailable
from crowd.models import HIT
from crowd.work import ledger
from crowd.work.sync.visit import Visit

logger = logging.getLogger(__name__)


def hits_complete(*, visits: list[Visit], now: datetime) -> list[HIT]:
    """Mark complete the HITs collected with all their work reviewed, and release the budget
    of their slots nobody took; under the HITs' locks."""
    complete = [visit for visit in visits if visit.collected(now=now) and not visit.waiting()]
    HIT.objects.filter(pk__in=[visit.hit.pk for visit in complete]).update(complete=True)
    ledger.hits_unfilled_released(
        unfilled=[(v.campaign.pk, v.hit, max(0, v.hit.max_assignments - len(v.remote))) for v in complete]
    )
    return [visit.hit for visit in complete]


def hits_delete(*, hits: list[HIT], marketplace: Marketplace) -> None:
    """Delete complete HITs at the marketplace so they stop cluttering listings; best effort."""
    deleted = []
    for hit in hits:
        try:
            marketplace.hit_delete(hit.hit_id)
        except MarketplaceUnavailable:
            raise
        except MarketplaceError as error:
            logger.info("HIT %s is complete but cannot be deleted yet: %s", hit.hit_id, error.message)
            continue
        deleted.append(hit.pk)
    HIT.objects.filter(pk__in=deleted).update(deleted=True, status=HIT.Status.DISPOSED)
