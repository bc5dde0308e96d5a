"""Creating campaigns with the paper's defaults."""

from django.db import transaction
from django.utils.text import slugify

from annotation.models import Campaign
from config.errors import ApplicationError


class CampaignExists(ApplicationError):
    code = "campaign_exists"


@transaction.atomic
def campaign_create(*, slug: str, name: str, description: str = "", owner=None, **options) -> Campaign:
    """A campaign with the defaults of Falke & Gurevych (2017): 5 propositions and 5
    assignments per HIT, $0.06 Likert and $0.05 comparison HITs, top 100 with ties, 10 % of
    all pairs in batches of 100 pairs. `options` override any other field."""
    if slug != slugify(slug):
        raise ApplicationError(f"{slug!r} is not a valid slug: use lower-case letters, digits and hyphens, e.g. {slugify(slug)!r}.", code="invalid_slug")
    if Campaign.objects.filter(slug=slug).exists():
        raise CampaignExists(f"A campaign with the slug {slug!r} already exists.")
    return Campaign.objects.create(slug=slug, name=name, description=description, owner=owner, **options)


def campaigns_visible_to(user):
    """A researcher sees their own campaigns; a superuser sees all."""
    if user.is_superuser:
        return Campaign.objects.all()
    return Campaign.objects.filter(owner=user)
