"""The one rule on changing a campaign's settings (annotation.campaigns): a draft changes
anything; once published, the settings that decide what its work asks, pays and accepts are
fixed, and every change to them is refused with one message naming them."""

from decimal import Decimal

import pytest

from annotation.campaigns import (
    CHANGEABLE_AFTER_PUBLISH,
    FIXED_AFTER_PUBLISH,
    campaign_changes_check,
    campaign_has_published,
    campaign_update,
)
from annotation.models import Campaign
from config.errors import Conflict
from tests.factories import BatchFactory, CampaignFactory, HITFactory, TaskFactory, TopicFactory

pytestmark = pytest.mark.django_db

NOT_SETTINGS = {"id", "status", "created_at"}


def published(campaign: Campaign) -> Campaign:
    """As the first publish leaves it: a HIT on offer and the campaign active."""
    HITFactory(task=TaskFactory(batch=BatchFactory(topic=TopicFactory(campaign=campaign))))
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.ACTIVE)
    campaign.refresh_from_db()
    return campaign


def test_every_setting_is_either_fixed_after_publish_or_left_open():
    """A new Campaign field fails here until someone decides whether published work depends on it."""
    fields = {field.name for field in Campaign._meta.concrete_fields} - NOT_SETTINGS
    assert set(FIXED_AFTER_PUBLISH) | set(CHANGEABLE_AFTER_PUBLISH) == fields
    assert not set(FIXED_AFTER_PUBLISH) & set(CHANGEABLE_AFTER_PUBLISH)
    assert {
        "channel",
        "environment",
        "likert_reward",
        "comparison_reward",
        "assignments_per_hit",
        "tasks_per_session",
    } <= set(FIXED_AFTER_PUBLISH)


def test_a_draft_changes_any_setting():
    campaign = CampaignFactory(slug="loans")
    campaign_update(campaign_id=campaign.pk, changes={"channel": "prolific", "likert_reward": Decimal("0.08")})
    campaign.refresh_from_db()
    assert (campaign.channel, campaign.likert_reward) == ("prolific", Decimal("0.08"))


def test_a_published_campaign_refuses_fixed_settings_naming_them_and_writes_nothing():
    campaign = published(CampaignFactory(slug="loans"))
    with pytest.raises(Conflict) as refused:
        campaign_update(
            campaign_id=campaign.pk,
            changes={"name": "Loans v2", "channel": "prolific", "likert_reward": "0.08", "assignments_per_hit": 5},
        )
    assert refused.value.code == "settings_fixed" and refused.value.http_status == 409
    assert refused.value.message.startswith(
        "Campaign 'loans' has published work: likert_reward, channel can no longer be changed."
    )
    assert refused.value.details == {"fields": ["likert_reward", "channel"]}
    stored = Campaign.objects.get(pk=campaign.pk)
    # All or nothing: the open setting in the same request is not written either.
    assert (stored.name, stored.channel, stored.likert_reward) == (campaign.name, "mturk", Decimal("0.06"))


def test_a_published_campaign_still_changes_name_description_and_budget_cap():
    campaign = published(CampaignFactory(slug="loans"))
    campaign_update(
        campaign_id=campaign.pk,
        changes={"name": "Loans v2", "description": "second run", "budget_cap": Decimal("250.00")},
    )
    campaign.refresh_from_db()
    assert (campaign.name, campaign.description, campaign.budget_cap) == ("Loans v2", "second run", Decimal("250.00"))


def test_sending_a_fixed_setting_back_unchanged_is_no_change():
    campaign = published(CampaignFactory(slug="loans"))
    campaign_changes_check(
        campaign=campaign,
        changes={"likert_reward": "0.06", "channel": "mturk", "assignments_per_hit": 5, "channel_settings": {}},
    )


@pytest.mark.parametrize("how", ["left the draft status", "has a HIT while still a draft"])
def test_published_means_active_or_a_hit_on_offer(how):
    campaign = CampaignFactory(slug="loans")
    assert not campaign_has_published(campaign)
    if how == "left the draft status":
        Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.ACTIVE)
        campaign.refresh_from_db()
    else:  # a publish that stopped after its first HIT
        HITFactory(task=TaskFactory(batch=BatchFactory(topic=TopicFactory(campaign=campaign))))
    assert campaign_has_published(campaign)
    with pytest.raises(Conflict):
        campaign_changes_check(campaign=campaign, changes={"top_k": 50})
