"""Channels that are alive first: a campaign chooses its channel when it is created — in the
dashboard's form, with `create_campaign --channel` and in the API — participant links by
default, MTurk offered last and labelled closed in its policy's words; the consent text is
set there and on the settings page."""

import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.models import Campaign
from crowd.marketplaces.mturk.policy import CLOSED_NOTE
from crowd.marketplaces.registry import channel_choices, channel_policy
from tests.dashboard.test_views import CREATE_FORM
from tests.factories import CampaignFactory

pytestmark = pytest.mark.django_db

MTURK_OFFERED = f"Amazon Mechanical Turk ({CLOSED_NOTE})"
FORM = {**CREATE_FORM, "name": "Bees", "slug": "bees", "budget_cap": "20.00"}


def test_a_new_campaign_recruits_on_participant_links_unless_told_otherwise():
    assert Campaign._meta.get_field("channel").default == "links"
    assert channel_choices() == [("links", "Participant links"), ("prolific", "Prolific"), ("mturk", MTURK_OFFERED)]
    assert channel_policy("mturk").status_note == "closed since 2026-09-30 — local rehearsal and existing access only"


def test_the_create_form_offers_living_channels_first_with_links_checked(owner_client):
    page = owner_client.get(reverse("dashboard:campaign-create")).content.decode()

    labels = re.findall(r'<input type="radio" name="channel" value="(\w+)"[^>]*?( checked)?>\s*([^<]+)</label>', page)
    assert [(value, checked, label.strip()) for value, checked, label in labels] == [
        ("links", " checked", "Participant links"),
        ("prolific", "", "Prolific"),
        ("mturk", "", MTURK_OFFERED),
    ]
    assert "Sandbox (MTurk only)" in page  # the environments name the channels that have them
    assert "Information and consent page" in page


@pytest.mark.parametrize("channel", ["links", "prolific", "mturk"])
def test_the_chosen_channel_and_consent_text_are_stored(owner_client, owner, channel):
    response = owner_client.post(
        reverse("dashboard:campaign-create"), {**FORM, "channel": channel, "consent_text": "We study bees."}
    )

    assert response.status_code == 302
    campaign = Campaign.objects.get(slug="bees")
    assert (campaign.channel, campaign.environment, campaign.consent_text) == (channel, "local", "We study bees.")


def test_a_form_without_a_channel_gets_the_default(owner_client):
    owner_client.post(reverse("dashboard:campaign-create"), FORM)

    assert Campaign.objects.get(slug="bees").channel == "links"


def test_an_environment_the_channel_lacks_is_refused_and_nothing_created(owner_client):
    response = owner_client.post(
        reverse("dashboard:campaign-create"), {**FORM, "channel": "prolific", "environment": "sandbox"}
    )

    assert response.status_code == 200
    assert "Prolific has no sandbox environment" in response.content.decode()
    assert not Campaign.objects.exists()


def test_the_settings_page_edits_the_consent_text_even_after_publishing(owner_client, owner):
    campaign = CampaignFactory(owner=owner, slug="loans", status=Campaign.Status.ACTIVE)
    url = reverse("dashboard:campaign-settings", args=["loans"])
    form = owner_client.get(url).context["form"]
    data = {name: form[name].value() for name in form.fields}

    response = owner_client.post(url, {**data, "consent_text": "Information for participants.\n\nContact: us."})

    assert response.status_code == 302
    campaign.refresh_from_db()
    assert campaign.consent_text == "Information for participants.\n\nContact: us."


def test_the_channel_page_labels_mturk_closed(owner_client, owner):
    CampaignFactory(owner=owner, slug="loans", channel="links")

    page = owner_client.get(reverse("crowd:campaign-channel", args=["loans"])).content.decode()

    assert f'<option value="mturk">{MTURK_OFFERED}</option>' in page
    assert f"Amazon Mechanical Turk ({CLOSED_NOTE}) pays per HIT" in page


# ---- The command and the API ---------------------------------------------------------------------------


def test_create_campaign_defaults_to_links_and_says_what_it_made(tmp_path):
    consent = tmp_path / "consent.txt"
    consent.write_text("You may stop at any time.\n", encoding="utf-8")
    out = StringIO()

    call_command("create_campaign", "bees", "--name", "Bees", "--consent-file", str(consent), stdout=out)

    campaign = Campaign.objects.get(slug="bees")
    assert (campaign.channel, campaign.consent_text) == ("links", "You may stop at any time.")
    assert out.getvalue().splitlines() == [
        "Created campaign 'bees' (Bees) on Participant links, This server; budget cap $100.00; with a consent page.",
        "Next: python manage.py import_propositions FILE --campaign bees --topics TOPICS_FILE",
    ]


def test_create_campaign_takes_another_channel_and_its_help_says_mturk_is_closed(capsys):
    call_command("create_campaign", "old", "--name", "Rehearsal", "--channel", "mturk", stdout=StringIO())
    with pytest.raises(CommandError, match=r"Cannot read the consent text from /nowhere/consent\.txt"):
        call_command("create_campaign", "other", "--name", "x", "--consent-file", "/nowhere/consent.txt")

    assert Campaign.objects.get(slug="old").channel == "mturk" and not Campaign.objects.filter(slug="other").exists()
    with pytest.raises(SystemExit):
        call_command("create_campaign", "--help")
    assert CLOSED_NOTE in " ".join(capsys.readouterr().out.split())


def test_the_api_creates_a_campaign_on_the_channel_asked_for(owner):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=owner).key}")

    default = api.post("/api/campaigns/", {"slug": "a", "name": "A"}, format="json")
    prolific = api.post(
        "/api/campaigns/", {"slug": "b", "name": "B", "channel": "prolific", "consent_text": "Hi."}, format="json"
    )
    wrong = api.post("/api/campaigns/", {"slug": "c", "name": "C", "channel": "carrier-pigeon"}, format="json")

    assert (default.status_code, default.json()["channel"]) == (201, "links")
    assert (prolific.status_code, prolific.json()["channel"], prolific.json()["consent_text"]) == (
        201,
        "prolific",
        "Hi.",
    )
    assert wrong.status_code == 400 and not Campaign.objects.filter(slug="c").exists()
