"""Places beyond the quote: a study raised only with the researcher's recorded yes.

The publish page quotes a round at its studies' places (crowd.work.ledger.batch_commitments);
that is the most the round commits on its own. When sync finds every place used, nobody
working and answers still missing (crowd.channels.prolific.study_sync), it asks for more
places here (`raise_request`): a pending raise with its reason, its figures and what it
would add, shown on the campaign page. Nothing is committed and Prolific is not asked until
the campaign's owner approves it (`raise_approve`); the next sync then commits the places
(refused over the budget cap, as every commitment is) and raises them (`raise_done`).

One open raise per study at a time: while pending, a later sync updates its figures (the
answers missing change as sessions finish); once approved, its figures are fixed. A raise
whose study has no open batch left before the places were raised is dropped (`raises_drop`),
never raised; so is a pending one once a sync finds a place free or no answer missing (a
batch that joined the study brought its own places), so no stale ask waits on the page. (A
study is a topic's round, growing with each batch: crowd.marketplaces.prolific.study_opening.
The places a new batch adds are its own quote, not a raise.)
"""

from decimal import Decimal

from django.db import transaction
from django.utils import timezone

from annotation.campaigns import OwnerOnly, campaigns_owned_by
from annotation.models import Campaign
from config.errors import ApplicationError, NotFound
from crowd.marketplaces.base import CENT
from crowd.marketplaces.registry import channel_policy
from crowd.models import PlacesRaise, Study


def raise_cost(*, study: Study, places_from: int, places_to: int) -> Decimal:
    """What the added places commit, fees included: each place at the session reward."""
    policy = channel_policy(study.topic.campaign.channel)
    per_place = policy.submission_cost(reward=Decimal(study.reward_cents) * CENT)
    return ((places_to - places_from) * per_place).quantize(CENT)


@transaction.atomic
def raise_request(*, study: Study, places: int, missing: int, reason: str) -> PlacesRaise:
    """The study's open raise: a new pending one to `places`, a pending one brought up to date,
    or the approved one as it was approved (its figures are what the researcher said yes to)."""
    Study.objects.select_for_update().filter(pk=study.pk).first()
    open_raise = PlacesRaise.objects.filter(study=study, done_at__isnull=True, dropped_at__isnull=True).first()
    figures = {
        "places_from": study.places,
        "places_to": places,
        "missing": missing,
        "cost": raise_cost(study=study, places_from=study.places, places_to=places),
        "reason": reason,
    }
    if open_raise is None:
        return PlacesRaise.objects.create(study=study, requested_at=timezone.now(), **figures)
    if open_raise.approved_at is None and any(getattr(open_raise, k) != v for k, v in figures.items()):
        for name, value in figures.items():
            setattr(open_raise, name, value)
        open_raise.save(update_fields=list(figures))
    return open_raise


@transaction.atomic
def raise_approve(*, campaign: Campaign, raise_id: int, by) -> PlacesRaise:
    """The researcher's yes to a pending raise, recorded with who and when. Money stays with the
    campaign's owner (annotation.campaigns): a collaborator is refused; `by` None is the command
    line or a service acting for the owner, as in campaign_update. Approving twice is one yes."""
    places_raise = (
        PlacesRaise.objects.select_for_update()
        .filter(pk=raise_id, study__topic__campaign=campaign)
        .select_related("study")
        .first()
    )
    if places_raise is None:
        raise NotFound(f"Campaign {campaign.slug} has no such raise of places.")
    if by is not None and not campaigns_owned_by(by).filter(pk=campaign.pk).exists():
        raise OwnerOnly(
            f"Only the owner of campaign {campaign.slug!r} may approve more places: its money stays with them."
        )
    if places_raise.done_at is not None:
        return places_raise
    if places_raise.dropped_at is not None:
        raise ApplicationError(
            f"Study {places_raise.study} no longer needs these places: nothing to approve.",
            code="raise_dropped",
        )
    if places_raise.places_to <= places_raise.study.places:
        raise ApplicationError(
            f"Study {places_raise.study} has {places_raise.study.places} places already; nothing to approve.",
            code="raise_stale",
        )
    if places_raise.approved_at is None:
        places_raise.approved_at, places_raise.approved_by = timezone.now(), by
        places_raise.save(update_fields=["approved_at", "approved_by"])
    return places_raise


def raise_done(*, places_raise: PlacesRaise) -> None:
    """Prolific raised the places: the raise is closed."""
    PlacesRaise.objects.filter(pk=places_raise.pk, done_at__isnull=True).update(done_at=timezone.now())


def raises_drop(*, study: Study, approved: bool = True) -> int:
    """The study's open raises are not needed any more: its open batches ended (complete or
    expired), or, for one still waiting for a yes (`approved` False), places came free again
    or no answer is missing now (a batch added its own places, a participant returned theirs)."""
    open_raises = PlacesRaise.objects.filter(study=study, done_at__isnull=True, dropped_at__isnull=True)
    if not approved:
        open_raises = open_raises.filter(approved_at__isnull=True)
    return open_raises.update(dropped_at=timezone.now())


def raises_pending(*, campaign: Campaign) -> list[int]:
    """The ids of the campaign's raises waiting for a yes."""
    pending = PlacesRaise.objects.filter(
        study__topic__campaign=campaign, approved_at__isnull=True, dropped_at__isnull=True
    )
    return list(pending.order_by("pk").values_list("pk", flat=True))


def campaign_raises(*, campaign: Campaign) -> list[PlacesRaise]:
    """Every raise of the campaign's studies, oldest first, for the campaign page."""
    raises = PlacesRaise.objects.filter(study__topic__campaign=campaign)
    return list(raises.select_related("study__topic", "approved_by").order_by("requested_at", "pk"))
