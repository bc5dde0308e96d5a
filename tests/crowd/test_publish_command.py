"""`manage.py publish`: `--channel` changes a setting, so it goes through the one guard (a draft
switches channel, a published campaign refuses with the message every interface shows); its
dry run says what the budget check says, unpaid bonuses included."""

from decimal import Decimal as D
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Batch, Campaign, Topic
from crowd.models import HIT, Bonus, LedgerEntry
from tests.annotation.test_campaigns import published
from tests.factories import AssignmentFactory, CampaignFactory, PropositionFactory, TopicFactory

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


@pytest.mark.usefixtures("unreachable_endpoint")
def test_an_unpaid_bonus_makes_the_dry_run_refuse_exactly_as_publishing_does():
    campaign = CampaignFactory(slug="loans", trap_rate=0, budget_cap=D("1.00"))
    topic = TopicFactory(campaign=campaign, key="loans", state=Topic.State.IMPORTING)
    PropositionFactory.create_batch(10, topic=topic)  # one round of $0.70: it fits $1.00 alone
    # Granted elsewhere in the campaign, not paid yet: $0.60 with MTurk's fee, counted.
    Bonus.objects.create(
        assignment=AssignmentFactory(task__batch__topic__campaign=campaign), amount=D("0.50"), token="T"
    )
    out = StringIO()

    call_command("publish", campaign="loans", topic="loans", dry_run=True, stdout=out)
    with pytest.raises(CommandError) as refused:
        call_command("publish", campaign="loans", topic="loans", stdout=StringIO())

    printed = out.getvalue()
    assert "$0.60 of bonuses granted but not paid yet" in printed and "exceeds the budget by $0.30" in printed
    assert f"Publishing would be refused: {refused.value}" in printed
    assert "$0.30 short" in str(refused.value)
    assert not HIT.objects.exists() and not LedgerEntry.objects.exists()
    assert not Batch.objects.filter(topic=topic).exclude(status=Batch.Status.CREATED).exists()
