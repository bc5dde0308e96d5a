"""The end of a HIT's sync life (crowd.work.sync, point 4 of its docstring): complete once
collected with all its work reviewed, its untaken slots' budget released, then deleted at its
marketplace."""

import logging
from datetime import datetime

from crowd.marketplaces.base import Marketplace, MarketplaceUnavailable
from crowd.models import HIT
from crowd.work import ledger
from crowd.work.calls import Outcome, calls_run
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


def hits_delete(*, hits: list[HIT], marketplace: Marketplace, channel: str) -> None:
    """Delete complete HITs at the marketplace so they stop cluttering listings; best effort,
    a few calls at once within the channel's bound (crowd.work.calls). What was deleted before
    a transient failure is recorded, then the failure raised."""
    deleted: list[int] = []
    unavailable: MarketplaceUnavailable | None = None

    def done(outcome: Outcome[HIT, None]) -> None:
        nonlocal unavailable
        hit, error = outcome.item, outcome.error
        if isinstance(error, MarketplaceUnavailable):
            unavailable = unavailable or error
        elif error is not None:
            logger.info("HIT %s is complete but cannot be deleted yet: %s", hit.hit_id, error.message)
        else:
            deleted.append(hit.pk)

    calls_run(
        channel=channel,
        items=hits,
        call=lambda hit: marketplace.hit_delete(hit.hit_id),
        done=done,
        stop=lambda error: isinstance(error, MarketplaceUnavailable),
    )
    HIT.objects.filter(pk__in=deleted).update(deleted=True, status=HIT.Status.DISPOSED)
    if unavailable is not None:
        raise unavailable
