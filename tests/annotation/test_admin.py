"""The campaign admin over the test client, as a staff user uses it: once the campaign has
published, its fixed settings are shown read-only, and a POST that changes one anyway (a form
loaded before the publish, or a crafted request) is refused with the message every interface
shows; nothing is written."""

from decimal import Decimal

import pytest
from django import forms
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation.models import Campaign
from tests.annotation.test_campaigns import published
from tests.factories import CampaignFactory, TopicFactory

pytestmark = pytest.mark.django_db

REFUSED = "Campaign &#x27;loans&#x27; has published work: likert_reward, channel can no longer be changed."


@pytest.fixture
def staff_client(client):
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.org", "pw-for-tests-only"))
    return client


@pytest.fixture
def campaign():
    campaign = CampaignFactory(slug="loans", name="Student loans")
    TopicFactory(campaign=campaign, key="t1")
    return campaign


def change_url(campaign: Campaign) -> str:
    return reverse("admin:annotation_campaign_change", args=[campaign.pk])


def _form_data(form) -> dict:
    """What a browser posts for `form` as rendered (unticked boxes are left out)."""
    data = {}
    for name, field in form.fields.items():
        value = form[name].value()
        if isinstance(field, forms.BooleanField):
            if value:
                data[form.add_prefix(name)] = "on"
        elif value is not None:
            data[form.add_prefix(name)] = value
    return data


def page_data(response) -> dict:
    """The change form's fields with their current values, inlines included."""
    data = _form_data(response.context["adminform"].form)
    for inline in response.context["inline_admin_formsets"]:
        data |= _form_data(inline.formset.management_form)
        for form in inline.formset.forms:
            data |= _form_data(form)
    return data


def test_a_draft_changes_its_channel_and_rewards_in_the_admin(staff_client, campaign):
    data = page_data(staff_client.get(change_url(campaign)))
    response = staff_client.post(change_url(campaign), {**data, "channel": "prolific", "likert_reward": "0.08"})

    assert response.status_code == 302, response.context["adminform"].form.errors
    campaign.refresh_from_db()
    assert (campaign.channel, campaign.likert_reward) == ("prolific", Decimal("0.08"))


def test_a_published_campaign_shows_its_fixed_settings_read_only(staff_client, campaign):
    published(campaign)
    form = staff_client.get(change_url(campaign)).context["adminform"].form

    assert {"channel", "likert_reward", "comparison_reward", "assignments_per_hit"}.isdisjoint(form.fields)
    assert {"name", "description", "budget_cap"} <= set(form.fields)
    assert "status" not in form.fields  # going back to draft would unlock them


def test_a_published_campaign_refuses_a_fixed_setting_with_the_shared_message(staff_client, campaign):
    data = page_data(staff_client.get(change_url(campaign)))  # loaded while still a draft
    published(campaign)

    response = staff_client.post(
        change_url(campaign), {**data, "name": "Renamed", "channel": "prolific", "likert_reward": "0.08"}
    )

    assert response.status_code == 200 and REFUSED in response.content.decode()
    stored = Campaign.objects.get(pk=campaign.pk)
    assert (stored.name, stored.channel, stored.likert_reward) == ("Student loans", "mturk", Decimal("0.06"))


def test_a_published_campaign_still_takes_a_new_name_and_budget_cap(staff_client, campaign):
    published(campaign)
    data = page_data(staff_client.get(change_url(campaign)))

    response = staff_client.post(change_url(campaign), {**data, "name": "Renamed", "budget_cap": "250.00"})

    assert response.status_code == 302
    campaign.refresh_from_db()
    assert (campaign.name, campaign.budget_cap, campaign.channel) == ("Renamed", Decimal("250.00"), "mturk")


def test_the_admin_index_names_models_in_good_english(staff_client):
    page = staff_client.get(reverse("admin:index")).content.decode()

    assert all(
        name in page for name in ("Batches", "Ledger entries", "Bonuses", "Worker qualities", "HITs", "HIT types")
    )
    assert not any(name in page for name in ("Batchs", "Bonuss", "entrys", "Studys", "qualitys"))
