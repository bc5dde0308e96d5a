"""Campaigns: creating them with the paper's defaults, who sees them, settings and status."""

from django.db import transaction
from django.utils.text import slugify

from annotation.models import Campaign
from config.errors import ApplicationError, Conflict


class CampaignExists(ApplicationError):
    code = "campaign_exists"


@transaction.atomic
def campaign_create(*, slug: str, name: str, description: str = "", owner=None, **options) -> Campaign:
    """A campaign with the defaults of Falke & Gurevych (2017): 5 propositions and 5
    assignments per HIT, $0.06 Likert and $0.05 comparison HITs, top 100 with ties, 10 % of
    all pairs in batches of 100 pairs. `options` override any other field."""
    if slug != slugify(slug):
        raise ApplicationError(
            f"{slug!r} is not a valid slug: use lower-case letters, digits and hyphens, e.g. {slugify(slug)!r}.",
            code="invalid_slug",
        )
    if Campaign.objects.filter(slug=slug).exists():
        raise CampaignExists(f"A campaign with the slug {slug!r} already exists.")
    return Campaign.objects.create(slug=slug, name=name, description=description, owner=owner, **options)


def campaigns_visible_to(user):
    """A researcher sees their own campaigns; a superuser sees all."""
    if user.is_superuser:
        return Campaign.objects.all()
    return Campaign.objects.filter(owner=user)


@transaction.atomic
def campaign_update(*, campaign_id: int, changes: dict) -> Campaign:
    """Apply setting changes while the campaign is a draft; a published one refuses (409)."""
    campaign = Campaign.objects.select_for_update().get(pk=campaign_id)
    if campaign.status != Campaign.Status.DRAFT:
        raise Conflict(
            f"Campaign {campaign.slug!r} is {campaign.status}: settings can be changed only while it is a draft.",
            code="campaign_not_draft",
        )
    for field, value in changes.items():
        setattr(campaign, field, value)
    campaign.save(update_fields=list(changes))
    return campaign


@transaction.atomic
def campaign_pause(*, campaign_id: int) -> Campaign:
    """Stop the pipeline from publishing further batches. HITs already published stay on
    offer (MTurk cannot pause a HIT): expire a batch to stop its HITs. Pausing twice is fine."""
    campaign = Campaign.objects.select_for_update().get(pk=campaign_id)
    if campaign.status == Campaign.Status.FINISHED:
        raise Conflict(f"Campaign {campaign.slug!r} is finished: there is nothing to pause.", code="campaign_finished")
    if campaign.status != Campaign.Status.PAUSED:
        campaign.status = Campaign.Status.PAUSED
        campaign.save(update_fields=["status"])
    return campaign


@transaction.atomic
def campaign_resume(*, campaign_id: int) -> Campaign:
    """Active again, and every topic handed to the pipeline after commit: a batch that was
    completed while paused has no HIT left for sync to look at, so nothing else would."""
    campaign = Campaign.objects.select_for_update().get(pk=campaign_id)
    if campaign.status == Campaign.Status.ACTIVE:
        return campaign
    if campaign.status != Campaign.Status.PAUSED:
        raise Conflict(
            f"Campaign {campaign.slug!r} is {campaign.get_status_display().lower()}, not paused.",
            code="campaign_not_paused",
        )
    campaign.status = Campaign.Status.ACTIVE
    campaign.save(update_fields=["status"])
    topic_ids = list(campaign.topics.values_list("pk", flat=True))
    transaction.on_commit(lambda: _topics_advance(topic_ids))
    return campaign


def _topics_advance(topic_ids: list[int]) -> None:
    # The ranking app builds on this one; imported here so annotation imports without it.
    from ranking.tasks import advance_topic

    for topic_id in topic_ids:
        advance_topic.delay(topic_id)
