"""`manage.py publish --channel` changes a setting, so it goes through the one guard: a draft
switches channel, a published campaign refuses with the message every interface shows."""

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Campaign
from tests.annotation.test_campaigns import published
from tests.factories import CampaignFactory

pytestmark = pytest.mark.django_db


def test_a_published_campaign_refuses_another_channel_and_keeps_its_own():
    campaign = published(CampaignFactory(slug="loans"))

    with pytest.raises(CommandError, match=r"^Campaign 'loans' has published work: channel can no longer be changed\."):
        call_command("publish", campaign="loans", channel="prolific", dry_run=True)

    assert Campaign.objects.get(pk=campaign.pk).channel == "mturk"


def test_a_draft_takes_the_channel_given_to_the_command():
    CampaignFactory(slug="loans")

    with pytest.raises(CommandError, match="has no topics"):
        call_command("publish", campaign="loans", channel="links", dry_run=True)

    assert Campaign.objects.get(slug="loans").channel == "links"
