"""The dashboard's settings page (dashboard.views.campaign_settings): a draft
changes anything; a published campaign shows its fixed settings read-only and refuses a
change to one with the message every interface shows, writing nothing."""

from decimal import Decimal

import pytest
from django.urls import reverse

from annotation.models import Campaign
from tests.annotation.test_campaigns import published

pytestmark = pytest.mark.django_db

REFUSED = "Campaign &#x27;loans&#x27; has published work: assignments_per_hit, likert_reward can no longer be changed."


def settings_url(campaign: Campaign) -> str:
    return reverse("dashboard:campaign-settings", args=[campaign.slug])


def form_data(owner_client, campaign: Campaign) -> dict:
    form = owner_client.get(settings_url(campaign)).context["form"]
    return {name: form[name].value() for name in form.fields}


def test_a_draft_changes_its_rewards_on_the_settings_page(owner_client, campaign):
    data = form_data(owner_client, campaign)
    response = owner_client.post(settings_url(campaign), {**data, "likert_reward": "0.08", "assignments_per_hit": 3})

    assert response.status_code == 302 and response.url == reverse("dashboard:campaign", args=["loans"])
    campaign.refresh_from_db()
    assert (campaign.likert_reward, campaign.assignments_per_hit) == (Decimal("0.08"), 3)


def test_a_published_campaign_shows_its_fixed_settings_read_only(owner_client, campaign):
    published(campaign)
    page = owner_client.get(settings_url(campaign))

    form = page.context["form"]
    assert form.fields["likert_reward"].widget.attrs.get("readonly")
    assert not form.fields["budget_cap"].widget.attrs.get("readonly")
    assert "This campaign has published work" in page.content.decode()


def test_a_published_campaign_refuses_a_fixed_setting_with_the_shared_message(owner_client, campaign):
    published(campaign)
    data = form_data(owner_client, campaign)

    response = owner_client.post(
        settings_url(campaign), {**data, "name": "Renamed", "likert_reward": "0.08", "assignments_per_hit": 3}
    )

    assert response.status_code == 409 and REFUSED in response.content.decode()
    stored = Campaign.objects.get(pk=campaign.pk)
    assert (stored.name, stored.likert_reward, stored.assignments_per_hit) == ("Student loans", Decimal("0.06"), 5)


def test_a_published_campaign_still_takes_a_higher_budget_cap(owner_client, campaign):
    published(campaign)
    data = form_data(owner_client, campaign)

    response = owner_client.post(settings_url(campaign), {**data, "budget_cap": "250.00"})

    assert response.status_code == 302
    campaign.refresh_from_db()
    assert campaign.budget_cap == Decimal("250.00")
